private import CZeroMQ

/// Owns a `zmq_ctx` and, with CURVE, its ZAP handler. The context itself is thread-safe in
/// libzmq; sockets made from it are not.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer
    public let security: ZMQSecurity
    private let zap: ZAPHandler?

    /// `security` applies to every socket made from this context (``ZMQSocket/bind(_:)`` and
    /// ``ZMQSocket/connect(_:server:)``). With CURVE the ZAP handler is running before this returns.
    public init(ioThreads: Int32 = 1, security: ZMQSecurity) throws {
        guard let ctx = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        zmq_ctx_set(ctx, ZMQ_IO_THREADS, ioThreads)
        handle = ctx
        self.security = security
        if let curve = security.curve {
            do {
                zap = try ZAPHandler(context: ctx, allowed: curve.allowedClients, onRefused: security.onRefused)
            } catch {
                zmq_ctx_term(ctx)
                throw error
            }
        } else {
            zap = nil
        }
    }

    deinit {
        if let zap {
            zmq_ctx_shutdown(handle)
            zap.join()
        }
        zmq_ctx_term(handle)
    }

    /// Makes every blocking call on this context's sockets return ETERM, so owning threads exit.
    public func shutdown() { zmq_ctx_shutdown(handle) }
}
