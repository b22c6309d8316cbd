import Foundation
import Glibc
import Logging
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// What an attacker on the network does, on real sockets: ZeroMQ peers with no key, a key that
/// is not allowed, or a stolen allowed key; raw TCP connections that trickle or say nothing.
enum HostilePeer {
    enum Credentials {
        /// No CURVE at all.
        case none
        /// A fresh key pair the cluster never allowed (it knows the servers' public keys).
        case stranger
        /// A stolen key of an allowed role.
        case role(ClusterKeys.Role)
        /// Keys already loaded (a node's own pair).
        case security(ZMQSecurity)
    }

    static func security(_ credentials: Credentials) throws -> ZMQSecurity {
        switch credentials {
        case .none: return .plaintext
        case .stranger:
            var servers: [String: String] = [:]
            for role in ["ingest", "packager", "metrics"] {
                servers[role] = try String(contentsOfFile: "\(TestEnvironment.zmqKeys)/\(role).pub", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            return ZMQSecurity(curve: .init(keyPair: try CurveKeyPair.generate(), serverKeys: servers, allowedClients: [:]), onRefused: { _, _ in })
        case .role(let role):
            return try ClusterKeys.security(directory: TestEnvironment.zmqKeys, role: role, logger: Logger(label: "hostile-peer"))
        case .security(let security):
            return security
        }
    }

    /// Connects a `type` socket to `endpoint` (bound by a node of role `server`) and sends
    /// `messages` every 200 ms for `seconds`, on a thread of its own (the socket never leaves it).
    static func send(_ messages: [[[UInt8]]], type: ZMQSocketType, to endpoint: String, server: String, as credentials: Credentials, for seconds: Double) async throws {
        try await send({ _ in messages }, type: type, to: endpoint, server: server, as: credentials, for: seconds)
    }

    /// The same, with the messages of round `n` (0, 1, …) made by `round`.
    static func send(_ round: @escaping @Sendable (Int) -> [[[UInt8]]], type: ZMQSocketType, to endpoint: String, server: String, as credentials: Credentials, for seconds: Double) async throws {
        let security = try security(credentials)
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let thread = Thread {
                do {
                    let context = try ZMQContext(security: security)
                    do {
                        let socket = try ZMQSocket(context: context, type: type, maximumMessageSize: 1 << 20)
                        if type == .dealer { try socket.setRoutingID(Array("rogue".utf8)) }
                        try socket.connect(endpoint, server: server)
                        let end = Date().addingTimeInterval(seconds)
                        var n = 0
                        while Date() < end {
                            for m in round(n) { _ = try socket.send(m, dontWait: true) }
                            n += 1
                            Thread.sleep(forTimeInterval: 0.2)
                        }
                    }
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
            thread.start()
        }
    }

    /// A raw TCP connection to 127.0.0.1:`port`.
    final class Connection {
        let fd: Int32

        init(port: Int) throws {
            fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            guard rc == 0 else { close(fd); throw TestEnvironment.Failure(description: "connect to \(port) failed: errno \(errno)") }
        }

        deinit { close(fd) }

        func write(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

        /// Sends as much of `bytes` as the server takes within `seconds`, without blocking on a
        /// server that stopped reading; returns how many bytes it took.
        func send(_ bytes: [UInt8], within seconds: Double) -> Int {
            var sent = 0
            let end = Date().addingTimeInterval(seconds)
            while sent < bytes.count, Date() < end {
                var p = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                if n < 0 && errno != EAGAIN { break }
                sent += max(0, n)
            }
            return sent
        }

        /// Reads what arrives within `seconds` (up to `count` bytes).
        func read(_ count: Int, within seconds: Double) -> [UInt8] {
            var out: [UInt8] = []
            let end = Date().addingTimeInterval(seconds)
            while out.count < count, Date() < end {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: count - out.count)
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { break }
                out += buffer.prefix(n)
            }
            return out
        }

        /// Whether the server closed the connection within `seconds` (reads and drops anything sent).
        func closedByServer(within seconds: Double) -> Bool {
            let end = Date().addingTimeInterval(seconds)
            while Date() < end {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                var buffer = [UInt8](repeating: 0, count: 65536)
                let n = recv(fd, &buffer, buffer.count, 0)
                if n <= 0 { return true }
            }
            return false
        }
    }
}
