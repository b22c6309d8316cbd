import Foundation
import PostgresClient

/// Tenants as the operator manages them: list, one, suspend and resume. Calls block: use them
/// on the database thread (`PostgresExecutor.run`). Creating one is ``StreamCatalog/createTenant(slug:name:maxConcurrentStreams:ifExists:)``.
public enum TenantStore {
    public struct Row: Sendable, Codable, Equatable {
        public var slug: String
        public var name: String
        public var maxConcurrentStreams: Int
        public var storageQuotaBytes: Int64
        public var maxSourceShortSide: Int
        public var maxSourceFrameRate: Double
        /// When the operator suspended it (its keys are refused and its streams cannot start).
        public var suspendedAt: String?
        public var liveStreams: Int
        public var createdAt: String
    }

    public static func list(_ db: PostgresConnection) throws -> [Row] {
        let rows = try db.execute("SELECT \(columns) FROM tenants t ORDER BY t.slug")
        return (0..<rows.count).map { row(rows, $0) }
    }

    public static func find(_ db: PostgresConnection, slug: String) throws -> Row? {
        let rows = try db.execute("SELECT \(columns) FROM tenants t WHERE t.slug = $1", [slug])
        return rows.isEmpty ? nil : row(rows, 0)
    }

    /// Suspends or resumes; false when there is no such tenant.
    public static func setSuspended(_ db: PostgresConnection, slug: String, _ suspended: Bool) throws -> Bool {
        try db.execute(
            "UPDATE tenants SET suspended_at = CASE WHEN $2 THEN coalesce(suspended_at, now()) ELSE NULL END WHERE slug = $1",
            [slug, suspended ? "true" : "false"]).affected > 0
    }

    private static let columns = """
        t.slug, t.name, t.max_concurrent_streams, t.storage_quota_bytes, t.max_source_short_side, t.max_source_frame_rate,
        \(SQLTime.utc("t.suspended_at")) AS suspended_at,
        (SELECT count(*) FROM streams s WHERE s.tenant_id = t.id AND s.status IN ('live', 'reconnecting')) AS live,
        \(SQLTime.utc("t.created_at")) AS created_at
        """

    private static func row(_ rows: PostgresRows, _ i: Int) -> Row {
        Row(slug: rows.value(i, "slug") ?? "", name: rows.value(i, "name") ?? "",
            maxConcurrentStreams: Int(rows.int(i, "max_concurrent_streams") ?? 0), storageQuotaBytes: rows.int(i, "storage_quota_bytes") ?? 0,
            maxSourceShortSide: Int(rows.int(i, "max_source_short_side") ?? 0), maxSourceFrameRate: rows.value(i, "max_source_frame_rate").flatMap(Double.init) ?? 0,
            suspendedAt: rows.value(i, "suspended_at"), liveStreams: Int(rows.int(i, "live") ?? 0), createdAt: rows.value(i, "created_at") ?? "")
    }
}
