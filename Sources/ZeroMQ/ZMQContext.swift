private import CZeroMQ

/// Owns a `zmq_ctx`. The context itself is thread-safe in libzmq; sockets made from it are not.
public final class ZMQContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    public init(ioThreads: Int32 = 1) throws {
        guard let ctx = zmq_ctx_new() else { throw ZMQError.last("zmq_ctx_new") }
        zmq_ctx_set(ctx, ZMQ_IO_THREADS, ioThreads)
        handle = ctx
    }

    deinit { zmq_ctx_term(handle) }

    /// Makes every blocking call on this context's sockets return ETERM, so owning threads exit.
    public func shutdown() { zmq_ctx_shutdown(handle) }
}
