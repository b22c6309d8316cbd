import Foundation
import PostgresClient

/// What a packager writes about a live stream for its API status (issue 16): health, with its
/// `stream.health_changed` event in the same transaction; renditions; viewers. Calls block:
/// use them on the database thread (the packager's write-behind queue).
public enum StreamLiveStatus {
    /// Why a stream is not healthy, as the API and the event carry it.
    public struct Reason: Sendable, Codable, Hashable {
        public var code: String
        public var message: String
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// A rendition as players get it.
    public struct Rendition: Sendable, Codable, Hashable {
        public var name: String
        public var codec: String
        public var width: Int?
        public var height: Int?
        public var bitrate: Int?
        public init(name: String, codec: String, width: Int?, height: Int?, bitrate: Int?) {
            self.name = name
            self.codec = codec
            self.width = width
            self.height = height
            self.bitrate = bitrate
        }
    }

    struct HealthChanged: Encodable {
        var health: String
        var reasons: [Reason]
    }

    /// The stream's health changed in session `sessionID`: the row and `stream.health_changed`.
    public static func setHealth(_ db: PostgresConnection, streamID: Int64, sessionID: Int64, health: String, reasons: [Reason]) throws {
        let json = String(decoding: try JSONEncoder().encode(reasons), as: UTF8.self)
        try db.transaction {
            let updated = try db.execute(
                """
                UPDATE streams SET health = $2, health_reasons = $3::jsonb, health_changed_at = now(), health_session = $4::bigint
                WHERE id = $1::bigint RETURNING id
                """, [String(streamID), health, json, String(sessionID)])
            guard !updated.isEmpty else { return }  // deleted meanwhile
            try WebhookOutbox.streamEvent(db, "stream.health_changed", streamID: streamID, sessionID: sessionID, fields: HealthChanged(health: health, reasons: reasons))
        }
    }

    /// The renditions the stream's players get in session `sessionID`.
    public static func setRenditions(_ db: PostgresConnection, streamID: Int64, sessionID: Int64, _ renditions: [Rendition]) throws {
        let json = String(decoding: try JSONEncoder().encode(renditions), as: UTF8.self)
        try db.execute("UPDATE streams SET renditions = $2::jsonb, renditions_session = $3::bigint WHERE id = $1::bigint", [String(streamID), json, String(sessionID)])
    }

    /// Viewers of each stream (`tenant/stream`) on this packager in the last 30 s.
    public static func setViewers(_ db: PostgresConnection, _ counts: [String: Int]) throws {
        let named = counts.compactMap { key, n -> (tenant: String, stream: String, n: Int)? in
            let parts = key.split(separator: "/", omittingEmptySubsequences: false)
            return parts.count == 2 ? (String(parts[0]), String(parts[1]), n) : nil
        }.sorted { ($0.tenant, $0.stream) < ($1.tenant, $1.stream) }
        guard !named.isEmpty else { return }
        try db.execute(
            """
            UPDATE streams s SET viewers = v.n, viewers_at = now()
            FROM unnest(string_to_array($1, ','), string_to_array($2, ','), string_to_array($3, ',')::int[]) AS v(tenant, stream, n)
            JOIN tenants t ON t.slug = v.tenant
            WHERE s.tenant_id = t.id AND s.slug = v.stream
            """, [named.map(\.tenant).joined(separator: ","), named.map(\.stream).joined(separator: ","), named.map { String($0.n) }.joined(separator: ",")])
    }
}
