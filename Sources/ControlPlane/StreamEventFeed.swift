import Foundation
import Logging
import PostgresClient
import ServiceLifecycle
import StorecastRuntime
import Synchronization

/// Live status for players and tenants' back ends (issue 16): the `stream.*` events of the
/// webhook outbox, read for the whole API process when one is recorded (NOTIFY on
/// `storecast_events`, which a `PostgresListener` waits for), every second anyway (every 250 ms
/// while the listener's connection is down), and handed to every open
/// `…/events` connection of that stream (Server-Sent Events). Each subscriber also gets a
/// heartbeat every 5 s, which keeps proxies and the idle deadline from closing a quiet stream
/// and tells the handler when its client has gone. On SIGTERM every subscription ends.
///
/// Events get their ids when they are written but are seen when their transaction commits, so
/// a later id can be seen first: each read also takes the last 10 s again, and ids already
/// handed out are skipped.
public final class StreamEventFeed: Service, Sendable {
    public enum Item: Sendable, Equatable {
        case event(id: Int64, type: String, body: String)
        case heartbeat
    }

    /// How often the outbox is read while no notification can come (the listener's connection is down).
    static let pollSeconds = 0.25
    /// Reads of the outbox are at least this far apart (a burst of events is read at once).
    static let minimumGapSeconds = 0.1
    static let heartbeatInterval: Duration = .seconds(5)
    /// Events are read again for this long after they are written (commits out of id order).
    static let lookBack = 10
    /// Most open subscriptions per process (each is a connection held open).
    static let maximumSubscribers = 10_000

    private struct Subscribers: Sendable {
        var byStream: [String: [UUID: AsyncStream<Item>.Continuation]] = [:]
        var count = 0
    }

    private let database: PostgresExecutor
    private let logger: Logger
    private let subscribers = Mutex(Subscribers())

    public init(database: PostgresExecutor, logger: Logger) {
        self.database = database
        self.logger = logger
    }

    /// The events of `tenant/stream` from now on; nil when the process holds too many already.
    func subscribe(tenant: String, stream: String) -> AsyncStream<Item>? {
        let id = UUID(), key = "\(tenant)/\(stream)"
        let (items, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingNewest(64))
        let admitted = subscribers.withLock { s -> Bool in
            guard s.count < Self.maximumSubscribers else { return false }
            s.byStream[key, default: [:]][id] = continuation
            s.count += 1
            return true
        }
        guard admitted else { return nil }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { s in
                guard s.byStream[key]?.removeValue(forKey: id) != nil else { return }
                s.count -= 1
                if s.byStream[key]?.isEmpty == true { s.byStream[key] = nil }
            }
        }
        return items
    }

    public func run() async throws {
        // Ids handed out in the look-back window, and when.
        var published: [Int64: ContinuousClock.Instant] = [:]
        var nextBeat = ContinuousClock.now + Self.heartbeatInterval
        let listener = PostgresListener(conninfo: database.conninfo, channel: WebhookOutbox.channel, name: "api-events",
                                        disconnectedFallback: Self.pollSeconds, minimumGap: Self.minimumGapSeconds,
                                        onConnectionChange: ListenerConnectionLog.callback(logger, what: "stream events", pollingWhileDown: "every 250 ms"))
        defer { listener.stop() }
        var wakeups = listener.wakeups.makeAsyncIterator()
        // Whether the listener hears the events: reads woken by the fallback that find events
        // never handed out before, with no notification between them, say that it does not.
        var watch = NotificationWatch()
        await withGracefulShutdownHandler {
            while !Task.isShuttingDownGracefully && !Task.isCancelled {
                guard let wakeup = await wakeups.next() else { break }
                let now = ContinuousClock.now
                var foundNew = false
                if subscribers.withLock({ $0.count > 0 }), let rows = try? await database.run({ db in
                    try db.execute(
                        """
                        SELECT id, type, body, body::jsonb->'data'->>'tenant' AS tenant, body::jsonb->'data'->>'stream' AS stream
                        FROM webhook_events WHERE created_at > now() - make_interval(secs => $1::int) AND type LIKE 'stream.%'
                        ORDER BY id LIMIT 5000
                        """, [String(Self.lookBack)])
                }) {
                    for i in 0..<rows.count {
                        guard let id = rows.int(i, "id"), published[id] == nil else { continue }
                        published[id] = now
                        foundNew = true
                        publish("\(rows.value(i, "tenant") ?? "")/\(rows.value(i, "stream") ?? "")",
                                .event(id: id, type: rows.value(i, "type") ?? "", body: rows.value(i, "body") ?? "{}"))
                    }
                }
                // Every wake-up is told, read or not: a notification heard while no one subscribed
                // still shows that notifications arrive.
                watch.read(after: wakeup, foundNew: foundNew)?.log(to: logger, rows: "stream events", reader: "the API's live status (…/events)",
                                                                   poll: "a second", channel: WebhookOutbox.channel)
                published = published.filter { now - $0.value < .seconds(Self.lookBack * 3) }
                if now >= nextBeat {
                    nextBeat = now + Self.heartbeatInterval
                    for c in subscribers.withLock({ $0.byStream.values.flatMap(\.values) }) { c.yield(.heartbeat) }
                }
            }
        } onGracefulShutdown: {
            listener.stop()
        }
        for c in subscribers.withLock({ $0.byStream.values.flatMap(\.values) }) { c.finish() }
        logger.info("stream event feed stopped")
    }

    private func publish(_ key: String, _ item: Item) {
        for c in subscribers.withLock({ $0.byStream[key].map { Array($0.values) } ?? [] }) { c.yield(item) }
    }
}
