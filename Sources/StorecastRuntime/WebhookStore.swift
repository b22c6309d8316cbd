import Foundation
import PostgresClient

/// Tenants' webhook endpoints and the delivery of their events (migration 0014), in PostgreSQL.
/// Calls block: use them on the database thread (`PostgresExecutor.run`).
public enum WebhookStore {
    public struct Endpoint: Sendable, Codable, Equatable {
        public var id: String
        public var tenant: String
        public var url: String
        public var description: String
        /// Empty: every event type.
        public var eventTypes: [String]
        public var disabledAt: String?
        public var disabledReason: String?
        /// While set, messages are signed with the previous secret too.
        public var previousSecretValidUntil: String?
        public var createdAt: String
    }

    public struct Delivery: Sendable, Codable, Equatable {
        public var id: Int64
        public var endpointId: String
        public var eventId: Int64
        /// The `webhook-id` every attempt of it carries.
        public var messageId: String
        public var type: String
        public var state: String
        public var attempts: Int
        public var nextAttemptAt: String?
        public var lastAttemptAt: String?
        public var lastStatus: Int?
        public var lastError: String?
        public var deliveredAt: String?
        public var createdAt: String
    }

    /// A delivery the dispatcher holds, with what it needs to send it.
    public struct Due: Sendable, Equatable {
        public var id: Int64
        public var endpointID: String
        /// The event's id: the order events happened in (a stream's session is opened, and its
        /// `stream.connected` committed, before any service can name that session).
        public var eventID: Int64
        public var messageID: String
        public var url: String
        public var body: String
        /// The current secret, and the previous one during its grace.
        public var secrets: [String]
        /// Attempts made before this one.
        public var attempts: Int
    }

    public static func messageID(event: Int64) -> String { "msg_\(event)" }

    public static func newEndpointID() -> String {
        var rng = SystemRandomNumberGenerator()
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return "ep_" + String((0..<16).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &rng)] })
    }

    // MARK: Endpoints

    /// Most endpoints a tenant may have (each event is sent to each).
    public static let maximumEndpointsPerTenant = 20

    public enum Creation: Sendable, Equatable {
        case created(Endpoint)
        case noSuchTenant
        case tooMany
    }

    public static func create(_ db: PostgresConnection, tenant: String, url: String, description: String, eventTypes: [String], secret: String) throws -> Creation {
        let id = newEndpointID()
        return try db.transaction {
            let tenantRow = try db.execute("SELECT id FROM tenants WHERE slug = $1 FOR UPDATE", [tenant])
            guard let tenantID = tenantRow.value(0, "id") else { return .noSuchTenant }
            let count = try db.execute("SELECT count(*) AS n FROM webhook_endpoints WHERE tenant_id = $1", [tenantID]).int(0, "n") ?? 0
            guard count < maximumEndpointsPerTenant else { return .tooMany }
            try db.execute(
                "INSERT INTO webhook_endpoints (id, tenant_id, url, description, event_types, secret) VALUES ($1, $2, $3, $4, coalesce(string_to_array(nullif($5, ''), ','), '{}'), $6)",
                [id, tenantID, url, description, eventTypes.joined(separator: ","), secret])
            guard let endpoint = try find(db, tenant: tenant, id: id) else { return .noSuchTenant }
            return .created(endpoint)
        }
    }

    public static func list(_ db: PostgresConnection, tenant: String) throws -> [Endpoint] {
        let rows = try db.execute("SELECT \(endpointColumns) FROM webhook_endpoints e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = $1 ORDER BY e.created_at, e.id", [tenant])
        return (0..<rows.count).map { endpoint(rows, $0) }
    }

    public static func find(_ db: PostgresConnection, tenant: String, id: String) throws -> Endpoint? {
        let rows = try db.execute("SELECT \(endpointColumns) FROM webhook_endpoints e JOIN tenants t ON t.id = e.tenant_id WHERE t.slug = $1 AND e.id = $2", [tenant, id])
        return rows.isEmpty ? nil : endpoint(rows, 0)
    }

    public static func delete(_ db: PostgresConnection, tenant: String, id: String) throws -> Bool {
        try db.execute("DELETE FROM webhook_endpoints e USING tenants t WHERE t.id = e.tenant_id AND t.slug = $1 AND e.id = $2", [tenant, id]).affected > 0
    }

    /// A new secret; the old one keeps signing for `graceSeconds` (both signatures are sent).
    public static func rotateSecret(_ db: PostgresConnection, tenant: String, id: String, secret: String, graceSeconds: Int) throws -> Bool {
        try db.execute(
            """
            UPDATE webhook_endpoints e SET previous_secret = e.secret, previous_secret_until = now() + make_interval(secs => $4::int), secret = $3
            FROM tenants t WHERE t.id = e.tenant_id AND t.slug = $1 AND e.id = $2
            """, [tenant, id, secret, String(graceSeconds)]).affected > 0
    }

    /// Turns a disabled endpoint back on (its failed deliveries can then be replayed).
    public static func enable(_ db: PostgresConnection, tenant: String, id: String) throws -> Bool {
        try db.execute(
            "UPDATE webhook_endpoints e SET disabled_at = NULL, disabled_reason = NULL FROM tenants t WHERE t.id = e.tenant_id AND t.slug = $1 AND e.id = $2",
            [tenant, id]).affected > 0
    }

    // MARK: Deliveries

    /// The endpoint's deliveries, newest first, before delivery id `before`; nil when there is no such endpoint.
    public static func deliveries(_ db: PostgresConnection, tenant: String, endpoint: String, before: Int64, limit: Int) throws -> [Delivery]? {
        guard try find(db, tenant: tenant, id: endpoint) != nil else { return nil }
        let rows = try db.execute(
            """
            SELECT \(deliveryColumns) FROM webhook_deliveries d JOIN webhook_events v ON v.id = d.event_id
            WHERE d.endpoint_id = $1 AND d.id < $2::bigint ORDER BY d.id DESC LIMIT $3::int
            """, [endpoint, String(before), String(limit)])
        return (0..<rows.count).map { delivery(rows, $0) }
    }

    /// Sends the delivery again from the first attempt (same `webhook-id`); nil when there is no such delivery.
    public static func replay(_ db: PostgresConnection, tenant: String, endpoint: String, delivery id: Int64) throws -> Delivery? {
        guard try find(db, tenant: tenant, id: endpoint) != nil else { return nil }
        let rows = try db.execute(
            """
            UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = now()
            WHERE id = $1 AND endpoint_id = $2 AND (locked_until IS NULL OR locked_until < now()) RETURNING id
            """, [String(id), endpoint])
        guard !rows.isEmpty else { return nil }
        let found = try db.execute("SELECT \(deliveryColumns) FROM webhook_deliveries d JOIN webhook_events v ON v.id = d.event_id WHERE d.id = $1", [String(id)])
        return found.isEmpty ? nil : delivery(found, 0)
    }

    /// Takes up to `limit` deliveries that are due, each held for `hold` seconds (another
    /// dispatcher skips them; if this one dies they are taken again after it), the second of an
    /// endpoint for twice that (it is sent after the first). Sorted by endpoint, then by event:
    /// the order an endpoint's are sent in.
    public static func claim(_ db: PostgresConnection, limit: Int, hold: Int) throws -> [Due] {
        let rows = try db.execute(
            """
            WITH due AS (
                -- Up to two due deliveries per endpoint, the earliest events first, and none of an
                -- endpoint with one in flight already: an endpoint's events go out one at a time,
                -- in the order they happened, and one slow receiver does not take every slot.
                SELECT d.id, d.next_attempt_at, d.event_id, row_number() OVER (PARTITION BY e.id ORDER BY d.event_id) AS turn FROM webhook_endpoints e
                CROSS JOIN LATERAL (
                    SELECT d.id, d.next_attempt_at, d.event_id FROM webhook_deliveries d
                    WHERE d.endpoint_id = e.id AND d.state = 'pending' AND d.next_attempt_at <= now()
                      AND (d.locked_until IS NULL OR d.locked_until < now())
                    ORDER BY d.event_id LIMIT 2 FOR UPDATE SKIP LOCKED) d
                WHERE e.disabled_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries f WHERE f.endpoint_id = e.id AND f.state = 'pending' AND f.locked_until > now())
                ORDER BY d.next_attempt_at, d.event_id LIMIT $1::int
            )
            UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $2::int * due.turn::int)
            FROM due, webhook_endpoints e, webhook_events v
            WHERE d.id = due.id AND e.id = d.endpoint_id AND v.id = d.event_id
            RETURNING d.id, d.endpoint_id, d.event_id, d.attempts, e.url, v.body, e.secret,
                      CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous_secret
            """, [String(limit), String(hold)])
        return (0..<rows.count).map { i in
            let event = rows.int(i, "event_id") ?? 0
            return Due(id: rows.int(i, "id") ?? 0, endpointID: rows.value(i, "endpoint_id") ?? "", eventID: event, messageID: messageID(event: event),
                       url: rows.value(i, "url") ?? "", body: rows.value(i, "body") ?? "",
                       secrets: [rows.value(i, "secret"), rows.value(i, "previous_secret")].compactMap { $0 }, attempts: Int(rows.int(i, "attempts") ?? 0))
        }
        .sorted { ($0.endpointID, $0.eventID) < ($1.endpointID, $1.eventID) }
    }

    /// Records an attempt's outcome and what follows it.
    public static func record(_ db: PostgresConnection, delivery: Due, decision: WebhookRetryPolicy.Decision, status: Int?, error: String?) throws {
        try db.transaction {
            let common = [String(delivery.id), status.map(String.init), error.map { String($0.prefix(500)) }]
            switch decision {
            case .delivered:
                try db.execute(
                    "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = $2, last_error = $3, last_attempt_at = now(), delivered_at = now(), locked_until = NULL WHERE id = $1",
                    common)
            case .retry(let after):
                let seconds = Double(after.components.seconds) + Double(after.components.attoseconds) / 1e18
                try db.execute(
                    "UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3, last_attempt_at = now(), next_attempt_at = now() + make_interval(secs => $4::double precision), locked_until = NULL WHERE id = $1",
                    common + [String(seconds)])
            case .failed(let reason):
                try db.execute(
                    "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = $2, last_error = $3, last_attempt_at = now(), locked_until = NULL WHERE id = $1",
                    [common[0], common[1], reason])
            case .disableEndpoint(let reason):
                try db.execute(
                    "UPDATE webhook_deliveries SET state = 'failed', attempts = attempts + 1, last_status = $2, last_error = $3, last_attempt_at = now(), locked_until = NULL WHERE id = $1",
                    [common[0], common[1], reason])
                try db.execute("UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2 WHERE id = $1 AND disabled_at IS NULL", [delivery.endpointID, reason])
            }
        }
    }

    /// How long events and their delivery log are kept.
    public static let retentionDays = 30

    /// Deletes events older than ``retentionDays`` with nothing left to send (their deliveries
    /// go with them); returns how many.
    public static func prune(_ db: PostgresConnection) throws -> Int {
        try db.execute(
            """
            DELETE FROM webhook_events e WHERE e.created_at < now() - make_interval(days => $1::int)
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')
            """, [String(retentionDays)]).affected
    }


    private static let endpointColumns = """
        e.id, t.slug AS tenant, e.url, e.description, array_to_string(e.event_types, ',') AS event_types, \(SQLTime.utc("e.disabled_at")) AS disabled_at,
        e.disabled_reason, CASE WHEN e.previous_secret_until > now() THEN \(SQLTime.utc("e.previous_secret_until")) END AS previous_until, \(SQLTime.utc("e.created_at")) AS created_at
        """

    private static let deliveryColumns = """
        d.id, d.endpoint_id, d.event_id, v.type, d.state, d.attempts, CASE WHEN d.state = 'pending' THEN \(SQLTime.utc("d.next_attempt_at")) END AS next_attempt_at,
        \(SQLTime.utc("d.last_attempt_at")) AS last_attempt_at, d.last_status, d.last_error, \(SQLTime.utc("d.delivered_at")) AS delivered_at, \(SQLTime.utc("v.created_at")) AS created_at
        """

    private static func endpoint(_ rows: PostgresRows, _ i: Int) -> Endpoint {
        Endpoint(id: rows.value(i, "id") ?? "", tenant: rows.value(i, "tenant") ?? "", url: rows.value(i, "url") ?? "", description: rows.value(i, "description") ?? "",
                 eventTypes: (rows.value(i, "event_types") ?? "").split(separator: ",").map(String.init), disabledAt: rows.value(i, "disabled_at"),
                 disabledReason: rows.value(i, "disabled_reason"), previousSecretValidUntil: rows.value(i, "previous_until"), createdAt: rows.value(i, "created_at") ?? "")
    }

    private static func delivery(_ rows: PostgresRows, _ i: Int) -> Delivery {
        let event = rows.int(i, "event_id") ?? 0
        return Delivery(id: rows.int(i, "id") ?? 0, endpointId: rows.value(i, "endpoint_id") ?? "", eventId: event, messageId: messageID(event: event),
                        type: rows.value(i, "type") ?? "", state: rows.value(i, "state") ?? "", attempts: Int(rows.int(i, "attempts") ?? 0),
                        nextAttemptAt: rows.value(i, "next_attempt_at"), lastAttemptAt: rows.value(i, "last_attempt_at"),
                        lastStatus: rows.int(i, "last_status").map(Int.init), lastError: rows.value(i, "last_error"),
                        deliveredAt: rows.value(i, "delivered_at"), createdAt: rows.value(i, "created_at") ?? "")
    }
}
