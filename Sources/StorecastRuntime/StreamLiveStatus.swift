import Foundation
import PostgresClient

/// What a packager writes about a live stream for its API status (issue 16): health, with its
/// `stream.health_changed` event in the same transaction; renditions; viewers. Calls block:
/// use them on the database thread (the packager's write-behind queue).
public enum StreamLiveStatus {
    /// Why a stream is not healthy, as the API and the event carry it.
    public struct Reason: Sendable, Codable, Equatable {
        public var code: String
        public var message: String
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// A rendition as players get it.
    public struct Rendition: Sendable, Codable, Equatable {
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
        guard !counts.isEmpty else { return }
        let keys = counts.keys.sorted()
        try db.execute(
            """
            UPDATE streams s SET viewers = v.n, viewers_at = now()
            FROM tenants t, unnest(string_to_array($1, ','), string_to_array($2, ',')::int[]) AS v(key, n)
            WHERE t.id = s.tenant_id AND t.slug || '/' || s.slug = v.key
            """, [keys.joined(separator: ","), keys.map { String(counts[$0]!) }.joined(separator: ",")])
    }
}
