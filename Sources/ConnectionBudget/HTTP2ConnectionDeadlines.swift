import NIOCore
import NIOHTTP2

/// What ends an HTTP/2 connection besides NIO's connection manager, which only closes one that
/// has had streams and none is open for the idle timeout, or after its GOAWAY once the client has
/// acknowledged the PING that follows it:
/// - a connection that opens no stream within the idle timeout of its handshake (the manager's
///   idle timer starts with a stream's end, and the TLS handshake's deadline is gone by then);
/// - a connection still open `goAwayGrace` after the manager's GOAWAY (an idle connection's, or
///   the server's shutdown), when the client never acknowledges the PING;
/// - a client that closes its side (Hummingbird's HTTP/2 channel closed there too);
/// - a connection error (a protocol error, one of NIO's flood limits): NIO's handler sends a
///   GOAWAY with the error's code, and nothing else closes the connection. Its GOAWAY is seen
///   through the handler's frame delegate (``GoAwayWatch``), as it does not pass this handler; a
///   stream's error (a malformed request) resets only that stream and is no reason to close;
/// - a client that stops reading (nginx's `send_timeout`): a connection that stays unwritable
///   (its socket's buffers full, NIO's own past its high-water mark) for `sendStall`. Nothing
///   else would end it: its streams' idle timers reset the streams, but the GOAWAY that follows
///   waits in NIO's handler for the connection to drain, and so the GOAWAY's grace never starts.
///   A client that reads, however slowly, makes the connection writable again each time it has
///   taken what NIO holds down to its low-water mark (32 KiB).
/// Sits right behind NIO's HTTP/2 handler, where the manager's frames pass on their way out. It
/// also keeps from the manager (and everything after it) the close of a stream that never opened:
/// NIO resets a stream whose first headers are malformed without announcing it, and the manager
/// asserts that every stream it hears closed was opened (a debug build stops there).
final class HTTP2ConnectionDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias InboundOut = HTTP2Frame
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// NIO's HTTP/2 handler's frame delegate: tells the deadlines of every GOAWAY it writes.
    final class GoAwayWatch: NIOHTTP2FrameDelegate {
        fileprivate weak var deadlines: HTTP2ConnectionDeadlines?

        func wroteFrame(_ frame: HTTP2Frame) {
            if case .goAway(_, let code, _) = frame.payload { deadlines?.wroteGoAway(code) }
        }
    }

    private var firstStream: ConnectionDeadlineTimer
    private var afterGoAway: ConnectionDeadlineTimer
    private var unwritable: ConnectionDeadlineTimer
    private var context: ChannelHandlerContext?
    /// Streams announced as created and not yet closed.
    private var open = Set<HTTP2StreamID>()

    init(firstStream: TimeAmount, goAwayGrace: TimeAmount, sendStall: TimeAmount, firstStreamTally: DeadlineTally, goAwayTally: DeadlineTally,
         sendStallTally: DeadlineTally, watch: GoAwayWatch) {
        self.firstStream = ConnectionDeadlineTimer(deadline: firstStream, tally: firstStreamTally)
        self.afterGoAway = ConnectionDeadlineTimer(deadline: goAwayGrace, tally: goAwayTally)
        self.unwritable = ConnectionDeadlineTimer(deadline: sendStall, tally: sendStallTally)
        watch.deadlines = self
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { firstStream.start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        firstStream.start(context)
        context.fireChannelActive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Window updates, most of the events, pass at once.
        if event is NIOHTTP2WindowUpdatedEvent {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if let created = event as? NIOHTTP2StreamCreatedEvent {
            firstStream.cancel()
            open.insert(created.streamID)
        } else if let closed = event as? StreamClosedEvent {
            guard open.remove(closed.streamID) != nil else { return }
        } else if let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { unwritable.cancel() } else { unwritable.start(context) }
        context.fireChannelWritabilityChanged()
    }

    /// A GOAWAY NIO's handler wrote: the manager's (no error) starts the grace; a connection
    /// error's closes the connection once the GOAWAY has gone out (NIO flushes it right after).
    private func wroteGoAway(_ code: HTTP2ErrorCode) {
        guard let context else { return }
        if code == .noError {
            afterGoAway.start(context)
        } else {
            context.eventLoop.assumeIsolated().execute { context.close(promise: nil) }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        firstStream.cancel()
        afterGoAway.cancel()
        unwritable.cancel()
    }
}
