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
    public static func guardedHTTP2(tls: TLSConfiguration, limits: HTTPConnectionLimits, listener: String, logger: Logger) -> HTTPServerBuilder {
        let cap = PerIPConnectionCap(maximumPerIP: limits.maximumConnectionsPerIP, listener: listener, logger: logger)
        let idle = limits.idleTimeAmount
        let configuration = HTTP2UpgradeChannel.Configuration(idleTimeout: limits.idleTimeout, gracefulCloseTimeout: .seconds(5), streamConfiguration: limits.http1Configuration)
        let tally = DeadlineTally(listener: listener, logger: logger, reason: "tls_handshake_deadline", message: "connection closed: its TLS handshake did not complete in time")
        return .init { responder in
            GuardedHTTPChannel(base: try HTTP2UpgradeChannel(tlsConfiguration: tls, configuration: configuration, responder: responder)) { pipeline in
                try pipeline.addHandler(cap.makeHandler())
            } after: { pipeline in
                try pipeline.addHandler(TLSHandshakeDeadline(deadline: idle, tally: tally), position: .after(try pipeline.handler(type: NIOSSLServerHandler.self)))
            }
        }
    }
}
