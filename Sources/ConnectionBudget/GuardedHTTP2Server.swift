import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP2
import NIOSSL

extension HTTPServerBuilder {
    /// HTTP/2 and HTTP/1.1 over TLS, chosen by ALPN (``SecureHTTPChannel`` on swift-nio-ssl and
    /// swift-nio-http2), with ``HTTPConnectionLimits``: the per-IP cap first, the TLS handshake
    /// within the idle timeout, then each HTTP/1.1 connection's header budget and idle timer as on
    /// the plain listener, each HTTP/2 stream's idle timer, and an HTTP/2 connection without open
    /// streams closed (GOAWAY) after the idle timeout, as is one that opens none, one whose GOAWAY
    /// the client never acknowledges, one with a connection error, and one that stays unwritable
    /// (a client that reads nothing) for the idle timeout (``HTTP2ConnectionDeadlines``). A browser runs at most 6 HTTP/1.1
    /// connections per host and one LL-HLS player can hold about 4 (blocking reloads and streamed
    /// parts); over HTTP/2 two players on a page, a feed's current show and the next one, share
    /// one connection.
    ///
    /// `frameHandler` makes a handler of the caller's for each HTTP/2 connection, which sees its
    /// frames before they are made into streams for the router: a hot path that answers some
    /// streams itself as frames and hands on every frame of the others.
    public static func guardedHTTP2(tls: TLSConfiguration, limits: HTTPConnectionLimits, listener: String, logger: Logger,
                                    frameHandler: (@Sendable () -> any ChannelHandler)? = nil) -> HTTPServerBuilder {
        let cap = PerIPConnectionCap(maximumPerIP: limits.maximumConnectionsPerIP, listener: listener, logger: logger)
        let idle = limits.idleTimeAmount
        let tally = DeadlineTally(listener: listener, logger: logger, reason: "tls_handshake_deadline", message: "connection closed: its TLS handshake did not complete in time")
        let firstStreamTally = DeadlineTally(listener: listener, logger: logger, reason: "first_stream_deadline", message: "HTTP/2 connection closed: it opened no stream in time")
        let goAwayTally = DeadlineTally(listener: listener, logger: logger, reason: "goaway_deadline", message: "HTTP/2 connection closed: still open after its GOAWAY's grace")
        let sendStallTally = DeadlineTally(listener: listener, logger: logger, reason: "send_deadline", message: "HTTP/2 connection closed: its client read none of its answers in time")
        // NIO's grace after a GOAWAY the client acknowledged, with a margin, and no less than the
        // idle timeout: a shutdown does not cut a request the grace lets finish.
        let grace = TimeAmount.seconds(5)
        let goAwayGrace = max(idle, grace) + .seconds(2)
        let connection = NIOHTTP2ServerConnectionManagementHandler.Configuration(maxIdleTime: idle, maxAge: nil, maxGraceTime: grace, keepalive: nil)
        let deadlines: @Sendable (HTTP2ConnectionDeadlines.GoAwayWatch) -> HTTP2ConnectionDeadlines = { watch in
            HTTP2ConnectionDeadlines(firstStream: idle, goAwayGrace: goAwayGrace, sendStall: idle, firstStreamTally: firstStreamTally, goAwayTally: goAwayTally,
                                     sendStallTally: sendStallTally, watch: watch)
        }
        return .init { responder in
            let base = try SecureHTTPChannel(tls: tls, http1: HTTP1Channel(responder: responder, configuration: limits.http1Configuration),
                                             streamIdleTimeout: limits.idleTimeout, connection: connection,
                                             deadlines: deadlines, frameHandler: frameHandler)
            return GuardedHTTPChannel(base: base) { pipeline, _ in
                try pipeline.addHandler(cap.makeHandler())
            } after: { pipeline, _ in
                try pipeline.addHandler(TLSHandshakeDeadline(deadline: idle, tally: tally), position: .after(try pipeline.handler(type: NIOSSLServerHandler.self)))
            }
        }
    }
}
