import Foundation
import Logging
import Metrics
import PostgresClient

/// Why a transcoder lease ended; stored in `transcoder_leases.end_reason`.
public enum LeaseEndReason: String, Sendable, CaseIterable {
    case streamEnded = "stream ended"
    case workerSilent = "worker missed heartbeats"
    case workerUnreachable = "worker unreachable"
    case workerRestarted = "worker restarted"
    case workerDraining = "worker draining"
    case ingestRestarted = "ingest restarted"
    case packagerLost = "packager lost"
}

/// A transcoder lease as operators see it.
public struct TranscoderLease: Sendable, Codable, Equatable {
    public var id: Int64
    public var streamID: Int64
    public var tenant: String
    public var stream: String
    public var workerID: String
    public var ingestNode: String
    public var grantedAt: String
    public var endedAt: String?
    public var endReason: String?
}

/// Records transcoder leases in PostgreSQL (`transcoder_leases`). Grants and ends are queued on
/// the write-behind in the order they are made, so a caller on a ZeroMQ thread never waits on
/// libpq, the table always ends in the order the dispatcher decided, and a lease decided while
/// the database is away is written when it returns.
public struct LeaseLedger: Sendable {
    public let writes: DatabaseWriteBehind
    public let ingestNode: String
    public var database: PostgresExecutor { writes.database }

    public init(writes: DatabaseWriteBehind, ingestNode: String) {
        self.writes = writes
        self.ingestNode = ingestNode
    }

    /// Ends the leases a previous run of this ingest node left open (it crashed or was killed).
    public func closeLeftovers() async throws -> Int {
        let rows = try await database.execute(
            "UPDATE transcoder_leases SET ended_at = now(), end_reason = $2 WHERE ingest_node = $1 AND ended_at IS NULL RETURNING id",
            [ingestNode, LeaseEndReason.ingestRestarted.rawValue])
        return rows.count
    }

    /// `streamID` is now leased to `workerID`; a current lease on another worker ends with `reason`.
    public func granted(streamID: Int64, workerID: String, replacing reason: LeaseEndReason) {
        let node = ingestNode
        writes.record("lease grant") { conn in
            try conn.transaction {
                try conn.execute("UPDATE transcoder_leases SET ended_at = now(), end_reason = $2 WHERE stream_id = $1 AND ended_at IS NULL",
                                 [String(streamID), reason.rawValue])
                try conn.execute("INSERT INTO transcoder_leases (stream_id, worker_id, ingest_node) VALUES ($1, $2, $3)",
                                 [String(streamID), workerID, node])
            }
        }
    }

    /// The current lease of `streamID`, if any, ends.
    public func ended(streamID: Int64, reason: LeaseEndReason) {
        writes.record("lease end") { conn in
            try conn.execute("UPDATE transcoder_leases SET ended_at = now(), end_reason = $2 WHERE stream_id = $1 AND ended_at IS NULL",
                             [String(streamID), reason.rawValue])
        }
    }

    /// Leases for operators: current ones, or the latest `limit` of every state.
    public static func list(in database: PostgresExecutor, currentOnly: Bool, limit: Int = 200) async throws -> [TranscoderLease] {
        let rows = try await database.execute(
            """
            SELECT l.id, l.stream_id, t.slug AS tenant, s.slug AS stream, l.worker_id, l.ingest_node,
                   \(SQLTime.utc("l.granted_at")) AS granted_at, \(SQLTime.utc("l.ended_at")) AS ended_at, l.end_reason
            FROM transcoder_leases l JOIN streams s ON s.id = l.stream_id JOIN tenants t ON t.id = s.tenant_id
            WHERE NOT $1::boolean OR l.ended_at IS NULL
            ORDER BY l.id DESC LIMIT $2
            """, [currentOnly ? "true" : "false", String(limit)])
        return (0..<rows.count).map { i in
            TranscoderLease(id: rows.int(i, "id") ?? 0, streamID: rows.int(i, "stream_id") ?? 0, tenant: rows.value(i, "tenant") ?? "",
                            stream: rows.value(i, "stream") ?? "", workerID: rows.value(i, "worker_id") ?? "", ingestNode: rows.value(i, "ingest_node") ?? "",
                            grantedAt: rows.value(i, "granted_at") ?? "", endedAt: rows.value(i, "ended_at"), endReason: rows.value(i, "end_reason"))
        }
    }
}
