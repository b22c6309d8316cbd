import Foundation
import Synchronization

/// A dedicated thread that owns one ``PostgresConnection`` and runs queries for async callers,
/// so libpq's blocking I/O never occupies a thread of Swift's cooperative pool.
public final class PostgresExecutor: Sendable {
    private struct Job: @unchecked Sendable {
        let run: (PostgresConnection?) -> Void
    }

    private final class JobQueue: Sendable {
        let jobs = Mutex<[Job]>([])
        let available = DispatchSemaphore(value: 0)
        let stopped = Atomic<Bool>(false)
    }

    private let queue = JobQueue()
    public let conninfo: String

    public init(conninfo: String, name: String = "postgres") {
        self.conninfo = conninfo
        let queue = self.queue
        let thread = Thread {
            var connection: PostgresConnection?
            while true {
                queue.available.wait()
                let next = queue.jobs.withLock { $0.isEmpty ? nil : $0.removeFirst() }
                guard let next else {
                    if queue.stopped.load(ordering: .acquiring) { return }
                    continue
                }
                if connection == nil || connection?.isHealthy == false {
                    connection = try? PostgresConnection(conninfo: conninfo)
                }
                next.run(connection)
            }
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body` on the database thread with the connection. Reconnects when the connection
    /// has dropped; throws `connectionFailed` when the server cannot be reached.
    public func run<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        guard !queue.stopped.load(ordering: .acquiring) else {
            throw PostgresError(code: .closed, message: "database executor stopped", sqlState: nil, query: nil)
        }
        let conninfo = self.conninfo
        return try await withCheckedThrowingContinuation { continuation in
            let job = Job { connection in
                guard let connection else {
                    continuation.resume(throwing: PostgresError(
                        code: .connectionFailed,
                        message: "cannot reach PostgreSQL (\(Self.redacted(conninfo))); check that it runs and the URL is right",
                        sqlState: nil, query: nil))
                    return
                }
                continuation.resume(with: Result { try body(connection) })
            }
            queue.jobs.withLock { $0.append(job) }
            queue.available.signal()
        }
    }

    /// Queues `body` without waiting for it: jobs run in the order they were submitted, so a
    /// thread that is not async (a ZeroMQ actor) can record a sequence of facts in order.
    /// `onError` runs on the database thread when the job fails.
    public func submit(_ body: @escaping @Sendable (PostgresConnection) throws -> Void, onError: @escaping @Sendable (any Error) -> Void) {
        guard !queue.stopped.load(ordering: .acquiring) else {
            onError(PostgresError(code: .closed, message: "database executor stopped", sqlState: nil, query: nil))
            return
        }
        let conninfo = self.conninfo
        let job = Job { connection in
            guard let connection else {
                onError(PostgresError(code: .connectionFailed, message: "cannot reach PostgreSQL (\(Self.redacted(conninfo)))", sqlState: nil, query: nil))
                return
            }
            do { try body(connection) } catch { onError(error) }
        }
        queue.jobs.withLock { $0.append(job) }
        queue.available.signal()
    }

    /// Convenience: one statement.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [String?] = []) async throws -> PostgresRows {
        try await run { try $0.execute(sql, parameters) }
    }

    /// Lets the thread finish the queued jobs and exit.
    public func shutdown() {
        queue.stopped.store(true, ordering: .releasing)
        queue.available.signal()
    }

    static func redacted(_ conninfo: String) -> String {
        conninfo.replacing(/password=\S+/, with: "password=***").replacing(/:[^:@\/]+@/, with: ":***@")
    }
}
