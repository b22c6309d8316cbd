import PostgresClient

/// Service nodes that announce themselves in PostgreSQL (the `nodes` table) with a heartbeat,
/// so other services can find them: packagers publish their ZeroMQ endpoint (for transcoders)
/// and their public URL (for players). Calls block: use them on the database thread.
public enum NodeRegistry {
    /// A node is live when its heartbeat is this recent.
    public static let liveSeconds = 10

    public struct Node: Sendable, Equatable, Codable {
        public var id: String
        public var service: String
        public var endpoint: String
        public var publicURL: String?

        public init(id: String, service: String, endpoint: String, publicURL: String?) {
            self.id = id
            self.service = service
            self.endpoint = endpoint
            self.publicURL = publicURL
        }
    }

    public static func heartbeat(_ db: PostgresConnection, _ node: Node) throws {
        _ = try db.execute(
            """
            INSERT INTO nodes (id, service, endpoint, public_url, last_seen) VALUES ($1, $2, $3, $4, now())
            ON CONFLICT (id) DO UPDATE SET service = EXCLUDED.service, endpoint = EXCLUDED.endpoint, public_url = EXCLUDED.public_url, last_seen = now()
            """, [node.id, node.service, node.endpoint, node.publicURL])
    }

    /// A node leaving on purpose (SIGTERM) takes itself out at once.
    public static func remove(_ db: PostgresConnection, id: String) throws {
        _ = try db.execute("DELETE FROM nodes WHERE id = $1", [id])
    }

    public static func live(_ db: PostgresConnection, service: String) throws -> [Node] {
        let rows = try db.execute(
            "SELECT id, service, endpoint, public_url FROM nodes WHERE service = $1 AND last_seen > now() - make_interval(secs => $2) ORDER BY id",
            [service, String(liveSeconds)])
        return (0..<rows.count).map { i in
            Node(id: rows.value(i, "id") ?? "", service: service, endpoint: rows.value(i, "endpoint") ?? "", publicURL: rows.value(i, "public_url"))
        }
    }

    /// Records which packager serves a stream's current session.
    public static func setOrigin(_ db: PostgresConnection, streamID: Int64, node: String) throws {
        _ = try db.execute("UPDATE streams SET origin_node = $2 WHERE id = $1", [String(streamID), node])
    }

    /// Where a stream plays from; `node` is nil when no packager is registered.
    public struct Origin: Sendable, Equatable {
        public var node: Node?
    }

    /// The packager a stream plays from: the one recorded for its session while that node is
    /// live, otherwise the one rendezvous hashing picks among the live packagers (where the
    /// next session will land). nil when there is no such stream.
    public static func origin(_ db: PostgresConnection, tenant: String, stream: String) throws -> Origin? {
        let rows = try db.execute(
            "SELECT s.origin_node FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2", [tenant, stream])
        guard !rows.isEmpty else { return nil }
        let packagers = try live(db, service: "packager")
        if let recorded = rows.value(0, "origin_node"), let node = packagers.first(where: { $0.id == recorded }) { return Origin(node: node) }
        let owner = RendezvousHash.owner(of: "\(tenant)/\(stream)", among: packagers.map(\.id))
        return Origin(node: packagers.first { $0.id == owner })
    }
}
