import Logging
import PostgresClient
import StorecastRuntime
import Synchronization

/// The live packagers as ingest knows them: refreshed from PostgreSQL (`nodes`) every couple of
/// seconds on the database thread, read without waiting by the dispatcher when it leases a
/// stream. A stream goes to its rendezvous owner among them (`RendezvousHash`), so every ingest
/// node and the API agree; with no packager registered the configured default is used.
public final class PackagerDirectory: Sendable {
    public static let refreshInterval: Duration = .seconds(2)

    private let nodes = Mutex<[NodeRegistry.Node]>([])
    private let database: PostgresExecutor?
    private let writes: DatabaseWriteBehind?
    /// Where renditions go when no packager is registered.
    public let fallbackEndpoint: String
    private let logger: Logger

    public init(writes: DatabaseWriteBehind?, fallbackEndpoint: String, logger: Logger) {
        self.database = writes?.database
        self.writes = writes
        self.fallbackEndpoint = fallbackEndpoint
        self.logger = logger
    }

    public var live: [NodeRegistry.Node] { nodes.withLock { $0 } }

    /// Where a stream's renditions go: its owner's endpoint and node id (nil node: the default).
    public func placement(tenant: String, stream: String) -> (endpoint: String, node: String?) {
        let current = live
        guard let id = RendezvousHash.owner(of: "\(tenant)/\(stream)", among: current.map(\.id)), let node = current.first(where: { $0.id == id }) else {
            return (fallbackEndpoint, nil)
        }
        return (node.endpoint, node.id)
    }

    /// Records the choice for the API (written behind, retried while the database is away).
    public func recordOrigin(streamID: Int64, node: String) {
        writes?.record("stream origin", key: "origin \(streamID)") { try NodeRegistry.setOrigin($0, streamID: streamID, node: node) }
    }

    public func refresh() async {
        guard let database else { return }
        do {
            let fresh = try await database.run { try NodeRegistry.live($0, service: "packager") }
            let before = nodes.withLock { old in defer { old = fresh }; return old }
            if before.map(\.id) != fresh.map(\.id) {
                logger.info("packagers", metadata: ["live": "\(fresh.map(\.id))"])
            }
        } catch {
            logger.warning("cannot read the live packagers; keeping the last known", metadata: ["error": "\(error)"])
        }
    }

    /// Refreshes until the task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            await refresh()
            try? await Task.sleep(for: Self.refreshInterval)
        }
    }
}
