import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOHTTPTypes
import NIOHTTPTypesHTTP2
import NIOSSL
import NIOTLS

/// An HTTPS connection, HTTP/2 or HTTP/1.1 as the client's ALPN offer chooses (h2 first).
///
/// HTTP/1.1 is Hummingbird's own channel. HTTP/2 is built here rather than taken from
/// Hummingbird's `HTTP2UpgradeChannel`, which makes a channel and a task for every stream before
/// anything can read the stream's first header: here the connection's frames pass a handler of
/// the caller's first (``frameHandler``), which may answer a stream itself as frames (the media hot
/// path) and hands every other frame on to NIO's stream multiplexer, whose streams then reach
/// Hummingbird's responder as before. The connection's lifetime is NIO's
/// `NIOHTTP2ServerConnectionManagementHandler`: closed (GOAWAY) once it has had no open stream for
/// the idle timeout, and on the server's shutdown, when its streams have ended or after the
/// grace time; ``HTTP2ConnectionDeadlines`` closes it in the cases the manager leaves open.
struct SecureHTTPChannel: HTTPChannelHandler {
    typealias StreamChannel = NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>

    enum Negotiated: Sendable {
        case http1(HTTP1Channel.Value)
        /// The connection's streams that reach the responder, as they open.
        case http2(AsyncStream<StreamChannel>)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let sslContext: NIOSSLContext
    let http1: HTTP1Channel
    /// Each HTTP/2 stream's idle timer (as an HTTP/1.1 connection's), for a request whose
    /// answer or body stops moving.
    let streamIdleTimeout: Duration?
    let connection: NIOHTTP2ServerConnectionManagementHandler.Configuration
    /// An HTTP/2 connection's deadlines besides NIO's connection manager's.
    let deadlines: @Sendable (HTTP2ConnectionDeadlines.GoAwayWatch) -> HTTP2ConnectionDeadlines
    /// Makes the handler each HTTP/2 connection's frames pass before the stream multiplexer: it
    /// reads and writes `HTTP2Frame`.
    let frameHandler: (@Sendable () -> any ChannelHandler)?

    var responder: Responder { http1.responder }

    init(tls: TLSConfiguration, http1: HTTP1Channel, streamIdleTimeout: Duration?, connection: NIOHTTP2ServerConnectionManagementHandler.Configuration,
         deadlines: @escaping @Sendable (HTTP2ConnectionDeadlines.GoAwayWatch) -> HTTP2ConnectionDeadlines, frameHandler: (@Sendable () -> any ChannelHandler)?) throws {
        var tls = tls
        tls.applicationProtocols = NIOHTTP2SupportedALPNProtocols
        self.sslContext = try NIOSSLContext(configuration: tls)
        (self.http1, self.streamIdleTimeout, self.connection, self.frameHandler) = (http1, streamIdleTimeout, connection, frameHandler)
        self.deadlines = deadlines
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
            let negotiation = NIOTypedApplicationProtocolNegotiationHandler<Negotiated> { result in
                switch result {
                case .negotiated("h2"):
                    return channel.eventLoop.makeCompletedFuture { .http2(try http2(channel, logger: logger)) }
                case .negotiated("http/1.1"), .fallback:
                    return http1.setup(channel: channel, logger: logger).map { .http1($0) }
                case .negotiated:
                    // Only h2 and http/1.1 are offered; a client that picks another gets nothing.
                    return channel.close().flatMapThrowing { throw NIOHTTP2Errors.invalidALPNToken() }
                }
            }
            try pipeline.addHandler(negotiation)
            return Value(negotiated: negotiation.protocolNegotiationResult, channel: channel)
        }
    }

    /// The HTTP/2 connection's pipeline: its writes gathered into TLS records, the protocol, the
    /// connection's lifetime (and the deadlines it lacks), the caller's
    /// frame handler, then a channel per stream for what is left, each with the HTTP codec and
    /// an idle timer, yielded to ``handle(value:logger:)``.
    private func http2(_ channel: any Channel, logger: Logger) throws -> AsyncStream<StreamChannel> {
        let (streams, opened) = AsyncStream<StreamChannel>.makeStream()
        let pipeline = channel.pipeline.syncOperations
        try pipeline.addHandler(TLSWriteCoalescer())
        let watch = HTTP2ConnectionDeadlines.GoAwayWatch()
        try pipeline.addHandler(NIOHTTP2Handler(mode: .server, frameDelegate: watch))
        try pipeline.addHandler(deadlines(watch))
        try pipeline.addHandler(NIOHTTP2ServerConnectionManagementHandler(eventLoop: channel.eventLoop, configuration: connection))
        if let frameHandler { try pipeline.addHandler(frameHandler()) }
        let idle = streamIdleTimeout
        try pipeline.addHandler(HTTP2StreamMultiplexer(mode: .server, channel: channel, targetWindowSize: 65535,
                                                       outboundBufferSizeHighWatermark: 8196, outboundBufferSizeLowWatermark: 4092) { stream in
            stream.eventLoop.makeCompletedFuture {
                let streamPipeline = stream.pipeline.syncOperations
                try streamPipeline.addHandler(HTTP2FramePayloadToHTTPServerCodec())
                try streamPipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: idle, logger: logger))
                opened.yield(try StreamChannel(wrappingChannelSynchronously: stream))
            }
        })
        channel.closeFuture.whenComplete { _ in opened.finish() }
        return streams
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http1(let connection):
                await http1.handle(value: connection, logger: logger)
            case .http2(let streams):
                // A stream carries one request; Hummingbird's loop ends with it.
                await withDiscardingTaskGroup { group in
                    for await stream in streams {
                        group.addTask { await handleHTTP(asyncChannel: stream, logger: logger) }
                    }
                }
            }
        } catch {
            logger.debug("HTTPS connection ended before its protocol was agreed", metadata: ["error": "\(error)"])
        }
    }
}
