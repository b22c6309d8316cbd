import Foundation
import PostgresClient

/// Tenants' API keys in PostgreSQL (`api_keys`, migration 0013). Calls block: use them on the
/// database thread (`PostgresExecutor.run`).
public enum APIKeyStore {
    /// A key as lists show it: never its secret.
    public struct Row: Sendable, Codable, Equatable {
        public var id: String
        public var tenant: String
        public var name: String
        public var scopes: [String]
        public var createdBy: String
        public var createdAt: String
        public var lastUsedAt: String?
        public var revokedAt: String?
    }

    /// Who a presented key is: its tenant and scopes, when the key exists, matches, is not
    /// revoked and its tenant is not suspended.
    public struct Holder: Sendable, Equatable {
        public var keyID: String
        public var tenant: String
        public var scopes: [String]
    }

    /// Stores a new key for `tenant`; nil when there is no such tenant.
    public static func create(_ db: PostgresConnection, tenant: String, key: APIKey, name: String, scopes: [String], createdBy: String) throws -> Row? {
        let rows = try db.execute(
            """
            INSERT INTO api_keys (id, tenant_id, name, secret_hash, scopes, created_by)
            SELECT $2, t.id, $3, $4, string_to_array($5, ','), $6 FROM tenants t WHERE t.slug = $1
            RETURNING id
            """, [tenant, key.id, name, key.secretHash, scopes.joined(separator: ","), createdBy])
        return rows.isEmpty ? nil : try find(db, tenant: tenant, id: key.id)
    }

    /// The tenant's keys, oldest first (revoked ones too, with when).
    public static func list(_ db: PostgresConnection, tenant: String) throws -> [Row] {
        let rows = try db.execute("SELECT \(columns) FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE t.slug = $1 ORDER BY k.created_at, k.id", [tenant])
        return (0..<rows.count).map { row(rows, $0) }
    }

    /// One key of the tenant, or nil.
    public static func find(_ db: PostgresConnection, tenant: String, id: String) throws -> Row? {
        let rows = try db.execute("SELECT \(columns) FROM api_keys k JOIN tenants t ON t.id = k.tenant_id WHERE t.slug = $1 AND k.id = $2", [tenant, id])
        return rows.isEmpty ? nil : row(rows, 0)
    }

    /// Revokes the tenant's key `id`; false when it has no such key (or it was revoked before).
    public static func revoke(_ db: PostgresConnection, tenant: String, id: String) throws -> Bool {
        try db.execute(
            "UPDATE api_keys k SET revoked_at = now() FROM tenants t WHERE t.id = k.tenant_id AND t.slug = $1 AND k.id = $2 AND k.revoked_at IS NULL",
            [tenant, id]).affected > 0
    }

    /// Checks a presented key: its row by id, then its secret against the stored hash in
    /// constant time. Marks it used (at most once a minute per key).
    public static func authenticate(_ db: PostgresConnection, _ key: APIKey) throws -> Holder? {
        let rows = try db.execute(
            """
            SELECT k.secret_hash, t.slug, array_to_string(k.scopes, ',') AS scopes
            FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
            WHERE k.id = $1 AND k.revoked_at IS NULL AND t.suspended_at IS NULL
            """, [key.id])
        guard let stored = rows.value(0, "secret_hash"), APIKey.matches(secret: key.secret, storedHash: stored) else { return nil }
        _ = try db.execute("UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')", [key.id])
        return Holder(keyID: key.id, tenant: rows.value(0, "slug") ?? "", scopes: (rows.value(0, "scopes") ?? "").split(separator: ",").map(String.init))
    }

    /// The stored hash of the usable key `id` (not revoked, its tenant not suspended), or nil:
    /// what ``KeyIDThrottle`` compares secrets with while the id is over its budget.
    public static func storedHash(_ db: PostgresConnection, id: String) throws -> String? {
        try db.execute(
            """
            SELECT k.secret_hash FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
            WHERE k.id = $1 AND k.revoked_at IS NULL AND t.suspended_at IS NULL
            """, [id]).value(0, "secret_hash")
    }

    private static let columns = """
        k.id, t.slug AS tenant, k.name, array_to_string(k.scopes, ',') AS scopes, k.created_by,
        \(SQLTime.utc("k.created_at")) AS created_at, \(SQLTime.utc("k.last_used_at")) AS last_used_at,
        \(SQLTime.utc("k.revoked_at")) AS revoked_at
        """

    private static func row(_ rows: PostgresRows, _ i: Int) -> Row {
        Row(id: rows.value(i, "id") ?? "", tenant: rows.value(i, "tenant") ?? "", name: rows.value(i, "name") ?? "",
            scopes: (rows.value(i, "scopes") ?? "").split(separator: ",").map(String.init), createdBy: rows.value(i, "created_by") ?? "",
            createdAt: rows.value(i, "created_at") ?? "", lastUsedAt: rows.value(i, "last_used_at"), revokedAt: rows.value(i, "revoked_at"))
    }
}
