import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import NIOCore
import StorecastRuntime
import StorecastWire

extension ControlAPI {
    /// What a page learns first: the stream's state now, and whether its current session is
    /// playable yet (the packager reported its first part).
    struct StreamState: Encodable {
        var tenant: String, stream: String, state: String, playable: Bool, sessionId: Int64?
    }

    /// An event stream, opened: the state event's JSON, the events missed since the client's last
    /// id (each `(id, type, body)`), and what comes from now on.
    struct OpenedEvents {
        var state: String
        var missed: [(id: Int64, type: String, body: String)]
        var items: AsyncStream<StreamEventFeed.Item>
    }

    /// `GET /v1/tenants/T/streams/S/events` (issue 16): Server-Sent Events of the stream's
    /// `stream.*` events (`stream.connected`, `stream.live` when the first part is out,
    /// `stream.reconnecting`, `stream.health_changed`, `stream.ended`), after one `state` event
    /// with how it stands now. Access is checked when the stream opens (a stream made private
    /// later does not cut the subscribers it has).
    /// A player page waits on it instead of polling for the playlist. Public for a public stream;
    /// a private one needs `?token=` (a playback token). Open to any origin, never cached. A
    /// client that reconnects with `Last-Event-ID` (or `?lastEventId=`) gets what it missed,
    /// from the outbox. The same path upgrades to a WebSocket (``webSocketRouter(catalog:feed:)``).
    static func eventRoutes(_ book: RouteBook, catalog: StreamCatalog, feed: StreamEventFeed) {
        let access = PlaybackAccessStore(database: catalog.database)
        book.openStream(.get, "tenants/:tenant/streams/:stream/events") { request, context -> Response in
            let (tenant, stream) = try await checkEventAccess(request, context, access)
            let opened = try await openEvents(tenant: tenant, stream: stream, since: lastEventID(request), catalog: catalog, feed: feed)
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-cache, no-store"
            headers[.accessControlAllowOrigin] = "*"
            headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                var text = "retry: 2000\n\n" + message(id: nil, event: "state", data: opened.state)
                var sent: Set<Int64> = []
                for (id, type, body) in opened.missed where sent.insert(id).inserted { text += message(id: id, event: type, data: body) }
                try await writer.write(ByteBuffer(string: text))
                for await item in opened.items {
                    switch item {
                    case .event(let id, let type, let body):
                        guard sent.insert(id).inserted else { continue }  // already replayed
                        try await writer.write(ByteBuffer(string: message(id: id, event: type, data: body)))
                    case .heartbeat: try await writer.write(ByteBuffer(string: ": keep-alive\n\n"))
                    }
                }
                try await writer.finish(nil)
            })
        }
    }

    /// The WebSocket side of the events route: the same events, each a text message
    /// `{"id":…,"type":…,"data":…}` (`data` is the state, or the body webhooks get), under the
    /// same access rule. A refused upgrade falls through to the HTTP route, which answers the
    /// refusal (401, 403, 404) as JSON. The server pings every 15 s; what a client sends is
    /// read and dropped (frames over 4 KiB close the connection).
    static func webSocketRouter(catalog: StreamCatalog, feed: StreamEventFeed) -> Router<APIRequestContext> {
        let router = Router(context: APIRequestContext.self)
        let access = PlaybackAccessStore(database: catalog.database)
        router.ws("v1/tenants/:tenant/streams/:stream/events") { request, context in
            _ = try await checkEventAccess(request, context, access)
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let tenant = try context.requestContext.parameters.require("tenant"), stream = try context.requestContext.parameters.require("stream")
            let opened: OpenedEvents
            do {
                opened = try await openEvents(tenant: tenant, stream: stream, since: lastEventID(context.request), catalog: catalog, feed: feed)
            } catch {
                try await outbound.close(.unknown(1013), reason: "busy or unavailable; reconnect shortly")  // 1013: try again later
                return
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Until the client closes: nothing it sends is used.
                    for try await _ in inbound {}
                }
                group.addTask {
                    try await outbound.writeTextMessage(webSocketMessage(id: nil, type: "state", data: opened.state))
                    var sent: Set<Int64> = []
                    for (id, type, body) in opened.missed where sent.insert(id).inserted {
                        try await outbound.writeTextMessage(webSocketMessage(id: id, type: type, data: body))
                    }
                    for await item in opened.items {
                        guard case .event(let id, let type, let body) = item, sent.insert(id).inserted else { continue }  // pings keep it alive
                        try await outbound.writeTextMessage(webSocketMessage(id: id, type: type, data: body))
                    }
                    try await outbound.close(.goingAway, reason: "the API is shutting down")
                }
                try await group.next()
                group.cancelAll()
            }
        }
        return router
    }

    /// The stream named in the path, when the caller may read its events: public, or private
    /// with a valid `?token=`. Throws 404, 401 or 403 otherwise.
    static func checkEventAccess(_ request: Request, _ context: APIRequestContext, _ access: PlaybackAccessStore) async throws -> (tenant: String, stream: String) {
        let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
        guard Slug.isValid(tenant), Slug.isValid(stream),
              let rule = try await guarded({ try await access.access(tenant: tenant, stream: stream) }) else {
            throw APIError.notFound("no stream \(tenant)/\(stream)")
        }
        if rule.isPrivate, let denial = rule.denial(of: request.uri.queryParameters.get("token"), tenant: tenant, stream: stream, now: Int64(Date().timeIntervalSince1970)) {
            throw APIError(status: denial.httpStatus == 401 ? .unauthorized : .forbidden, code: "playback_denied", message: denial.description, field: "token")
        }
        return (tenant, stream)
    }

    /// The last event id the client saw: `Last-Event-ID` (EventSource sets it when it
    /// reconnects), else `?lastEventId=` (a WebSocket cannot set headers).
    static func lastEventID(_ request: Request) -> Int64? {
        if let header = request.headers[HTTPField.Name("Last-Event-ID")!] { return Int64(header) }
        return request.uri.queryParameters.get("lastEventId").flatMap { Int64(String($0)) }
    }

    /// Subscribes to the stream's events, then reads its state and what was missed since
    /// `since` (subscribed first, so nothing falls between the two).
    static func openEvents(tenant: String, stream: String, since: Int64?, catalog: StreamCatalog, feed: StreamEventFeed) async throws -> OpenedEvents {
        guard let items = feed.subscribe(tenant: tenant, stream: stream) else {
            throw APIError(status: .serviceUnavailable, code: "busy", message: "Too many event streams are open on this API; retry shortly.", retryAfter: 5)
        }
        let now = try await guarded { try await catalog.database.run { db -> (StreamState, [(id: Int64, type: String, body: String)]) in
            let rows = try db.execute(
                """
                SELECT s.status, x.id AS session,
                       EXISTS (SELECT 1 FROM webhook_events e WHERE e.dedupe_key = 'stream.live ' || x.id) AS playable
                FROM streams s JOIN tenants t ON t.id = s.tenant_id
                LEFT JOIN LATERAL (SELECT id FROM sessions WHERE stream_id = s.id AND ended_at IS NULL ORDER BY id DESC LIMIT 1) x ON true
                WHERE t.slug = $1 AND s.slug = $2
                """, [tenant, stream])
            var missed: [(id: Int64, type: String, body: String)] = []
            if let since {
                let old = try db.execute(
                    """
                    SELECT * FROM (
                        SELECT e.id, e.type, e.body FROM webhook_events e JOIN tenants t ON t.id = e.tenant_id
                        JOIN streams s ON s.tenant_id = t.id AND s.slug = $2
                        WHERE t.slug = $1 AND e.id > $3::bigint AND e.created_at > now() - interval '1 hour'
                          AND e.type LIKE 'stream.%' AND e.body::jsonb->'data'->>'streamId' = s.id::text
                        ORDER BY e.id DESC LIMIT 100) newest ORDER BY id
                    """, [tenant, stream, String(since)])
                missed = (0..<old.count).map { (old.int($0, "id") ?? 0, old.value($0, "type") ?? "", old.value($0, "body") ?? "{}") }
            }
            return (StreamState(tenant: tenant, stream: stream, state: rows.value(0, "status") ?? "idle", playable: rows.value(0, "playable") == "t",
                                sessionId: rows.int(0, "session")), missed)
        } }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return OpenedEvents(state: String(decoding: try encoder.encode(now.0), as: UTF8.self), missed: now.1, items: items)
    }

    /// One Server-Sent Event (the data is one line of JSON).
    static func message(id: Int64?, event: String, data: String) -> String {
        (id.map { "id: \($0)\n" } ?? "") + "event: \(event)\ndata: \(data.replacingOccurrences(of: "\n", with: " "))\n\n"
    }

    /// One WebSocket message: `{"id":…,"type":…,"data":…}` around a JSON document.
    static func webSocketMessage(id: Int64?, type: String, data: String) -> String {
        #"{"id":\#(id.map(String.init) ?? "null"),"type":"\#(type)","data":\#(data)}"#
    }
}
