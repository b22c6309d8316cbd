import Foundation
import PostgresClient

/// A tenant's streams as its API shows them (issue 16): pages of streams, one stream with its
/// live status and current session, and a stream's session history. Calls block: use them on
/// the database thread (`PostgresExecutor.run`). Pages are ordered by id and continue after
/// the last id of the previous page (a cursor that stays right while streams are added).
public enum StreamDirectory {

    public struct Session: Sendable, Codable, Hashable {
        public var id: Int64
        public var startedAt: String
        public var endedAt: String?
        public var endReason: String?
        public var ingestNode: String
        public var client: String?
        public var videoCodec: String?
        public var audioCodec: String?
        public var width: Int?
        public var height: Int?
        public var frameRate: Double?
        /// The source's bitrate (audio and video) over its last 5 s of media, bits per second.
        public var bitrate: Int?
    }

    public struct Stream: Sendable, Codable, Hashable {
        public var id: Int64
        public var tenant: String
        public var slug: String
        public var title: String
        /// `idle | live | reconnecting | ended`.
        public var state: String
        public var visibility: String
        public var recording: Bool
        /// The stream's own ladder profile (nil: the tenant's default, else the workers').
        public var ladderProfile: String?
        /// `low` (LL-HLS parts) or `standard` (whole segments).
        public var latencyMode: String
        /// Seconds a dropped publisher has to reconnect (nil: the ingest's default).
        public var reconnectWindowSeconds: Int?
        /// Pinned to the top of the tenant's stories feed.
        public var pinned: Bool
        public var keyPrefix: String
        /// The packager node it plays from, when placed.
        public var origin: String?
        public var createdAt: String
        /// The open session while live or reconnecting.
        public var session: Session?
        /// While live: how the stream looks to its viewers, as its packager judged it last.
        public var health: Health?
        /// While live: the renditions its players get, largest first, then audio.
        public var renditions: [StreamLiveStatus.Rendition]?
        /// While live: viewers in the last 30 s, as its packager counts them.
        public var viewers: Int?
    }

    public struct Health: Sendable, Codable, Hashable {
        /// `healthy | degraded | unhealthy`.
        public var state: String
        public var reasons: [StreamLiveStatus.Reason]
        public var changedAt: String
    }

    /// Up to `limit` streams of `tenant` after id `after`, optionally in one state.
    public static func list(_ db: PostgresConnection, tenant: String, state: String?, after: Int64, limit: Int) throws -> [Stream] {
        let rows = try db.execute(
            """
            SELECT \(streamColumns) FROM streams s JOIN tenants t ON t.id = s.tenant_id \(joins)
            WHERE t.slug = $1 AND ($2::text IS NULL OR s.status = $2) AND s.id > $3::bigint
            ORDER BY s.id LIMIT $4::int
            """, [tenant, state, String(after), String(limit)])
        return (0..<rows.count).map { stream(rows, $0) }
    }

    public static func find(_ db: PostgresConnection, tenant: String, stream slug: String) throws -> Stream? {
        let rows = try db.execute(
            "SELECT \(streamColumns) FROM streams s JOIN tenants t ON t.id = s.tenant_id \(joins) WHERE t.slug = $1 AND s.slug = $2",
            [tenant, slug])
        return rows.isEmpty ? nil : stream(rows, 0)
    }

    /// Whether `tenant` has a stream `slug`.
    public static func exists(_ db: PostgresConnection, tenant: String, stream slug: String) throws -> Bool {
        try !db.execute("SELECT 1 FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2", [tenant, slug]).isEmpty
    }

    /// The stream's sessions, newest first, before session id `before`; nil when there is no such stream.
    public static func sessions(_ db: PostgresConnection, tenant: String, stream slug: String, before: Int64, limit: Int) throws -> [Session]? {
        let exists = try db.execute("SELECT s.id FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2", [tenant, slug])
        guard let id = exists.int(0, "id") else { return nil }
        let rows = try db.execute(
            "SELECT \(sessionColumns("x")) FROM sessions x WHERE x.stream_id = $1 AND x.id < $2::bigint ORDER BY x.id DESC LIMIT $3::int",
            [String(id), String(before), String(limit)])
        return (0..<rows.count).map { session(rows, $0, prefix: "") }
    }

    /// Changes the stream's settings in one transaction; nil when there is no such stream.
    /// Throws ``UnknownLadderProfile`` when the change names a profile the tenant does not have.
    public static func update(_ db: PostgresConnection, tenant: String, stream slug: String, _ change: StreamSettingsChange) throws -> Stream? {
        try db.transaction {
            let found = try db.execute(
                "SELECT s.id, s.tenant_id FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2 FOR UPDATE OF s", [tenant, slug])
            guard let id = found.int(0, "id"), let tenantID = found.int(0, "tenant_id") else { return nil }
            var sets: [String] = [], values: [String?] = [String(id)]
            func set(_ column: String, _ value: String?, cast: String = "") {
                values.append(value)
                sets.append("\(column) = $\(values.count)\(cast)")
            }
            if let title = change.title { set("title", title) }
            if let visibility = change.visibility { set("visibility", visibility) }
            if let recording = change.recording { set("record", recording ? "true" : "false", cast: "::boolean") }
            if let mode = change.latencyMode { set("latency_mode", mode) }
            if let pinned = change.pinned { set("feed_pinned", pinned ? "true" : "false", cast: "::boolean") }
            switch change.reconnectWindowSeconds {
            case .unchanged: break
            case .cleared: set("reconnect_window_seconds", nil, cast: "::int")
            case .set(let seconds): set("reconnect_window_seconds", String(seconds), cast: "::int")
            }
            switch change.ladderProfile {
            case .unchanged: break
            case .cleared: set("ladder_profile_id", nil, cast: "::bigint")
            case .set(let name):
                let profile = try db.execute("SELECT id FROM ladder_profiles WHERE tenant_id = $1::bigint AND name = $2", [String(tenantID), name])
                guard let profileID = profile.int(0, "id") else { throw UnknownLadderProfile(name: name) }
                set("ladder_profile_id", String(profileID), cast: "::bigint")
            }
            if !sets.isEmpty {
                try db.execute("UPDATE streams SET \(sets.joined(separator: ", ")), updated_at = now() WHERE id = $1::bigint", values)
            }
            return try find(db, tenant: tenant, stream: slug)
        }
    }

    /// A stream change named a ladder profile its tenant does not have.
    public struct UnknownLadderProfile: Error, Sendable {
        public var name: String
    }

    private static let joins = """
        LEFT JOIN ladder_profiles lp ON lp.id = s.ladder_profile_id
        LEFT JOIN LATERAL (SELECT * FROM sessions x WHERE x.stream_id = s.id AND x.ended_at IS NULL ORDER BY x.id DESC LIMIT 1) x ON true
        """


    private static func sessionColumns(_ x: String, prefix: String = "") -> String {
        """
        \(x).id AS \(prefix)id, \(SQLTime.utc("\(x).started_at")) AS \(prefix)started_at, \(SQLTime.utc("\(x).ended_at")) AS \(prefix)ended_at,
        \(x).end_reason AS \(prefix)end_reason, \(x).ingest_node AS \(prefix)ingest_node, \(x).client AS \(prefix)client,
        \(x).video_codec AS \(prefix)video_codec, \(x).audio_codec AS \(prefix)audio_codec, \(x).width AS \(prefix)width,
        \(x).height AS \(prefix)height, \(x).frame_rate AS \(prefix)frame_rate, \(x).bitrate AS \(prefix)bitrate
        """
    }

    /// A live stream's viewers as SQL over its row `s` and open session `x`: its packager's
    /// last count, when written in the last minute and during this session (else 0).
    static let viewersOfSession = "CASE WHEN s.viewers_at > now() - interval '1 minute' AND s.viewers_at > x.started_at THEN s.viewers ELSE 0 END"

    private static let streamColumns = """
        s.id, t.slug AS tenant, s.slug, s.title, s.status, s.visibility, s.record, lp.name AS ladder_profile, s.latency_mode, s.reconnect_window_seconds, s.feed_pinned,
        s.key_prefix, s.origin_node, \(SQLTime.utc("s.created_at")) AS created_at,
        CASE WHEN s.health_session = x.id THEN s.health END AS health, s.health_reasons::text AS health_reasons, \(SQLTime.utc("s.health_changed_at")) AS health_changed_at,
        CASE WHEN s.renditions_session = x.id THEN s.renditions::text END AS renditions,
        CASE WHEN x.id IS NOT NULL THEN \(viewersOfSession) END AS viewers,
        \(sessionColumns("x", prefix: "session_"))
        """

    private static func session(_ rows: PostgresRows, _ i: Int, prefix: String) -> Session {
        Session(id: rows.int(i, prefix + "id") ?? 0, startedAt: rows.value(i, prefix + "started_at") ?? "", endedAt: rows.value(i, prefix + "ended_at"),
                endReason: rows.value(i, prefix + "end_reason"), ingestNode: rows.value(i, prefix + "ingest_node") ?? "",
                client: rows.value(i, prefix + "client"), videoCodec: rows.value(i, prefix + "video_codec"), audioCodec: rows.value(i, prefix + "audio_codec"),
                width: rows.int(i, prefix + "width").map(Int.init), height: rows.int(i, prefix + "height").map(Int.init),
                frameRate: rows.value(i, prefix + "frame_rate").flatMap(Double.init),
                bitrate: rows.int(i, prefix + "bitrate").map { Int($0) })
    }

    private static func stream(_ rows: PostgresRows, _ i: Int) -> Stream {
        Stream(id: rows.int(i, "id") ?? 0, tenant: rows.value(i, "tenant") ?? "", slug: rows.value(i, "slug") ?? "", title: rows.value(i, "title") ?? "",
               state: rows.value(i, "status") ?? "", visibility: rows.value(i, "visibility") ?? "", recording: rows.value(i, "record") == "t",
               ladderProfile: rows.value(i, "ladder_profile"), latencyMode: rows.value(i, "latency_mode") ?? "low",
               reconnectWindowSeconds: rows.int(i, "reconnect_window_seconds").map(Int.init), pinned: rows.value(i, "feed_pinned") == "t",
               keyPrefix: rows.value(i, "key_prefix") ?? "", origin: rows.value(i, "origin_node"), createdAt: rows.value(i, "created_at") ?? "",
               session: rows.value(i, "session_id") == nil ? nil : session(rows, i, prefix: "session_"),
               health: rows.value(i, "health").map { state in
                   Health(state: state, reasons: (try? JSONDecoder().decode([StreamLiveStatus.Reason].self, from: Data((rows.value(i, "health_reasons") ?? "[]").utf8))) ?? [],
                          changedAt: rows.value(i, "health_changed_at") ?? "")
               },
               renditions: rows.value(i, "renditions").flatMap { try? JSONDecoder().decode([StreamLiveStatus.Rendition].self, from: Data($0.utf8)) },
               viewers: rows.int(i, "viewers").map(Int.init))
    }
}
