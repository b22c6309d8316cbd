import NIOCore
import NIOHTTP2

/// What ends an HTTP/2 connection besides NIO's connection manager, which only closes one that
/// has had streams and none is open for the idle timeout, or after its GOAWAY once the client has
/// acknowledged the PING that follows it:
/// - a connection that opens no stream within the idle timeout of its handshake (the manager's
///   idle timer starts with a stream's end, and the TLS handshake's deadline is gone by then);
/// - a connection still open `goAwayGrace` after the server's first GOAWAY (an idle
///   connection's, or the server's shutdown), when the client never acknowledges the PING;
/// - a client that closes its side (Hummingbird's HTTP/2 channel closed there too);
/// - a connection error (a protocol error, one of NIO's flood limits, a TLS error): NIO's handler
///   sends its GOAWAY and reports the error, and nothing else closes the connection.
/// Sits right behind NIO's HTTP/2 handler, where errors arrive before the stream multiplexer
/// makes stream errors look like any other, and where the manager's frames pass on their way out.
final class HTTP2ConnectionDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private var firstStream: ConnectionDeadlineTimer
    private var afterGoAway: ConnectionDeadlineTimer

    init(firstStream: TimeAmount, goAwayGrace: TimeAmount, firstStreamTally: DeadlineTally, goAwayTally: DeadlineTally) {
        self.firstStream = ConnectionDeadlineTimer(deadline: firstStream, tally: firstStreamTally)
        self.afterGoAway = ConnectionDeadlineTimer(deadline: goAwayGrace, tally: goAwayTally)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { firstStream.start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        firstStream.start(context)
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is NIOHTTP2StreamCreatedEvent {
            firstStream.cancel()
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !(error is NIOHTTP2Errors.StreamError) { context.close(promise: nil) }
        context.fireErrorCaught(error)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .goAway = unwrapOutboundIn(data).payload { afterGoAway.start(context) }
        context.write(data, promise: promise)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        firstStream.cancel()
        afterGoAway.cancel()
    }
}
