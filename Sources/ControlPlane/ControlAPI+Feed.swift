import Foundation
import HTTPTypes
import Hummingbird
import OpenAPIRuntime
import StorecastRuntime
import StorecastWire

extension ControlAPI {
    /// Seconds a private show's URLs in an authenticated feed stay valid.
    static let feedTokenSeconds = 3600

    /// The shoppers' stories feed (issue 18). `GET /v1/feed/T` is public (any origin, cacheable
    /// 5 s: behind a CDN every shopper shares it) and lists public live shows only: a private
    /// show's token must not be handed to anyone who asks. A tenant's back end gets its private
    /// shows too, with signed URLs, from `GET /v1/tenants/T/feed` (playback:sign), to pass on to
    /// the shoppers it has signed in.
    static func feedRoutes(_ book: RouteBook, catalog: StreamCatalog, playbackBaseURL: String) {
        @Sendable func feed(_ request: Request, tenant: String, includePrivate: Bool) async throws -> StoriesFeed.Feed {
            let order = request.uri.queryParameters.get("order")
            if let order, !StoriesFeed.orders.contains(order) { throw APIError.badRequest("order must be viewers or started", field: "order") }
            var limit = StoriesFeed.maximumEntries
            if let text = request.uri.queryParameters.get("limit") {
                guard let n = Int(text), (1...StoriesFeed.maximumEntries).contains(n) else {
                    throw APIError.badRequest("limit must be from 1 to \(StoriesFeed.maximumEntries)", field: "limit")
                }
                limit = n
            }
            let count = limit
            guard let found = try await guarded({ try await catalog.database.run { try StoriesFeed.shows($0, tenant: tenant, includePrivate: includePrivate, order: order, limit: count) } }) else {
                throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
            }
            let expiry = Int64(Date().timeIntervalSince1970) + Int64(feedTokenSeconds)
            let entries = StoriesFeed.entries(found.shows, playbackBase: playbackBaseURL) { stream, show in
                PlaybackToken.issue(tenant: tenant, stream: stream, expiry: expiry, secret: show.secret)
            }
            return StoriesFeed.Feed(tenant: tenant, order: found.order, shows: entries)
        }
        book.openStream(.get, "feed/:tenant") { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            guard Slug.isValid(tenant) else { throw APIError.notFound(AccessPolicy.notFoundMessage(tenant)) }
            var response = try json(try await feed(request, tenant: tenant, includePrivate: false))
            response.headers[.cacheControl] = "public, max-age=5"
            response.headers[.accessControlAllowOrigin] = "*"
            return response
        }
        book.on(.get, "tenants/:tenant/feed", .tenant(.playbackSign)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant")
            var response = try json(try await feed(request, tenant: tenant, includePrivate: true))
            response.headers[.cacheControl] = "private, no-store"
            return response
        }
    }
}

extension ControlAPIHandlers {
    /// How the tenant's feed orders shows after the pinned ones (served from the document's
    /// generated types; the feeds above stay hand-written: their Cache-Control would be
    /// percent-encoded, apple/swift-openapi-generator#857).
    func setFeedSettings(_ input: Operations.SetFeedSettings.Input) async throws -> Operations.SetFeedSettings.Output {
        let tenant = input.path.tenant
        let order: String
        switch input.body { case .json(let json): order = json.order.rawValue }
        guard try await ControlAPI.guarded({ try await catalog.database.run { try StoriesFeed.setOrder($0, tenant: tenant, order: order) } }) else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        }
        guard let answered = Operations.SetFeedSettings.Output.Ok.Body.JsonPayload.OrderPayload(rawValue: order) else {
            throw APIError(status: .internalServerError, code: "internal", message: "The feed's order is one the document does not name.")
        }
        return .ok(.init(body: .json(.init(tenant: tenant, order: answered))))
    }
}
