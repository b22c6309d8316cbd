import Logging
import Metrics
import NIOCore
import Synchronization

/// Open connections per remote IP address on one listener (nginx's `limit_conn` by
/// `$binary_remote_addr`). Shared by every connection of the listener; the handler below asks
/// it on `channelActive` and gives the slot back when the connection closes.
public final class PerIPConnectionCap: Sendable {
    public let maximumPerIP: Int
    private let open = Mutex<[String: Int]>([:])
    private let refusals = Mutex<Int>(0)
    private let listener: String
    private let logger: Logger
    private let refused: Counter

    /// `maximumPerIP` 0 turns the cap off. `listener` names it in logs and in
    /// `storecast_connections_refused_total{listener, reason="per_ip_cap"}`.
    public init(maximumPerIP: Int, listener: String, logger: Logger) {
        self.maximumPerIP = maximumPerIP
        self.listener = listener
        self.logger = logger
        self.refused = Counter(label: "storecast_connections_refused_total", dimensions: [("listener", listener), ("reason", "per_ip_cap")])
    }

    /// Takes a slot for `ip`; false when it has ``maximumPerIP`` open already.
    public func acquire(_ ip: String) -> Bool {
        guard maximumPerIP > 0 else { return true }
        let taken = open.withLock { counts -> Bool in
            let n = counts[ip, default: 0]
            guard n < maximumPerIP else { return false }
            counts[ip] = n + 1
            return true
        }
        if !taken {
            refused.increment()
            // The first refusal and every 1000th: a flood must not flood the log.
            let n = refusals.withLock { $0 += 1; return $0 }
            if n % 1000 == 1 {
                logger.warning("connection refused: too many open from one address", metadata: ["listener": "\(listener)", "ip": "\(ip)", "limit": "\(maximumPerIP)", "refused_so_far": "\(n)"])
            }
        }
        return taken
    }

    public func release(_ ip: String) {
        guard maximumPerIP > 0 else { return }
        open.withLock { counts in
            if let n = counts[ip] { counts[ip] = n > 1 ? n - 1 : nil }
        }
    }

    /// Connections open from `ip` (tests, diagnostics).
    public func openConnections(_ ip: String) -> Int { open.withLock { $0[ip, default: 0] } }

    /// The first handler of a connection: closes it at once when its address is over the cap.
    public func makeHandler() -> Handler { Handler(cap: self) }

    public final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        public typealias InboundIn = NIOAny
        private let cap: PerIPConnectionCap
        private var ip: String?

        init(cap: PerIPConnectionCap) { self.cap = cap }

        public func channelActive(context: ChannelHandlerContext) {
            let address = context.channel.remoteAddress?.ipAddress ?? "unknown"
            guard cap.acquire(address) else {
                context.close(promise: nil)
                return
            }
            ip = address
            context.fireChannelActive()
        }

        public func channelInactive(context: ChannelHandlerContext) {
            releaseSlot()
            context.fireChannelInactive()
        }

        public func handlerRemoved(context: ChannelHandlerContext) { releaseSlot() }

        private func releaseSlot() {
            if let ip { cap.release(ip) }
            ip = nil
        }
    }
}
