import NIOCore
import NIOHTTPTypes

/// The idle deadline of an HTTP/1.1 connection whose hot path answers some requests on the wire
/// (``ConnectionActivity``), in place of Hummingbird's own idle timer, which sees only the
/// requests that reach its parser and would close a connection busy with hot-path answers.
///
/// The same rule as Hummingbird's: the connection closes once `deadline` has passed since a
/// request or an answer last moved, unless a request is being answered (an LL-HLS blocking
/// reload is never cut). A request's parts restart it only once decoded, so a client trickling
/// header bytes is closed too. It sits right behind Hummingbird's connection-state handler, so it
/// sees every request that reaches the server and every answer the server writes.
final class HTTP1IdleDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let activity: ConnectionActivity
    private let deadline: TimeAmount
    private var scheduled: Scheduled<Void>?

    init(activity: ConnectionActivity, deadline: TimeAmount) {
        self.activity = activity
        self.deadline = deadline
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { schedule(context, at: activity.lastActive + deadline) }
    }

    func channelActive(context: ChannelHandlerContext) {
        schedule(context, at: activity.lastActive + deadline)
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { activity.requestsInProgress += 1 }
        activity.lastActive = .now()
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) {
            activity.requestsInProgress = max(0, activity.requestsInProgress - 1)
            activity.lastActive = .now()
        }
        context.write(data, promise: promise)
    }

    private func schedule(_ context: ChannelHandlerContext, at when: NIODeadline) {
        guard scheduled == nil else { return }
        scheduled = context.eventLoop.assumeIsolated().scheduleTask(deadline: when) { [self] in
            scheduled = nil
            let due = activity.lastActive + deadline
            if activity.requestsInProgress > 0 {
                schedule(context, at: .now() + deadline)
            } else if due > .now() {
                schedule(context, at: due)
            } else {
                context.close(promise: nil)
            }
        }
    }
}
