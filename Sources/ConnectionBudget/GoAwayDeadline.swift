import NIOCore
import NIOHTTP2

/// An HTTP/2 connection's last deadline: closed `deadline` after the server's first GOAWAY (an
/// idle connection's, or the server's shutdown). NIO's connection manager follows its GOAWAY with
/// a PING and waits for the client's acknowledgement before its own grace timer starts, so a
/// client that never acknowledges would keep the connection open for ever. Sits between NIO's
/// HTTP/2 handler and the connection manager, where the manager's frames pass on their way out.
final class GoAwayDeadline: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var timer: ConnectionDeadlineTimer

    init(deadline: TimeAmount, tally: DeadlineTally) {
        timer = ConnectionDeadlineTimer(deadline: deadline, tally: tally)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .goAway = unwrapOutboundIn(data).payload { timer.start(context) }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
    }
}
