import Foundation
import PostgresClient
import StorecastWire

/// A stream as ingest needs it when a publisher presents a key.
public struct StreamRecord: Sendable, Equatable {
    public var streamID: Int64
    public var tenantID: Int64
    public var tenantSlug: String
    public var streamSlug: String
    public var maxConcurrentStreams: Int
    public var liveStreamsOfTenant: Int
    /// The stream's ladder profile, else its tenant's default, else nil (the worker's settings).
    public var profile: TranscodeProfile? = nil
    /// The tenant's largest source.
    public var sourceLimits = SourceLimits.defaults
    /// The tenant's largest rendition (short side in pixels); nil: none.
    public var ladderCeiling: Int? = nil
    /// The operator suspended the tenant: its streams cannot start.
    public var tenantSuspended = false
    /// How long this stream's publisher has to reconnect after a drop (nil: the ingest's default).
    public var reconnectWindow: Duration? = nil
}

public struct CreatedStream: Sendable, Equatable {
    public var streamID: Int64
    public var tenantSlug: String
    public var streamSlug: String
    /// Shown once; only its hash is stored.
    public var streamKey: String
}

/// Stream metadata in PostgreSQL: tenants, streams, sessions. All queries run on the
/// ``PostgresExecutor`` thread.
public struct StreamCatalog: Sendable {
    public let database: PostgresExecutor

    public init(database: PostgresExecutor) {
        self.database = database
    }

    /// What creating a tenant whose slug exists does.
    public enum ExistingTenant: Sendable {
        /// Leave it as it is and return its id (the CLI and `storecast dev`, run again).
        case keep
        /// Throw `uniqueViolation` (the API answers 409): a caller must never rename or take
        /// over a tenant by creating it again.
        case refuse
    }

    public func createTenant(slug: String, name: String, maxConcurrentStreams: Int = 10, ifExists: ExistingTenant = .keep) async throws -> Int64 {
        let insert = "INSERT INTO tenants (slug, name, max_concurrent_streams) VALUES ($1, $2, $3)"
        switch ifExists {
        case .refuse:
            let rows = try await database.execute(insert + " RETURNING id", [slug, name, String(maxConcurrentStreams)])
            return rows.int(0, "id") ?? 0
        case .keep:
            let rows = try await database.execute(
                "WITH made AS (\(insert) ON CONFLICT (slug) DO NOTHING RETURNING id) SELECT id FROM made UNION ALL SELECT id FROM tenants WHERE slug = $1 LIMIT 1",
                [slug, name, String(maxConcurrentStreams)])
            return rows.int(0, "id") ?? 0
        }
    }

    /// Creates a stream with a fresh key. Throws if the tenant does not exist.
    public func createStream(tenantSlug: String, slug: String, title: String = "", key: String = StreamKey.generate(), visibility: String = "public") async throws -> CreatedStream {
        let rows = try await database.execute(
            """
            INSERT INTO streams (tenant_id, slug, title, stream_key_hash, key_prefix, visibility)
            SELECT id, $2, $3, $4, $5, $6 FROM tenants WHERE slug = $1
            RETURNING id
            """, [tenantSlug, slug, title, StreamKey.hash(key), StreamKey.prefix(key), visibility])
        guard let id = rows.int(0, "id") else {
            throw PostgresError(code: .queryFailed, message: "tenant '\(tenantSlug)' does not exist; create it first with `storecast tenant create \(tenantSlug)`", sqlState: nil, query: nil)
        }
        return CreatedStream(streamID: id, tenantSlug: tenantSlug, streamSlug: slug, streamKey: key)
    }

    /// A new stream key for the stream, shown once; the current one keeps publishing for
    /// `graceSeconds` (0: it stops at once; a publish already live goes on). Nil when there is
    /// no such stream.
    public func rotateKey(tenantSlug: String, streamSlug: String, graceSeconds: Int, key: String = StreamKey.generate()) async throws -> (key: String, previousValidUntil: String?)? {
        let rows = try await database.execute(
            """
            UPDATE streams s SET previous_key_hash = CASE WHEN $4::int > 0 THEN s.stream_key_hash END,
                                 previous_key_until = CASE WHEN $4::int > 0 THEN now() + make_interval(secs => $4::int) END,
                                 stream_key_hash = $3, key_prefix = $5, updated_at = now()
            FROM tenants t WHERE t.id = s.tenant_id AND t.slug = $1 AND s.slug = $2
            RETURNING \(SQLTime.utc("s.previous_key_until")) AS until
            """, [tenantSlug, streamSlug, StreamKey.hash(key), String(graceSeconds), StreamKey.prefix(key)])
        guard !rows.isEmpty else { return nil }
        return (key, rows.value(0, "until"))
    }

    /// Finds the stream a key belongs to, with its tenant's quota and current live count.
    public func stream(forKey key: String) async throws -> StreamRecord? {
        let rows = try await database.execute(
            """
            SELECT s.id, s.tenant_id, t.slug AS tenant_slug, s.slug, t.max_concurrent_streams, t.max_source_short_side, t.max_source_frame_rate,
                   t.suspended_at IS NOT NULL AS suspended, s.reconnect_window_seconds, t.max_rendition_short_side,
                   (SELECT count(*) FROM streams l WHERE l.tenant_id = s.tenant_id AND l.status IN ('live', 'reconnecting') AND l.id <> s.id) AS live,
                   p.name AS profile_name, p.rungs::text AS profile_rungs, p.preset AS profile_preset,
                   p.gop_seconds AS profile_gop, p.low_latency AS profile_low_latency
            FROM streams s JOIN tenants t ON t.id = s.tenant_id
            LEFT JOIN ladder_profiles p ON p.id = COALESCE(s.ladder_profile_id, t.ladder_profile_id)
            WHERE s.stream_key_hash = $1 OR (s.previous_key_hash = $1 AND s.previous_key_until > now())
            """, [StreamKey.hash(key)])
        guard !rows.isEmpty else { return nil }
        return StreamRecord(
            streamID: rows.int(0, "id") ?? 0, tenantID: rows.int(0, "tenant_id") ?? 0,
            tenantSlug: rows.value(0, "tenant_slug") ?? "", streamSlug: rows.value(0, "slug") ?? "",
            maxConcurrentStreams: Int(rows.int(0, "max_concurrent_streams") ?? 0), liveStreamsOfTenant: Int(rows.int(0, "live") ?? 0),
            profile: LadderProfileStore.profile(rows, 0),
            sourceLimits: SourceLimits(maximumShortSide: Int(rows.int(0, "max_source_short_side") ?? 1080),
                                       maximumFrameRate: rows.value(0, "max_source_frame_rate").flatMap(Double.init) ?? 60),
            // 2160, the default, is the largest rung a profile may have: no ceiling.
            ladderCeiling: rows.int(0, "max_rendition_short_side").flatMap { $0 >= 2160 ? nil : Int($0) },
            tenantSuspended: rows.value(0, "suspended") == "t",
            reconnectWindow: rows.int(0, "reconnect_window_seconds").map { .seconds($0) })
    }

    /// Sets the tenant's largest source; false when there is no such tenant.
    public func setSourceLimits(tenantSlug: String, _ limits: SourceLimits) async throws -> Bool {
        let rows = try await database.execute(
            "UPDATE tenants SET max_source_short_side = $2, max_source_frame_rate = $3 WHERE slug = $1",
            [tenantSlug, String(limits.maximumShortSide), String(limits.maximumFrameRate)])
        return rows.affected > 0
    }

    /// What `stream.connected` adds: the publisher's client (flashVer) and whether it came back
    /// within the reconnect window.
    struct Connected: Encodable { var client: String?; var resumed: Bool }

    /// Opens a session row and marks the stream live. Returns the session id.
    public func openSession(streamID: Int64, ingestNode: String, remoteAddress: String, client: String?) async throws -> Int64 {
        try await database.run { conn in
            try conn.transaction {
                // A session left open by a crashed ingest is closed before the new one starts.
                let superseded = try conn.execute(
                    "UPDATE sessions SET ended_at = now(), end_reason = 'superseded' WHERE stream_id = $1 AND ended_at IS NULL RETURNING id", [String(streamID)])
                for i in 0..<superseded.count {
                    try WebhookOutbox.streamEvent(conn, "stream.ended", streamID: streamID, sessionID: superseded.int(i, "id"), fields: ["reason": "superseded"])
                }
                let rows = try conn.execute(
                    "INSERT INTO sessions (stream_id, ingest_node, remote_addr, client) VALUES ($1, $2, $3, $4) RETURNING id",
                    [String(streamID), ingestNode, remoteAddress, client])
                try conn.execute("UPDATE streams SET status = 'live', updated_at = now() WHERE id = $1", [String(streamID)])
                let session = rows.int(0, "id") ?? 0
                try WebhookOutbox.streamEvent(conn, "stream.connected", streamID: streamID, sessionID: session,
                                              fields: Connected(client: client, resumed: false))
                return session
            }
        }
    }

    public func describeSession(_ sessionID: Int64, videoCodec: String?, audioCodec: String?, width: Int?, height: Int?) async throws {
        try await database.run { try Self.describeSession($0, sessionID, videoCodec: videoCodec, audioCodec: audioCodec, width: width, height: height) }
    }

    public func closeSession(_ sessionID: Int64, streamID: Int64, reason: String) async throws {
        try await database.run { try Self.closeSession($0, sessionID, streamID: streamID, reason: reason) }
    }

    // The statements themselves, for writes queued on a ``DatabaseWriteBehind``.

    public static func describeSession(_ conn: PostgresConnection, _ sessionID: Int64, videoCodec: String?, audioCodec: String?, width: Int?, height: Int?) throws {
        try conn.execute(
            "UPDATE sessions SET video_codec = coalesce($2, video_codec), audio_codec = coalesce($3, audio_codec), width = coalesce($4::int, width), height = coalesce($5::int, height) WHERE id = $1",
            [String(sessionID), videoCodec, audioCodec, width.map(String.init), height.map(String.init)])
    }

    public static func setBitrate(_ conn: PostgresConnection, _ sessionID: Int64, _ bitsPerSecond: Int) throws {
        try conn.execute("UPDATE sessions SET bitrate = $2 WHERE id = $1", [String(sessionID), String(max(0, min(bitsPerSecond, Int(Int32.max))))])
    }

    public static func setFrameRate(_ conn: PostgresConnection, _ sessionID: Int64, _ fps: Double) throws {
        try conn.execute("UPDATE sessions SET frame_rate = $2 WHERE id = $1", [String(sessionID), String(fps)])
    }

    /// The stream's status as session `sessionID` sees it; only while that session is open, so a
    /// write retried after an outage never overwrites what a newer session set. A change is an
    /// event for webhooks: `stream.reconnecting`, or `stream.connected` (resumed) when the
    /// publisher came back within the reconnect window.
    public static func setStatus(_ conn: PostgresConnection, streamID: Int64, session sessionID: Int64, _ status: String) throws {
        try conn.transaction {
            let changed = try conn.execute(
                "UPDATE streams SET status = $2, updated_at = now() WHERE id = $1 AND status <> $2 AND EXISTS (SELECT 1 FROM sessions WHERE id = $3 AND ended_at IS NULL)",
                [String(streamID), status, String(sessionID)]).affected > 0
            guard changed else { return }
            switch status {
            case "reconnecting": try WebhookOutbox.streamEvent(conn, "stream.reconnecting", streamID: streamID, sessionID: sessionID)
            case "live": try WebhookOutbox.streamEvent(conn, "stream.connected", streamID: streamID, sessionID: sessionID, fields: Connected(client: nil, resumed: true))
            default: break
            }
        }
    }

    /// Ends the session; the stream is `ended` unless a newer session is open (a close retried
    /// after an outage may land after the seller went live again).
    public static func closeSession(_ conn: PostgresConnection, _ sessionID: Int64, streamID: Int64, reason: String) throws {
        try conn.transaction {
            let closed = try conn.execute("UPDATE sessions SET ended_at = now(), end_reason = $2 WHERE id = $1 AND ended_at IS NULL", [String(sessionID), reason]).affected > 0
            if closed { try WebhookOutbox.streamEvent(conn, "stream.ended", streamID: streamID, sessionID: sessionID, fields: ["reason": reason]) }
            try conn.execute(
                "UPDATE streams SET status = 'ended', updated_at = now() WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM sessions WHERE stream_id = $1 AND ended_at IS NULL)",
                [String(streamID)])
        }
    }

    public struct StreamSummary: Sendable, Codable, Equatable {
        public var id: Int64
        public var tenant: String
        public var slug: String
        public var title: String
        public var status: String
        public var keyPrefix: String
    }

    public func listStreams(tenantSlug: String? = nil) async throws -> [StreamSummary] {
        let rows = try await database.execute(
            """
            SELECT s.id, t.slug AS tenant, s.slug, s.title, s.status, s.key_prefix
            FROM streams s JOIN tenants t ON t.id = s.tenant_id
            WHERE $1::text IS NULL OR t.slug = $1
            ORDER BY s.id
            """, [tenantSlug])
        return (0..<rows.count).map { i in
            StreamSummary(id: rows.int(i, "id") ?? 0, tenant: rows.value(i, "tenant") ?? "", slug: rows.value(i, "slug") ?? "",
                          title: rows.value(i, "title") ?? "", status: rows.value(i, "status") ?? "", keyPrefix: rows.value(i, "key_prefix") ?? "")
        }
    }
}
