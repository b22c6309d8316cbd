import NIOCore
import NIOTLS

/// The TLS handshake's deadline: a connection whose handshake has not completed within it is
/// closed, so a peer that trickles its ClientHello (or never sends one) holds no connection for
/// long. Sits right after the TLS handler, where the handshake's completion arrives, and removes
/// itself then; from there on HTTP/1.1's idle timer and HTTP/2's idle connection timer apply.
final class TLSHandshakeDeadline: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private var timer: ConnectionDeadlineTimer

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

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if let tls = event as? TLSUserEvent, case .handshakeCompleted = tls {
            timer.cancel()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer.cancel()
    }
}
