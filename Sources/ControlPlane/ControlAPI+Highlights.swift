import Foundation
import Hummingbird
import OpenAPIRuntime
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
    }
}

/// A show's product cards, newest first, served from the document's generated types (posting
/// stays above: its own 1 KiB body limit is below the API's).
extension ControlAPIHandlers {
    func listHighlights(_ input: Operations.ListHighlights.Input) async throws -> Operations.ListHighlights.Output {
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        if let session = input.query.session, session < 1 { throw APIError.badRequest("session is a session id from the stream's sessions", field: "session") }
        let limit = input.query.limit ?? 100
        guard (1...1000).contains(limit) else { throw APIError.badRequest("limit must be from 1 to 1000", field: "limit") }
        let session = input.query.session.map(Int64.init)
        guard let highlights = try await ControlAPI.guarded({ try await catalog.database.run { try HighlightStore.list($0, tenant: tenant, stream: stream, session: session, limit: limit) } }) else {
            throw APIError.notFound("no stream \(stream) in tenant \(tenant)")
        }
        return .ok(.init(body: .json(.init(highlights: try highlights.map(Components.Schemas.Highlight.init)))))
    }
}

extension Components.Schemas.Highlight {
    /// A stored card as the document shows it.
    init(_ card: HighlightStore.Highlight) throws {
        self.init(id: Int(card.id), tenant: card.tenant, stream: card.stream, session: Int(card.session), productId: card.productId, title: card.title,
                  price: card.price, currency: card.currency, imageUrl: card.imageUrl, link: card.link, durationSeconds: card.durationSeconds,
                  startDate: try MillisecondDates.date(card.startDate), startSeconds: card.startSeconds)
    }
}
