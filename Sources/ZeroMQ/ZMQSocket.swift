private import CZeroMQ

/// The socket kinds Storecast uses (ZeroMQ guide, chapter 2).
public enum ZMQSocketType: Sendable {
    case pub, sub, push, pull, router, dealer, pair, rep

    var raw: Int32 {
        switch self {
        case .pub: ZMQ_PUB
        case .sub: ZMQ_SUB
        case .push: ZMQ_PUSH
        case .pull: ZMQ_PULL
        case .router: ZMQ_ROUTER
        case .dealer: ZMQ_DEALER
        case .pair: ZMQ_PAIR
        case .rep: ZMQ_REP
        }
    }
}

/// Owns one `zmq_socket`. Not `Sendable`: a ZeroMQ socket lives on the thread that made it
/// (normally a ``ZMQActor`` body); messages cross threads as Swift values, never the socket.
public final class ZMQSocket {
    let handle: UnsafeMutableRawPointer
    public let type: ZMQSocketType
    private let security: ZMQSecurity
    /// Keeps the context alive while the socket is: `zmq_ctx_term` (the context's deinit) waits
    /// for every socket to close, so a context released before its sockets would hang there.
    private let context: ZMQContext?
    /// The allow-list a bound CURVE socket checks every sender against (nil: not bound, or plaintext).
    private var served: CurveAllowList?

    /// `maximumMessageSize`: a peer's message larger than this (bytes, all frames) closes its
    /// connection (ZMQ_MAXMSGSIZE); every socket names its own, from what it expects to receive.
    public convenience init(context: ZMQContext, type: ZMQSocketType, maximumMessageSize: Int64) throws {
        try self.init(handle: context.handle, type: type, maximumMessageSize: maximumMessageSize, security: context.security, context: context)
    }

    /// A socket of a context whose owner is being built (the context's own ZAP handler).
    convenience init(contextHandle: UnsafeMutableRawPointer, type: ZMQSocketType, maximumMessageSize: Int64) throws {
        try self.init(handle: contextHandle, type: type, maximumMessageSize: maximumMessageSize, security: .plaintext, context: nil)
    }

    private init(handle contextHandle: UnsafeMutableRawPointer, type: ZMQSocketType, maximumMessageSize: Int64, security: ZMQSecurity, context: ZMQContext?) throws {
        guard let s = zmq_socket(contextHandle, type.raw) else { throw ZMQError.last("zmq_socket") }
        handle = s
        self.type = type
        self.security = security
        self.context = context
        // Never hang on close: unsent media is worthless once the owner has stopped.
        try setInt(ZMQ_LINGER, 0)
        var limit = maximumMessageSize
        guard zmq_setsockopt(handle, ZMQ_MAXMSGSIZE, &limit, MemoryLayout<Int64>.size) == 0 else { throw ZMQError.last("setsockopt MAXMSGSIZE") }
    }

    deinit { zmq_close(handle) }

    /// Binds; with CURVE the socket is a CURVE server whose clients the context's ZAP handler checks.
    public func bind(_ endpoint: String) throws {
        if let curve = security.curve {
            try setInt(ZMQ_CURVE_SERVER, 1)
            try setString(ZMQ_CURVE_SECRETKEY, curve.keyPair.secretKey)
            try setString(ZMQ_ZAP_DOMAIN, ZMQSecurity.domain)
            served = curve.allowedClients
        }
        guard zmq_bind(handle, endpoint) == 0 else { throw ZMQError.last("bind \(endpoint)") }
    }

    /// Connects to a socket bound by a node of role `server` ("ingest", "packager", "metrics");
    /// with CURVE the server must prove it holds that role's key.
    public func connect(_ endpoint: String, server: String) throws {
        if let curve = security.curve {
            guard let serverKey = curve.serverKeys[server] else {
                throw ZMQError(operation: "connect \(endpoint)", code: EINVAL, message: "no CURVE public key for the \(server) role (is \(server).pub in the keys directory?)")
            }
            let pair = curve.clientKeyPair ?? curve.keyPair
            try setString(ZMQ_CURVE_SERVERKEY, serverKey)
            try setString(ZMQ_CURVE_PUBLICKEY, pair.publicKey)
            try setString(ZMQ_CURVE_SECRETKEY, pair.secretKey)
        }
        guard zmq_connect(handle, endpoint) == 0 else { throw ZMQError.last("connect \(endpoint)") }
    }

    public func disconnect(_ endpoint: String) throws {
        guard zmq_disconnect(handle, endpoint) == 0 else { throw ZMQError.last("disconnect \(endpoint)") }
    }

    /// The endpoint actually bound (useful after binding to port `*` or `0`).
    public var lastEndpoint: String {
        var buffer = [CChar](repeating: 0, count: 256)
        var size = buffer.count
        _ = zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size)
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether a message can be received now (ZMQ_EVENTS): no system call, unlike a zero-timeout
    /// poll, so draining a busy socket costs nothing extra per message.
    public var hasPendingInput: Bool {
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) == 0 else { return false }
        return events & Int32(ZMQ_POLLIN) != 0
    }

    public func subscribe(_ prefix: [UInt8]) throws {
        try setBytes(ZMQ_SUBSCRIBE, prefix)
    }

    public func unsubscribe(_ prefix: [UInt8]) throws {
        try setBytes(ZMQ_UNSUBSCRIBE, prefix)
    }

    public func setSendHighWaterMark(_ messages: Int32) throws { try setInt(ZMQ_SNDHWM, messages) }
    public func setReceiveHighWaterMark(_ messages: Int32) throws { try setInt(ZMQ_RCVHWM, messages) }
    public func setRoutingID(_ id: [UInt8]) throws { try setBytes(ZMQ_ROUTING_ID, id) }
    /// Reports unroutable ROUTER sends as EHOSTUNREACH instead of dropping them silently.
    public func setRouterMandatory(_ on: Bool) throws { try setInt(ZMQ_ROUTER_MANDATORY, on ? 1 : 0) }
    /// Reconnect back-off (Paranoid Pirate: 1 s growing to 32 s).
    public func setReconnectInterval(milliseconds: Int32, max: Int32) throws {
        try setInt(ZMQ_RECONNECT_IVL, milliseconds)
        try setInt(ZMQ_RECONNECT_IVL_MAX, max)
    }

    private func setInt(_ option: Int32, _ value: Int32) throws {
        var v = value
        guard zmq_setsockopt(handle, option, &v, MemoryLayout<Int32>.size) == 0 else {
            throw ZMQError.last("setsockopt \(option)")
        }
    }

    private func setString(_ option: Int32, _ value: String) throws {
        let rc = value.withCString { zmq_setsockopt(handle, option, $0, value.utf8.count) }
        guard rc == 0 else { throw ZMQError.last("setsockopt \(option)") }
    }

    private func setBytes(_ option: Int32, _ value: [UInt8]) throws {
        let rc = value.withUnsafeBytes { zmq_setsockopt(handle, option, $0.baseAddress, $0.count) }
        guard rc == 0 else { throw ZMQError.last("setsockopt \(option)") }
    }

    /// Sends a multipart message. Returns false when `dontWait` is set and the socket would block
    /// (high-water mark reached); the caller decides whether that means "drop" or "retry".
    @discardableResult
    public func send(_ frames: [[UInt8]], dontWait: Bool = false) throws -> Bool {
        precondition(!frames.isEmpty, "a ZeroMQ message has at least one frame")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
            if index < frames.count - 1 { flags |= ZMQ_SNDMORE }
            let rc = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if rc < 0 {
                let error = ZMQError.last("send")
                // Only the first frame can be refused for HWM; later frames are atomic with it.
                if error.wouldBlock && index == 0 { return false }
                throw error
            }
        }
        return true
    }

    /// Receives one multipart message, or nil when `dontWait` is set and nothing is queued. On a
    /// bound CURVE socket a message whose sender's name (its ZAP User-Id) has left the allow-list
    /// since its handshake is dropped and reported as refused.
    public func receive(dontWait: Bool = false) throws -> [[UInt8]]? {
        try receiveWithSender(dontWait: dontWait)?.frames
    }

    /// ``receive(dontWait:)``, with the sender's authenticated name: its ZAP User-Id (the name
    /// the allow-list gives its key), or nil on a socket without authentication.
    public func receiveWithSender(dontWait: Bool = false) throws -> (frames: [[UInt8]], sender: String?)? {
        while true {
            guard let (frames, sender) = try receiveMessage(dontWait: dontWait) else { return nil }
            guard let sender, let address = sender.refusedAddress else { return (frames, sender?.user) }
            security.onRefused(address, "\(sender.user) was taken off the allow-list")
        }
    }

    /// A message's sender as ZAP named it (its User-Id) and, when the allow-list no longer
    /// admits it, its address (read only then: not on every message).
    private typealias Sender = (user: String, refusedAddress: String?)

    private func receiveMessage(dontWait: Bool) throws -> ([[UInt8]], Sender?)? {
        var frames: [[UInt8]] = []
        var sender: Sender?
        while true {
            var message = zmq_msg_t()
            zmq_msg_init(&message)
            defer { zmq_msg_close(&message) }
            let rc = zmq_msg_recv(&message, handle, dontWait ? ZMQ_DONTWAIT : 0)
            if rc < 0 {
                let error = ZMQError.last("receive")
                if error.wouldBlock && frames.isEmpty { return nil }
                throw error
            }
            // A ROUTER's first frame is the routing id it made itself, without the peer's
            // metadata: the sender is read off the first frame that has it.
            if sender == nil, let served, let user = zmq_msg_gets(&message, "User-Id").map({ String(cString: $0) }) {
                sender = (user, served.admits(user) ? nil : zmq_msg_gets(&message, "Peer-Address").map { String(cString: $0) } ?? "?")
            }
            let size = zmq_msg_size(&message)
            if size > 0, let data = zmq_msg_data(&message) {
                frames.append(Array(UnsafeRawBufferPointer(start: data, count: size)))
            } else {
                frames.append([])
            }
            if zmq_msg_more(&message) == 0 { break }
        }
        return (frames, sender)
    }
}
