import Foundation
import OpenAPIRuntime
import StorecastRuntime

/// Product cards on a live show (issue 18), served from the document's generated types: posted
/// by the tenant's back end, written by the stream's packager into every rendition's media
/// playlists as an EXT-X-DATERANGE at the moment the API received it. At most 5 a second per
/// stream (429) and 1 KiB each (413, the document's `x-storecast-body-limit`).
extension ControlAPIHandlers {
    func postHighlight(_ input: Operations.PostHighlight.Input) async throws -> Operations.PostHighlight.Output {
        let receivedAt = Date()
        let (tenant, stream) = (input.path.tenant, input.path.stream)
        let body: Operations.PostHighlight.Input.Body.JsonPayload
        switch input.body { case .json(let json): body = json }
        let draft = HighlightStore.Draft(productId: body.productId, title: body.title, price: body.price, currency: body.currency,
                                         imageUrl: body.imageUrl, link: body.link, durationSeconds: body.durationSeconds)
        if let (field, message) = draft.problem() { throw APIError.badRequest(message, field: field) }
        let by = Caller.principal?.name ?? "operator"
        switch try await ControlAPI.guarded({ try await catalog.database.run { try HighlightStore.create($0, tenant: tenant, stream: stream, draft, receivedAt: receivedAt, createdBy: by) } }) {
        case .created(let highlight):
            ControlAPI.logger.info("highlight posted", metadata: ["tenant": "\(tenant)", "stream": "\(stream)", "highlight": "\(highlight.id)", "start": "\(highlight.startDate)"])
            return .created(.init(body: .json(try .init(highlight))))
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
