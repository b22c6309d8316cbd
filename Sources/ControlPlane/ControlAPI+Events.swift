import Foundation
import HTTPTypes
import Hummingbird
import StorecastRuntime
import StorecastWire

extension ControlAPI {
    /// What a page learns first: the stream's state now, and whether its current session is
    /// playable yet (the packager reported its first part).
    struct StreamState: Encodable {
        var tenant: String, stream: String, state: String, playable: Bool, sessionId: Int64?
    }

    /// `GET /v1/tenants/T/streams/S/events` (issue 16): Server-Sent Events of the stream's
    /// `stream.*` events (`stream.connected`, `stream.live` when the first part is out,
    /// `stream.reconnecting`, `stream.ended`), after one `state` event with how it stands now.
    /// A player page waits on it instead of polling for the playlist. Public for a public stream;
    /// a private one needs `?token=` (a playback token). Open to any origin, never cached. A
    /// client that reconnects with `Last-Event-ID` gets what it missed, from the outbox.
    static func eventRoutes(_ book: RouteBook, catalog: StreamCatalog, feed: StreamEventFeed) {
        let access = PlaybackAccessStore(database: catalog.database)
        book.openStream(.get, "tenants/:tenant/streams/:stream/events") { request, context -> Response in
            let tenant = try context.parameters.require("tenant"), stream = try context.parameters.require("stream")
            guard Slug.isValid(tenant), Slug.isValid(stream),
                  let rule = try await guarded({ try await access.access(tenant: tenant, stream: stream) }) else {
                throw APIError.notFound("no stream \(tenant)/\(stream)")
            }
            if rule.isPrivate, let denial = rule.denial(of: request.uri.queryParameters.get("token"), tenant: tenant, stream: stream, now: Int64(Date().timeIntervalSince1970)) {
                throw APIError(status: denial.httpStatus == 401 ? .unauthorized : .forbidden, code: "playback_denied", message: denial.description, field: "token")
            }
            let since = request.headers[HTTPField.Name("Last-Event-ID")!].flatMap(Int64.init)
            // Subscribed before the state is read, so nothing falls between the two.
            guard let items = feed.subscribe(tenant: tenant, stream: stream) else {
                throw APIError(status: .serviceUnavailable, code: "busy", message: "Too many event streams are open on this API; retry shortly.", retryAfter: 5)
            }
            let now = try await guarded { try await catalog.database.run { db -> (StreamState, [(Int64, String, String)]) in
                let rows = try db.execute(
                    """
                    SELECT s.status, x.id AS session,
                           EXISTS (SELECT 1 FROM webhook_events e WHERE e.dedupe_key = 'stream.live ' || x.id) AS playable
                    FROM streams s JOIN tenants t ON t.id = s.tenant_id
                    LEFT JOIN LATERAL (SELECT id FROM sessions WHERE stream_id = s.id AND ended_at IS NULL ORDER BY id DESC LIMIT 1) x ON true
                    WHERE t.slug = $1 AND s.slug = $2
                    """, [tenant, stream])
                var missed: [(Int64, String, String)] = []
                if let since {
                    let old = try db.execute(
                        """
                        SELECT * FROM (
                            SELECT e.id, e.type, e.body FROM webhook_events e JOIN tenants t ON t.id = e.tenant_id
                            WHERE t.slug = $1 AND e.id > $3::bigint AND e.created_at > now() - interval '1 hour'
                              AND e.type LIKE 'stream.%' AND e.body::jsonb->'data'->>'stream' = $2
                            ORDER BY e.id DESC LIMIT 100) newest ORDER BY id
                        """, [tenant, stream, String(since)])
                    missed = (0..<old.count).map { (old.int($0, "id") ?? 0, old.value($0, "type") ?? "", old.value($0, "body") ?? "{}") }
                }
                return (StreamState(tenant: tenant, stream: stream, state: rows.value(0, "status") ?? "idle", playable: rows.value(0, "playable") == "t",
                                    sessionId: rows.int(0, "session")), missed)
            } }
            var headers = HTTPFields()
            headers[.contentType] = "text/event-stream; charset=utf-8"
            headers[.cacheControl] = "no-cache, no-store"
            headers[.accessControlAllowOrigin] = "*"
            headers[HTTPField.Name("X-Accel-Buffering")!] = "no"
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let first = String(decoding: try encoder.encode(now.0), as: UTF8.self)
            return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                var text = "retry: 2000\n\n" + message(id: nil, event: "state", data: first)
                var sent: Set<Int64> = []
                for (id, type, body) in now.1 where sent.insert(id).inserted { text += message(id: id, event: type, data: body) }
                try await writer.write(ByteBuffer(string: text))
                for await item in items {
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

    /// One Server-Sent Event (the data is one line of JSON).
    static func message(id: Int64?, event: String, data: String) -> String {
        (id.map { "id: \($0)\n" } ?? "") + "event: \(event)\ndata: \(data.replacingOccurrences(of: "\n", with: " "))\n\n"
    }
}
