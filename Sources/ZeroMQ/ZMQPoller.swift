private import CZeroMQ

/// `zmq_poll` over a set of sockets plus plain file descriptors (the actor's wake-up eventfd).
/// Blocking: call it only from a thread that owns the sockets, never from Swift's cooperative pool.
public struct ZMQPoller {
    public enum Item {
        case socket(ZMQSocket)
        case fileDescriptor(Int32)
    }

    public init() {}

    /// Waits up to `timeoutMilliseconds` (-1 for ever) and returns which items are readable.
    public func pollReadable(_ items: [Item], timeoutMilliseconds: Int) throws -> [Bool] {
        var raw = items.map { item -> zmq_pollitem_t in
            switch item {
            case .socket(let s): zmq_pollitem_t(socket: s.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
            case .fileDescriptor(let fd): zmq_pollitem_t(socket: nil, fd: fd, events: Int16(ZMQ_POLLIN), revents: 0)
            }
        }
        let rc = zmq_poll(&raw, Int32(raw.count), timeoutMilliseconds)
        if rc < 0 {
            let error = ZMQError.last("poll")
            if error.code == EINTR { return Array(repeating: false, count: items.count) }
            throw error
        }
        return raw.map { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }
}
