private import CZeroMQ

/// The one error type of the ZeroMQ wrapper: the failing call, errno and libzmq's text.
public struct ZMQError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let code: Int32
    public let message: String

    public var description: String { "zmq \(operation) failed: \(message) (errno \(code))" }

    /// True when libzmq reported that the context was terminated: the owning thread should stop.
    public var isContextTerminated: Bool { code == ETERM }
    /// True when a non-blocking call would have blocked.
    public var wouldBlock: Bool { code == EAGAIN }

    static func last(_ operation: String) -> ZMQError {
        let code = zmq_errno()
        return ZMQError(operation: operation, code: code, message: String(cString: zmq_strerror(code)))
    }
}
