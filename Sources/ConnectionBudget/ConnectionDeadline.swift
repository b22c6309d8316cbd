import Logging
import Metrics
import NIOCore
import Synchronization

/// Closes at a deadline and their count, shared by a listener's connections (`reason` names the
/// deadline in the metric and the log: the first request's headers, or the TLS handshake).
final class DeadlineTally: Sendable {
    let listener: String
    let logger: Logger
    let reason: String
    let message: Logger.Message
    let closed: Counter
    private let count = Mutex(0)
    init(listener: String, logger: Logger, reason: String = "header_deadline", message: Logger.Message = "connection closed: its request headers did not arrive in time") {
        self.listener = listener
        self.logger = logger
        self.reason = reason
        self.message = message
        closed = Counter(label: "storecast_connections_refused_total", dimensions: [("listener", listener), ("reason", reason)])
    }
    func record(deadline: TimeAmount) {
        closed.increment()
        let n = count.withLock { $0 += 1; return $0 }
        if n % 1000 == 1 {  // the first and every 1000th: a flood must not flood the log
            logger.info(message, metadata: ["listener": "\(listener)", "limit": "\(reason)", "seconds": "\(deadline.nanoseconds / 1_000_000_000)", "closed_so_far": "\(n)"])
        }
    }
}

/// A connection's close-at-deadline timer (the first request's headers, the TLS handshake):
/// started when the connection is active, cancelled when what it waits for has arrived.
struct ConnectionDeadlineTimer {
    let deadline: TimeAmount
    let tally: DeadlineTally
    private var scheduled: Scheduled<Void>?

    init(deadline: TimeAmount, tally: DeadlineTally) {
        self.deadline = deadline
        self.tally = tally
    }

    mutating func start(_ context: ChannelHandlerContext) {
        guard scheduled == nil else { return }
        let (deadline, tally) = (self.deadline, self.tally)
        let channel = context.channel
        scheduled = context.eventLoop.scheduleTask(in: deadline) {
            tally.record(deadline: deadline)
            channel.close(promise: nil)
        }
    }

    mutating func cancel() {
        scheduled?.cancel()
        scheduled = nil
    }
}
