private import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif

/// Owns a Linux eventfd that other threads write to wake a ZeroMQ actor thread out of `zmq_poll`.
final class WakeupSignal: @unchecked Sendable {
    let fileDescriptor: Int32

    init() throws {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else {
            let code = czeromq_errno()
            throw ZMQError(operation: "eventfd", code: code, message: String(cString: strerror(code)))
        }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    func signal() {
        var one: UInt64 = 1
        _ = write(fileDescriptor, &one, 8)
    }

    func drain() {
        var value: UInt64 = 0
        _ = read(fileDescriptor, &value, 8)
    }
}
