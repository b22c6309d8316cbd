import Logging
import Metrics
import NIOCore
import Synchronization

/// The header deadline of a connection's first request, on raw bytes: a connection whose first
/// request head (up to its blank line) has not arrived within the deadline is closed. Hummingbird's
/// HTTP/1.1 channel runs its idle timer from the start, but a channel that can upgrade to a
/// WebSocket adds it only after the first request, so a slowloris trickling its first headers
/// would otherwise be held for good. Removes itself once the head is in (later requests are
/// Hummingbird's idle timer's; an upgraded WebSocket is kept alive by pings).
final class FirstRequestDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// Closes and their count, shared by a listener's connections.
    final class Tally: Sendable {
        let listener: String
        let logger: Logger
        let closed: Counter
        private let count = Mutex(0)
        init(listener: String, logger: Logger) {
            self.listener = listener
            self.logger = logger
            closed = Counter(label: "storecast_connections_refused_total", dimensions: [("listener", listener), ("reason", "header_deadline")])
        }
        func record(deadline: TimeAmount) {
            closed.increment()
            let n = count.withLock { $0 += 1; return $0 }
            if n % 1000 == 1 {  // the first and every 1000th: a flood must not flood the log
                logger.info("connection closed: its request headers did not arrive in time", metadata: ["listener": "\(listener)", "limit": "header_deadline", "seconds": "\(deadline.nanoseconds / 1_000_000_000)", "closed_so_far": "\(n)"])
            }
        }
    }

    private let deadline: TimeAmount
    private let tally: Tally
    private var timer: Scheduled<Void>?
    /// The last bytes seen, for a blank line split across reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount, tally: Tally) {
        self.deadline = deadline
        self.tally = tally
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let headEnded = Self.containsBlankLine(tail + (buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []), keeping: &tail)
        context.fireChannelRead(data)
        if headEnded {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    private func start(_ context: ChannelHandlerContext) {
        guard timer == nil else { return }
        let (deadline, tally) = (self.deadline, self.tally)
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) {
            tally.record(deadline: deadline)
            channel.close(promise: nil)
        }
    }

    /// Whether `bytes` hold `\r\n\r\n`; `tail` keeps their last three bytes for the next read.
    static func containsBlankLine(_ bytes: [UInt8], keeping tail: inout [UInt8]) -> Bool {
        defer { tail = Array(bytes.suffix(3)) }
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return true }
        return false
    }
}
