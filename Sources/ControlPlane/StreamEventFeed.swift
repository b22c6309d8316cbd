import Foundation
import Logging
import PostgresClient
import ServiceLifecycle
import StorecastRuntime
import Synchronization

/// Live status for players and tenants' back ends (issue 16): the `stream.*` events of the
/// webhook outbox, read once every 250 ms for the whole API process and handed to every open
/// `…/events` connection of that stream (Server-Sent Events). Each subscriber also gets a
/// heartbeat every 5 s, which keeps proxies and the idle deadline from closing a quiet stream
/// and tells the handler when its client has gone. On SIGTERM every subscription ends.
public final class StreamEventFeed: Service, Sendable {
    public enum Item: Sendable, Equatable {
        case event(id: Int64, type: String, body: String)
        case heartbeat
    }

    static let pollInterval: Duration = .milliseconds(250)
    static let heartbeatInterval: Duration = .seconds(5)
    /// Most open subscriptions per process (each is a connection held open).
    static let maximumSubscribers = 10_000

    private struct Subscriber: Sendable {
        let key: String
        let continuation: AsyncStream<Item>.Continuation
    }

    private let database: PostgresExecutor
    private let logger: Logger
    private let subscribers = Mutex<[UUID: Subscriber]>([:])

    public init(database: PostgresExecutor, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The events of `tenant/stream` from now on; nil when the process holds too many already.
    func subscribe(tenant: String, stream: String) -> AsyncStream<Item>? {
        let id = UUID()
        let (items, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingNewest(64))
        let admitted = subscribers.withLock { all -> Bool in
            guard all.count < Self.maximumSubscribers else { return false }
            all[id] = Subscriber(key: "\(tenant)/\(stream)", continuation: continuation)
            return true
        }
        guard admitted else { return nil }
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        return items
    }

    public func run() async throws {
        let newest: @Sendable (PostgresConnection) throws -> Int64? = { try $0.execute("SELECT coalesce(max(id), 0) AS id FROM webhook_events").int(0, "id") }
        // The newest event already recorded: subscribers get what comes after it.
        var last: Int64?
        var nextBeat = ContinuousClock.now + Self.heartbeatInterval
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try? await Task.sleep(for: Self.pollInterval)
            if last == nil || subscribers.withLock({ $0.isEmpty }) {
                // Nobody listens (or the database was away): start after what exists.
                if let id = try? await database.run(newest) { last = id }
            } else if let after = last, let rows = try? await database.run({ db in
                try db.execute(
                    """
                    SELECT id, type, body, body::jsonb->'data'->>'tenant' AS tenant, body::jsonb->'data'->>'stream' AS stream
                    FROM webhook_events WHERE id > $1::bigint AND type LIKE 'stream.%' ORDER BY id LIMIT 1000
                    """, [String(after)])
            }) {
                for i in 0..<rows.count {
                    let id = rows.int(i, "id") ?? after
                    last = max(last ?? 0, id)
                    publish("\(rows.value(i, "tenant") ?? "")/\(rows.value(i, "stream") ?? "")",
                            .event(id: id, type: rows.value(i, "type") ?? "", body: rows.value(i, "body") ?? "{}"))
                }
            }
            if ContinuousClock.now >= nextBeat {
                nextBeat = ContinuousClock.now + Self.heartbeatInterval
                for s in subscribers.withLock({ Array($0.values) }) { s.continuation.yield(.heartbeat) }
            }
        }
        for s in subscribers.withLock({ Array($0.values) }) { s.continuation.finish() }
        logger.info("stream event feed stopped")
    }

    private func publish(_ key: String, _ item: Item) {
        for s in subscribers.withLock({ $0.values.filter { $0.key == key } }) { s.continuation.yield(item) }
    }
}
