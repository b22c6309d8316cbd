import NIOCore
import NIOHTTPTypesHTTP2

/// Puts a handler of the caller's into the channel of each HTTP/2 stream, and nowhere else.
/// Hummingbird's TLS listener gives each stream's channel the handlers of its configuration,
/// after the HTTP/2-to-HTTP codec and before the stream's connection-state handler. It sets up
/// the HTTP/1.1 connections of clients that do not offer h2 with the same configuration; there a
/// handler in that place would stand in front of the connection-state handler and hide requests
/// from keep-alive and the idle deadline, so those connections keep only Hummingbird's own.
/// It takes itself out of the pipeline as soon as it is added.
final class HTTP2StreamOnly: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let make: @Sendable () -> any ChannelHandler

    init(_ make: @escaping @Sendable () -> any ChannelHandler) {
        self.make = make
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let pipeline = context.pipeline.syncOperations
        do {
            if (try? pipeline.handler(type: HTTP2FramePayloadToHTTPServerCodec.self)) != nil {
                try pipeline.addHandler(make(), position: .after(self))
            }
        } catch {
            context.fireErrorCaught(error)
        }
        pipeline.removeHandler(context: context, promise: nil)
    }
}
