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
        /// The largest rendition its shows are transcoded to (short side in pixels).
        public var maxRenditionShortSide: Int
        /// How many restream targets each of its shows may send to at once (0: no restreaming).
        public var maxRestreamTargets: Int
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

    /// What an operator's `PATCH` of a tenant changes: its name and quotas; absent fields stay.
    public struct Change: Sendable, Equatable {
        public var name: String?
        public var maxConcurrentStreams: Int?
        public var storageQuotaBytes: Int64?
        public var maxSourceShortSide: Int?
        public var maxSourceFrameRate: Double?
        public var maxRenditionShortSide: Int?
        public var maxRestreamTargets: Int?

        public init(name: String? = nil, maxConcurrentStreams: Int? = nil, storageQuotaBytes: Int64? = nil, maxSourceShortSide: Int? = nil, maxSourceFrameRate: Double? = nil,
                    maxRenditionShortSide: Int? = nil, maxRestreamTargets: Int? = nil) {
            self.maxRenditionShortSide = maxRenditionShortSide
            self.maxRestreamTargets = maxRestreamTargets
            self.name = name
            self.maxConcurrentStreams = maxConcurrentStreams
            self.storageQuotaBytes = storageQuotaBytes
            self.maxSourceShortSide = maxSourceShortSide
            self.maxSourceFrameRate = maxSourceFrameRate
        }

        /// The restream quota's range (the column's check): 0 turns restreaming off.
        public static let restreamTargets = 0...10

        /// The first field out of range, with what it must be; nil when every field is valid.
        public func problem() -> (field: String, message: String)? {
            if let name, name.isEmpty || name.count > 200 { return ("name", "name must be 1 to 200 characters") }
            if let n = maxConcurrentStreams, !(0...100_000).contains(n) { return ("maxConcurrentStreams", "maxConcurrentStreams must be from 0 to 100000") }
            if let b = storageQuotaBytes, !(0...(1 << 50)).contains(b) { return ("storageQuotaBytes", "storageQuotaBytes must be from 0 to \(1 << 50)") }
            if let side = maxSourceShortSide, !(144...4320).contains(side) { return ("maxSourceShortSide", "maxSourceShortSide must be from 144 to 4320") }
            if let fps = maxSourceFrameRate, !(1...240).contains(fps) { return ("maxSourceFrameRate", "maxSourceFrameRate must be from 1 to 240") }
            if let side = maxRenditionShortSide, !(144...2160).contains(side) || side % 2 != 0 {
                return ("maxRenditionShortSide", "maxRenditionShortSide must be an even number from 144 to 2160")
            }
            if let n = maxRestreamTargets, !Self.restreamTargets.contains(n) {
                return ("maxRestreamTargets", "maxRestreamTargets must be from \(Self.restreamTargets.lowerBound) to \(Self.restreamTargets.upperBound)")
            }
            return nil
        }
    }

    /// Changes a tenant's name and quotas; nil when there is no such tenant.
    public static func update(_ db: PostgresConnection, slug: String, _ change: Change) throws -> Row? {
        try db.execute(
            """
            UPDATE tenants SET name = coalesce($2, name), max_concurrent_streams = coalesce($3::int, max_concurrent_streams),
                storage_quota_bytes = coalesce($4::bigint, storage_quota_bytes), max_source_short_side = coalesce($5::int, max_source_short_side),
                max_source_frame_rate = coalesce($6::double precision, max_source_frame_rate),
                max_rendition_short_side = coalesce($7::int, max_rendition_short_side),
                max_restream_targets = coalesce($8::int, max_restream_targets)
            WHERE slug = $1
            """, [slug, change.name, change.maxConcurrentStreams.map(String.init), change.storageQuotaBytes.map(String.init),
                  change.maxSourceShortSide.map(String.init), change.maxSourceFrameRate.map { String($0) }, change.maxRenditionShortSide.map(String.init),
                  change.maxRestreamTargets.map(String.init)])
        return try find(db, slug: slug)
    }

    public enum Deletion: Sendable, Equatable {
        case deleted
        case notFound
        /// A stream is live or reconnecting, or a recording is being written.
        case busy(String)
    }

    /// Deletes a tenant with everything it has (streams, sessions, recordings, keys, profiles,
    /// webhooks), unless one of its shows is on; its recordings' files are queued for the
    /// packagers that wrote them (``RecordingDeletion``).
    public static func delete(_ db: PostgresConnection, slug: String) throws -> Deletion {
        try db.transaction {
            // Its streams locked first: a publish (which updates its stream's row) or a recording
            // starting (which references it) waits for this transaction, then finds nothing.
            try db.execute("SELECT s.id FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 FOR UPDATE OF s", [slug])
            let rows = try db.execute(
                """
                SELECT t.id, (SELECT count(*) FROM streams s WHERE s.tenant_id = t.id AND s.status IN ('live', 'reconnecting')) AS live,
                       (SELECT count(*) FROM recordings r JOIN streams s ON s.id = r.stream_id WHERE s.tenant_id = t.id AND r.state = 'recording') AS writing
                FROM tenants t WHERE t.slug = $1 FOR UPDATE OF t
                """, [slug])
            guard let id = rows.int(0, "id") else { return .notFound }
            if let live = rows.int(0, "live"), live > 0 { return .busy("\(live) of its streams are live") }
            if let writing = rows.int(0, "writing"), writing > 0 { return .busy("\(writing) of its recordings are being written") }
            try RecordingDeletion.queueFiles(db, ofTenant: id)
            try db.execute("DELETE FROM tenants WHERE id = $1::bigint", [String(id)])
            return .deleted
        }
    }

    private static let columns = """
        t.slug, t.name, t.max_concurrent_streams, t.storage_quota_bytes, t.max_source_short_side, t.max_source_frame_rate,
        t.max_rendition_short_side, t.max_restream_targets, \(SQLTime.utc("t.suspended_at")) AS suspended_at,
        (SELECT count(*) FROM streams s WHERE s.tenant_id = t.id AND s.status IN ('live', 'reconnecting')) AS live,
        \(SQLTime.utc("t.created_at")) AS created_at
        """

    private static func row(_ rows: PostgresRows, _ i: Int) -> Row {
        Row(slug: rows.value(i, "slug") ?? "", name: rows.value(i, "name") ?? "",
            maxConcurrentStreams: Int(rows.int(i, "max_concurrent_streams") ?? 0), storageQuotaBytes: rows.int(i, "storage_quota_bytes") ?? 0,
            maxSourceShortSide: Int(rows.int(i, "max_source_short_side") ?? 0), maxSourceFrameRate: rows.value(i, "max_source_frame_rate").flatMap(Double.init) ?? 0,
            maxRenditionShortSide: Int(rows.int(i, "max_rendition_short_side") ?? 0), maxRestreamTargets: Int(rows.int(i, "max_restream_targets") ?? 0),
            suspendedAt: rows.value(i, "suspended_at"), liveStreams: Int(rows.int(i, "live") ?? 0), createdAt: rows.value(i, "created_at") ?? "")
    }
}
