import NIOCore

/// What an HTTP/1.1 connection's requests are doing, shared by the handlers of one connection
/// when a hot path answers some requests on the wire, before Hummingbird's parser sees them
/// (``HTTPServerBuilder/guardedHTTP1(limits:listener:logger:inFrontOfRouter:onTheWire:)``): the
/// connection's idle deadline (``HTTP1IdleDeadline``) must count those answers as activity, and
/// the hot path must not answer while a request handed on is still unanswered (answers keep the
/// order of requests) or once the server drains.
///
/// Touched only on its connection's event loop.
public final class ConnectionActivity {
    /// Requests handed on to the server whose answers have not ended.
    public internal(set) var requestsInProgress = 0
    /// The server is closing its connections (`ChannelShouldQuiesceEvent` seen).
    public private(set) var draining = false
    /// When a request or an answer last moved.
    var lastActive = NIODeadline.now()

    public init() {}

    /// Whether a request at the front may be answered on the wire now.
    public var mayAnswerOnTheWire: Bool { requestsInProgress == 0 && !draining }

    /// A request answered on the wire: activity, as an answer from the server is.
    public func answeredOnTheWire() { lastActive = .now() }

    /// The server drains: every request from now on goes to the server, which closes the
    /// connection after its answer.
    public func drain() { draining = true }
}
