import NIOCore

/// The header deadline of a connection's first request, on raw bytes: a connection whose first
/// request head (up to its blank line) has not arrived within the deadline is closed. Hummingbird's
/// HTTP/1.1 channel runs its idle timer from the start, but a channel that can upgrade to a
/// WebSocket adds it only after the first request, so a slowloris trickling its first headers
/// would otherwise be held for good. Removes itself once the head is in (later requests are
/// Hummingbird's idle timer's; an upgraded WebSocket is kept alive by pings).
final class FirstRequestDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private var timer: ConnectionDeadlineTimer
    /// The last bytes seen, for a blank line split across reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount, tally: DeadlineTally) {
        timer = ConnectionDeadlineTimer(deadline: deadline, tally: tally)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { timer.start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        timer.start(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let headEnded = Self.containsBlankLine(tail + (buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? []), keeping: &tail)
        context.fireChannelRead(data)
        if headEnded {
            timer.cancel()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
    }

    /// Whether `bytes` hold `\r\n\r\n`; `tail` keeps their last three bytes for the next read.
    static func containsBlankLine(_ bytes: [UInt8], keeping tail: inout [UInt8]) -> Bool {
        defer { tail = Array(bytes.suffix(3)) }
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4) where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return true }
        return false
    }
}
