import Foundation
import OpenAPIRuntime
import StorecastRuntime
import StorecastWire

/// The shoppers' stories feed (issue 18), served from the document's generated types.
/// `GET /v1/feed/T` is public (any origin, cacheable 5 s: behind a CDN every shopper shares it)
/// and lists public live shows only: a private show's token must not be handed to anyone who
/// asks. A tenant's back end gets its private shows too, with signed URLs, from
/// `GET /v1/tenants/T/feed` (playback:sign), to pass on to the shoppers it has signed in.
extension ControlAPIHandlers {
    /// Seconds a private show's URLs in an authenticated feed stay valid.
    static let feedTokenSeconds = 3600

    func getFeed(_ input: Operations.GetFeed.Input) async throws -> Operations.GetFeed.Output {
        let tenant = input.path.tenant
        guard Slug.isValid(tenant) else { throw APIError.notFound(AccessPolicy.notFoundMessage(tenant)) }
        let feed = try await feed(tenant, order: input.query.order?.rawValue, limit: input.query.limit, includePrivate: false)
        return .ok(.init(headers: .init(cacheControl: "public, max-age=5", accessControlAllowOrigin: "*"), body: .json(feed)))
    }

    func getSignedFeed(_ input: Operations.GetSignedFeed.Input) async throws -> Operations.GetSignedFeed.Output {
        let feed = try await feed(input.path.tenant, order: input.query.order?.rawValue, limit: input.query.limit, includePrivate: true)
        return .ok(.init(headers: .init(cacheControl: "private, no-store"), body: .json(feed)))
    }

    private func feed(_ tenant: String, order: String?, limit: Int?, includePrivate: Bool) async throws -> Components.Schemas.Feed {
        let limit = limit ?? StoriesFeed.maximumEntries
        guard (1...StoriesFeed.maximumEntries).contains(limit) else {
            throw APIError.badRequest("limit must be from 1 to \(StoriesFeed.maximumEntries)", field: "limit")
        }
        guard let found = try await ControlAPI.guarded({ try await catalog.database.run { try StoriesFeed.shows($0, tenant: tenant, includePrivate: includePrivate, order: order, limit: limit) } }) else {
            throw APIError.notFound(AccessPolicy.notFoundMessage(tenant))
        }
        let expiry = Int64(Date().timeIntervalSince1970) + Int64(Self.feedTokenSeconds)
        let entries = StoriesFeed.entries(found.shows, playbackBase: playbackBaseURL) { stream, show in
            PlaybackToken.issue(tenant: tenant, stream: stream, expiry: expiry, secret: show.secret)
        }
        guard let answered = Components.Schemas.Feed.OrderPayload(rawValue: found.order) else {
            throw APIError(status: .internalServerError, code: "internal", message: "The feed's order is one the document does not name.")
        }
        return .init(tenant: tenant, order: answered, shows: try entries.map(Components.Schemas.Feed.ShowsPayloadPayload.init))
    }

    /// How the tenant's feed orders shows after the pinned ones.
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

extension Components.Schemas.Feed.ShowsPayloadPayload {
    /// A feed entry as the document shows it.
    init(_ entry: StoriesFeed.Entry) throws {
        self.init(stream: entry.stream, title: entry.title, seller: .init(tenant: entry.seller.tenant, name: entry.seller.name), pinned: entry.pinned,
                  startedAt: try MillisecondDates.date(entry.startedAt), viewers: entry.viewers, playbackUrl: entry.playbackUrl,
                  previewUrl: entry.previewUrl, pageUrl: entry.pageUrl, placeholder: entry.placeholder,
                  highlight: try entry.highlight.map(Components.Schemas.Highlight.init))
    }
}
