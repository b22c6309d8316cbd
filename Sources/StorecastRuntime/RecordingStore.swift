import Foundation
import PostgresClient
import StorecastWire

/// Recording rows in PostgreSQL: which streams record, and the state of each recorded session
/// (recording, then ready or failed with the reason). Calls block: use them on the database
/// thread (`PostgresExecutor.run` / `submit`).
public enum RecordingStore {
    public struct Row: Sendable, Codable, Equatable {
        public var id: Int64
        public var tenant: String
        public var stream: String
        public var packagerNode: String
        public var path: String
        public var state: String
        public var error: String?
        public var durationSeconds: Double?
        public var bytes: Int64
        public var startedAt: String
        public var endedAt: String?
    }

    /// Opens a recording row if the stream records; returns its id and directory.
    public static func startIfEnabled(_ db: PostgresConnection, tenant: String, stream: String, node: String, root: String) throws -> (id: Int64, path: String)? {
        let rows = try db.execute(
            """
            INSERT INTO recordings (stream_id, packager_node)
            SELECT s.id, $3 FROM streams s JOIN tenants t ON t.id = s.tenant_id
            WHERE t.slug = $1 AND s.slug = $2 AND s.record
            RETURNING id
            """, [tenant, stream, node])
        guard let id = rows.int(0, "id") else { return nil }
        let path = try ContainedPath.join(root, [tenant, stream, String(id)])
        _ = try db.execute("UPDATE recordings SET path = $2 WHERE id = $1", [String(id), path])
        return (id, path)
    }

    public static func markReady(_ db: PostgresConnection, id: Int64, durationSeconds: Double, bytes: Int64) throws {
        try finish(db, id: id, state: "ready", error: nil, durationSeconds: durationSeconds, bytes: bytes)
    }

    public static func markFailed(_ db: PostgresConnection, id: Int64, error: String, bytes: Int64) throws {
        try finish(db, id: id, state: "failed", error: error, durationSeconds: nil, bytes: bytes)
    }

    /// A recording cut short by the tenant's storage quota: what was written stays playable.
    public static func markTruncated(_ db: PostgresConnection, id: Int64, error: String, durationSeconds: Double, bytes: Int64) throws {
        try finish(db, id: id, state: "truncated", error: error, durationSeconds: durationSeconds, bytes: bytes)
    }

    /// What a recording event tells a tenant's webhook.
    struct Finished: Encodable {
        var recordingId: Int64, state: String, error: String?, durationSeconds: Double?, bytes: Int64
    }

    /// Ends a recording in `state` and, in the same transaction, records its event
    /// (`recording.ready`, also when truncated, or `recording.failed`) for the tenant's webhooks.
    static func finish(_ db: PostgresConnection, id: Int64, state: String, error: String?, durationSeconds: Double?, bytes: Int64) throws {
        try db.transaction {
            let rows = try db.execute(
                """
                UPDATE recordings SET state = $2, error = $3, duration_seconds = coalesce($4::double precision, duration_seconds), bytes = $5, ended_at = now()
                WHERE id = $1 AND state = 'recording' RETURNING stream_id
                """, [String(id), state, error, durationSeconds.map { String($0) }, String(bytes)])
            guard let stream = rows.int(0, "stream_id") else { return }
            try WebhookOutbox.streamEvent(db, state == "failed" ? "recording.failed" : "recording.ready", streamID: stream, sessionID: nil,
                                          fields: Finished(recordingId: id, state: state, error: error, durationSeconds: durationSeconds, bytes: bytes))
        }
    }

    /// The bytes a recording in progress has written so far (counted against its tenant's quota
    /// by every packager).
    public static func reportProgress(_ db: PostgresConnection, id: Int64, bytes: Int64) throws {
        _ = try db.execute("UPDATE recordings SET bytes = $2 WHERE id = $1 AND state = 'recording'", [String(id), String(bytes)])
    }

    /// Each of `tenants`' storage quota and the bytes of its recordings, less the recordings
    /// `node` is writing now (that packager counts those itself; "" counts everything).
    public static func usage(_ db: PostgresConnection, tenants: [String], node: String) throws -> [String: StorageQuota] {
        let rows = try db.execute(
            """
            SELECT t.slug, t.storage_quota_bytes AS quota,
                   COALESCE((SELECT SUM(r.bytes) FROM recordings r JOIN streams s ON s.id = r.stream_id
                             WHERE s.tenant_id = t.id AND NOT (r.state = 'recording' AND r.packager_node = $2)), 0) AS recorded
            FROM tenants t WHERE t.slug = ANY(string_to_array($1, ','))
            """, [tenants.filter(Slug.isValid).joined(separator: ","), node])
        var usage: [String: StorageQuota] = [:]
        for i in 0..<rows.count {
            guard let slug = rows.value(i, "slug"), let quota = rows.int(i, "quota") else { continue }
            usage[slug] = StorageQuota(quotaBytes: quota, recordedBytes: rows.int(i, "recorded") ?? 0)
        }
        return usage
    }

    /// Returns false when there is no such tenant.
    public static func setQuota(_ db: PostgresConnection, tenant: String, bytes: Int64) throws -> Bool {
        try db.execute("UPDATE tenants SET storage_quota_bytes = $2 WHERE slug = $1", [tenant, String(bytes)]).affected > 0
    }

    /// A restarted packager cannot finish what its previous run was writing.
    public static func failLeftovers(_ db: PostgresConnection, node: String) throws -> Int {
        try db.execute(
            "UPDATE recordings SET state = 'failed', error = 'the packager restarted while recording', ended_at = now() WHERE packager_node = $1 AND state = 'recording'",
            [node]).affected
    }

    /// Returns false when there is no such stream.
    public static func setEnabled(_ db: PostgresConnection, tenant: String, stream: String, _ enabled: Bool) throws -> Bool {
        try db.execute(
            "UPDATE streams s SET record = $3, updated_at = now() FROM tenants t WHERE t.id = s.tenant_id AND t.slug = $1 AND s.slug = $2",
            [tenant, stream, enabled ? "true" : "false"]).affected > 0
    }

    public static func list(_ db: PostgresConnection, tenant: String, stream: String, limit: Int = 100) throws -> [Row] {
        let rows = try db.execute(
            """
            SELECT r.id, t.slug AS tenant, s.slug AS stream, r.packager_node, r.path, r.state, r.error, r.duration_seconds, r.bytes,
                   \(SQLTime.utc("r.started_at")) AS started_at, \(SQLTime.utc("r.ended_at")) AS ended_at
            FROM recordings r JOIN streams s ON s.id = r.stream_id JOIN tenants t ON t.id = s.tenant_id
            WHERE t.slug = $1 AND s.slug = $2 ORDER BY r.started_at DESC, r.id DESC LIMIT $3
            """, [tenant, stream, String(limit)])
        return (0..<rows.count).map { i in
            Row(id: rows.int(i, "id") ?? 0, tenant: rows.value(i, "tenant") ?? "", stream: rows.value(i, "stream") ?? "",
                packagerNode: rows.value(i, "packager_node") ?? "", path: rows.value(i, "path") ?? "", state: rows.value(i, "state") ?? "",
                error: rows.value(i, "error"), durationSeconds: rows.value(i, "duration_seconds").flatMap(Double.init),
                bytes: rows.int(i, "bytes") ?? 0, startedAt: rows.value(i, "started_at") ?? "", endedAt: rows.value(i, "ended_at"))
        }
    }
}
