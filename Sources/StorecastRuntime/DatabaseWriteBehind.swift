import Logging
import Metrics
import PostgresClient
import Synchronization

/// The shell of ``PendingWrites``: records facts about live streams that the stream never waits
/// for, and writes them in order from one task through the process's ``PostgresExecutor`` (whose
/// own thread runs libpq). While PostgreSQL is away (restarted, failing over) they wait and are
/// tried again; what is given up is logged and counted, never lost silently.
///
/// Metrics: `storecast_database_writes_pending`, `storecast_database_writes_retried_total{what}`
/// (written after waiting out an outage: tried again, or queued behind a write that was) and
/// `storecast_database_writes_dropped_total{what,reason}`.
public final class DatabaseWriteBehind: Sendable {
    public typealias Write = @Sendable (PostgresConnection) throws -> Void

    public var database: PostgresExecutor { writer.database }
    private let writer: Writer
    private let wake: AsyncStream<Void>.Continuation
    private let loop: Task<Void, Never>

    public init(database: PostgresExecutor, configuration: PendingWrites<Write>.Configuration = .init(), logger: Logger) {
        let writer = Writer(database: database, pending: PendingWrites(configuration: configuration), logger: logger)
        let (stream, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.writer = writer
        self.wake = wake
        self.loop = Task { await writer.run(stream) }
    }

    /// The writer task ends with its owner.
    deinit {
        wake.finish()
    }

    /// Queues `write`. With a `key`, it replaces a pending write with the same key (only the
    /// latest value matters, such as a stream's status).
    public func record(_ what: String, key: String? = nil, _ write: @escaping Write) {
        let (dropped, count) = writer.pending.withLock { p in (p.record(what, key: key, write: write, now: .now), p.count) }
        writer.report(dropped)
        writer.pendingGauge.record(count)
        wake.yield()
    }

    /// Waits until every write recorded so far is in the database, or dropped, or `timeout`
    /// passed (shutdown and tests). Returns whether nothing is left.
    @discardableResult
    public func flush(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            if writer.pending.withLock({ $0.isEmpty }) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let left = writer.pending.withLock { $0.count }
        if left > 0 {
            writer.logger.error("database writes not written before shutdown; they are lost", metadata: ["pending": "\(left)"])
            Counter(label: "storecast_database_writes_dropped_total", dimensions: [("what", "any"), ("reason", "shutdown")]).increment(by: left)
        }
        return left == 0
    }

    /// Stops the writer after what is running (call ``flush(timeout:)`` first).
    public func stop() {
        wake.finish()
        loop.cancel()
    }
}

/// The writer task's state: everything but the wake-ups, so the task does not keep its owner alive.
private final class Writer: Sendable {
    typealias Write = DatabaseWriteBehind.Write
    let database: PostgresExecutor
    let pending: Mutex<PendingWrites<Write>>
    let logger: Logger
    let pendingGauge = Gauge(label: "storecast_database_writes_pending")

    init(database: PostgresExecutor, pending: consuming PendingWrites<Write>, logger: Logger) {
        self.database = database
        self.pending = Mutex(pending)
        self.logger = logger
    }

    func run(_ wakes: AsyncStream<Void>) async {
        var wakeups = wakes.makeAsyncIterator()
        var outage: (since: ContinuousClock.Instant, written: Int)?
        while !Task.isCancelled {
            let (step, dropped) = pending.withLock { $0.next(now: .now) }
            report(dropped)
            switch step {
            case .idle:
                guard await wakeups.next() != nil else { return }
            case .waitUntil(let instant):
                try? await Task.sleep(until: instant, clock: .continuous)
            case .write(let entry):
                do {
                    try await database.run(entry.write)
                    let count = pending.withLock { p in p.succeeded(); return p.count }
                    pendingGauge.record(count)
                    if outage != nil {  // it waited out the outage: retried itself, or queued behind one that was
                        Counter(label: "storecast_database_writes_retried_total", dimensions: [("what", entry.what)]).increment()
                        outage?.written += 1
                    }
                    if let o = outage, count == 0 {
                        logger.info("PostgreSQL is back: the writes held during the outage are written", metadata: ["written": "\(o.written)", "outage": "\(o.since.duration(to: .now))"])
                        outage = nil
                    }
                } catch {
                    let retryable = (error as? PostgresError)?.code == .connectionFailed
                    let (refused, count) = pending.withLock { p in (p.failed(retryable: retryable, now: .now), p.count) }
                    if let refused {
                        report([refused], error: error)
                    } else if outage == nil {
                        outage = (.now, 0)
                        logger.warning("PostgreSQL cannot be reached: writes about live streams wait and are retried (the shows go on)", metadata: ["pending": "\(count)", "error": "\(error)"])
                    }
                }
            }
        }
    }

    func report(_ dropped: [PendingWrites<Write>.Dropped], error: (any Error)? = nil) {
        for d in dropped {
            Counter(label: "storecast_database_writes_dropped_total", dimensions: [("what", d.what), ("reason", d.reason.rawValue)]).increment()
            var metadata: Logger.Metadata = ["what": "\(d.what)", "reason": "\(d.reason.rawValue)", "failed_tries": "\(d.failures)"]
            if let error { metadata["error"] = "\(error)" }
            logger.error("a database write was given up; the table may lag until the next change", metadata: metadata)
        }
    }
}
