import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL

extension HTTPServerBuilder {
    /// HTTP/2 and HTTP/1.1 over TLS, chosen by ALPN (Hummingbird's HTTP/2 channel on
    /// swift-nio-ssl), with ``HTTPConnectionLimits``: the per-IP cap first, the TLS handshake
    /// within the idle timeout, then each HTTP/1.1 connection's and HTTP/2 stream's header budget
    /// and idle timer as on the plain listener, and an HTTP/2 connection without open streams
    /// closed after the idle timeout. A browser runs at most 6 HTTP/1.1 connections per host and
    /// one LL-HLS player can hold about 4 (blocking reloads and streamed parts); over HTTP/2 two
    /// players on a page, a feed's current show and the next one, share one connection.
    ///
    /// `inFrontOfRouter` makes a handler of the caller's for each HTTP/2 stream, as
    /// ``guardedHTTP1(limits:listener:logger:inFrontOfRouter:)`` does for each HTTP/1.1
    /// connection. In a stream it comes before the stream's connection-state handler (Hummingbird
    /// has no later place): a stream carries one request and closes with its answer, so there is
    /// no keep-alive to keep. HTTP/1.1 over TLS goes to the router (``HTTP2StreamOnly``).
    public static func guardedHTTP2(tls: TLSConfiguration, limits: HTTPConnectionLimits, listener: String, logger: Logger,
                                    inFrontOfRouter: (@Sendable () -> any ChannelHandler)? = nil) -> HTTPServerBuilder {
        let cap = PerIPConnectionCap(maximumPerIP: limits.maximumConnectionsPerIP, listener: listener, logger: logger)
        let idle = limits.idleTimeAmount
        var streams = limits.http1Configuration
        if let inFrontOfRouter { streams.additionalChannelHandlers = { [HTTP2StreamOnly(inFrontOfRouter)] } }
        let configuration = HTTP2UpgradeChannel.Configuration(idleTimeout: limits.idleTimeout, gracefulCloseTimeout: .seconds(5), streamConfiguration: streams)
        let tally = DeadlineTally(listener: listener, logger: logger, reason: "tls_handshake_deadline", message: "connection closed: its TLS handshake did not complete in time")
        return .init { responder in
            GuardedHTTPChannel(base: try HTTP2UpgradeChannel(tlsConfiguration: tls, configuration: configuration, responder: responder)) { pipeline, _ in
                try pipeline.addHandler(cap.makeHandler())
            } after: { pipeline, _ in
                try pipeline.addHandler(TLSHandshakeDeadline(deadline: idle, tally: tally), position: .after(try pipeline.handler(type: NIOSSLServerHandler.self)))
            }
        }
    }
}
