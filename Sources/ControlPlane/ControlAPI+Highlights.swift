import Foundation
import Hummingbird
import StorecastRuntime

extension ControlAPI {
    /// Product cards on a live show (issue 18): posted by the tenant's back end, written by the
    /// stream's packager into every rendition's media playlists as an EXT-X-DATERANGE at the
    /// moment the API received it. At most 5 a second per stream (429) and 1 KiB each (413).
    static func highlightRoutes(_ book: RouteBook, catalog: StreamCatalog) {
        book.on(.post, "tenants/:tenant/streams/:stream/highlights", .tenant(.highlights)) { request, context -> Response in
            let receivedAt = Date()
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            let draft = try await decode(HighlightStore.Draft.self, request, context, limit: HighlightStore.maximumBodyBytes)
            if let (field, message) = draft.problem() { throw APIError.badRequest(message, field: field) }
            let by = context.principal?.name ?? "operator"
            switch try await guarded({ try await catalog.database.run { try HighlightStore.create($0, tenant: tenant, stream: stream, draft, receivedAt: receivedAt, createdBy: by) } }) {
            case .created(let highlight):
                logger.info("highlight posted", metadata: ["tenant": "\(tenant)", "stream": "\(stream)", "highlight": "\(highlight.id)", "start": "\(highlight.startDate)"])
                return try json(highlight, status: .created)
            case .noStream:
                throw APIError.notFound("no stream \(stream) in tenant \(tenant)")
            case .notLive(let state):
                throw APIError.conflict("stream \(stream) is \(state): a highlight goes on the live show's video, so post it while the show is live")
            case .tooMany(let wait):
                throw APIError(status: .tooManyRequests, code: "rate_limited",
                               message: "A show takes at most \(HighlightStore.perSecond) highlights a second; retry in \(wait) ms.",
                               retryAfter: max(1, (wait + 999) / 1000))
            }
        }
        book.on(.get, "tenants/:tenant/streams/:stream/highlights", .tenant(.streamsRead)) { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            var session: Int64?
            if let text = request.uri.queryParameters.get("session") {
                guard let id = Int64(text), id > 0 else { throw APIError.badRequest("session is a session id from the stream's sessions", field: "session") }
                session = id
            }
            var limit = 100
            if let text = request.uri.queryParameters.get("limit") {
                guard let n = Int(text), (1...1000).contains(n) else { throw APIError.badRequest("limit must be from 1 to 1000", field: "limit") }
                limit = n
            }
            let (one, count) = (session, limit)
            guard let highlights = try await guarded({ try await catalog.database.run { try HighlightStore.list($0, tenant: tenant, stream: stream, session: one, limit: count) } }) else {
                throw APIError.notFound("no stream \(stream) in tenant \(tenant)")
            }
            return try json(["highlights": highlights])
        }
    }
}
