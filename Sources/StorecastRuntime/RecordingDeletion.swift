import PostgresClient

/// Deleting recordings and streams (issue 16). The rows go in one transaction, so the tenant's
/// storage is freed at once; each recording's files are queued in `recording_deletions` for the
/// packager that wrote them, which removes them (`pending`, then `done`). Calls block: use them
/// on the database thread.
public enum RecordingDeletion {
    /// A recording whose files a packager is to remove: `root/tenant/stream/recordingID`.
    public struct Pending: Sendable, Equatable {
        public var recordingID: Int64
        public var tenant: String
        public var stream: String
    }

    public enum Outcome: Sendable, Equatable {
        case deleted
        case notFound
        /// Still being written (a live session): it can be deleted once it is ready or failed.
        case stillRecording
        /// The stream is live or reconnecting.
        case live
        /// The stream has recordings, and the caller may not delete recordings.
        case hasRecordings
    }

    /// Deletes recording `id` of `tenant/stream` unless it is being written.
    public static func deleteRecording(_ db: PostgresConnection, tenant: String, stream: String, id: Int64) throws -> Outcome {
        try db.transaction {
            let rows = try db.execute(
                """
                SELECT r.state FROM recordings r JOIN streams s ON s.id = r.stream_id JOIN tenants t ON t.id = s.tenant_id
                WHERE t.slug = $1 AND s.slug = $2 AND r.id = $3::bigint FOR UPDATE OF r
                """, [tenant, stream, String(id)])
            guard let state = rows.value(0, "state") else { return .notFound }
            guard state != "recording" else { return .stillRecording }
            try queue(db, "r.id = $1::bigint", [String(id)])
            try db.execute("DELETE FROM recordings WHERE id = $1::bigint", [String(id)])
            return .deleted
        }
    }

    /// Deletes stream `tenant/stream`, its sessions and its recordings, unless it is live or
    /// reconnecting or a recording of it is being written (the publisher must stop first), or it
    /// has recordings and `withRecordings` is false (the caller may not delete recordings).
    public static func deleteStream(_ db: PostgresConnection, tenant: String, stream: String, withRecordings: Bool = true) throws -> Outcome {
        try db.transaction {
            let rows = try db.execute(
                "SELECT s.id, s.status FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2 FOR UPDATE OF s", [tenant, stream])
            guard let id = rows.int(0, "id") else { return .notFound }
            guard !["live", "reconnecting"].contains(rows.value(0, "status") ?? "") else { return .live }
            let writing = try db.execute("SELECT 1 FROM recordings WHERE stream_id = $1::bigint AND state = 'recording' LIMIT 1", [String(id)])
            guard writing.isEmpty else { return .stillRecording }
            if !withRecordings, !(try db.execute("SELECT 1 FROM recordings WHERE stream_id = $1::bigint LIMIT 1", [String(id)])).isEmpty {
                return .hasRecordings
            }
            try queue(db, "r.stream_id = $1::bigint", [String(id)])
            try db.execute("DELETE FROM streams WHERE id = $1::bigint", [String(id)])  // sessions, recordings, leases cascade
            return .deleted
        }
    }

    /// Queues the files of every recording of tenant `id` (the tenant is being deleted).
    static func queueFiles(_ db: PostgresConnection, ofTenant id: Int64) throws {
        try queue(db, "s.tenant_id = $1::bigint", [String(id)])
    }

    /// Queues the files of the recordings matching `condition` (on `recordings r`).
    private static func queue(_ db: PostgresConnection, _ condition: String, _ parameters: [String?]) throws {
        try db.execute(
            """
            INSERT INTO recording_deletions (recording_id, packager_node, tenant, stream)
            SELECT r.id, r.packager_node, t.slug, s.slug FROM recordings r JOIN streams s ON s.id = r.stream_id JOIN tenants t ON t.id = s.tenant_id
            WHERE \(condition) ON CONFLICT DO NOTHING
            """, parameters)
    }

    /// Up to `limit` recordings whose files `node` is to remove now, oldest request first (one
    /// that failed waits: it does not hold up the rest).
    public static func pending(_ db: PostgresConnection, node: String, limit: Int = 100) throws -> [Pending] {
        let rows = try db.execute(
            """
            SELECT recording_id, tenant, stream FROM recording_deletions WHERE packager_node = $1 AND next_attempt_at <= now()
            ORDER BY requested_at LIMIT $2::int
            """, [node, String(limit)])
        return (0..<rows.count).compactMap { i in
            guard let id = rows.int(i, "recording_id"), let tenant = rows.value(i, "tenant"), let stream = rows.value(i, "stream") else { return nil }
            return Pending(recordingID: id, tenant: tenant, stream: stream)
        }
    }

    /// The files of `removed` are gone; those of `failed` are tried again after 1 min, doubling
    /// up to a day.
    public static func done(_ db: PostgresConnection, removed: [Int64], failed: [Int64]) throws {
        if !removed.isEmpty {
            try db.execute("DELETE FROM recording_deletions WHERE recording_id = ANY(string_to_array($1, ',')::bigint[])", [removed.map(String.init).joined(separator: ",")])
        }
        if !failed.isEmpty {
            try db.execute(
                """
                UPDATE recording_deletions SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => least(86400, 60 * power(2, attempts)))
                WHERE recording_id = ANY(string_to_array($1, ',')::bigint[])
                """, [failed.map(String.init).joined(separator: ",")])
        }
    }
}
