import Foundation
private import CZeroMQ

/// The ZAP handler of one context (ZeroMQ RFC 27): libzmq asks it, over
/// `inproc://zeromq.zap.01`, whether a peer that completed the CURVE handshake may talk to a
/// bound socket. A client key in the allow-list is answered 200 (its name as the User-Id);
/// anything else 400, and reported through `onRefused`. Runs on its own thread, which owns the
/// REP socket; stops when the context shuts down.
final class ZAPHandler: Sendable {
    static let endpoint = "inproc://zeromq.zap.01"
    private let finished = DispatchSemaphore(value: 0)

    /// Binds the handler's socket before returning, so no handshake is ever answered without it.
    init(context: UnsafeMutableRawPointer, allowed: CurveAllowList, onRefused: @escaping @Sendable (String, String) -> Void) throws {
        let ready = DispatchSemaphore(value: 0)
        let failure = Failure()
        let finished = self.finished
        let box = HandleBox(context)
        let thread = Thread {
            defer { finished.signal() }
            let socket: ZMQSocket
            do {
                socket = try ZMQSocket(contextHandle: box.handle, type: .rep, maximumMessageSize: 4096)
                try socket.bind(Self.endpoint)
            } catch {
                failure.set(error)
                ready.signal()
                return
            }
            ready.signal()
            while true {
                guard let request = try? socket.receive() else { return }  // ETERM: the context shuts down
                let reply = Self.answer(request, allowed: allowed.name(of:), onRefused: onRefused)
                do { try socket.send(reply) } catch { return }
            }
        }
        thread.name = "zmq-zap"
        thread.start()
        ready.wait()
        if let error = failure.get() { throw error }
    }

    /// Waits for the thread to end (after the context's shutdown).
    func join() { finished.wait() }

    /// The reply to one ZAP request: version, request id, status code, status text, user id,
    /// metadata. Pure; a malformed request is refused.
    static func answer(_ request: [[UInt8]], allowed: ([UInt8]) -> String?, onRefused: (String, String) -> Void) -> [[UInt8]] {
        func reply(_ code: String, _ text: String, user: String = "") -> [[UInt8]] {
            [Array("1.0".utf8), request.count > 1 ? request[1] : [], Array(code.utf8), Array(text.utf8), Array(user.utf8), []]
        }
        guard request.count >= 6, request[0] == Array("1.0".utf8) else {
            onRefused("?", "malformed ZAP request")
            return reply("500", "malformed request")
        }
        let address = String(decoding: request[3], as: UTF8.self)
        let mechanism = String(decoding: request[5], as: UTF8.self)
        guard mechanism == "CURVE", request.count == 7, request[6].count == 32 else {
            onRefused(address, "mechanism \(mechanism) is not CURVE")
            return reply("400", "CURVE required")
        }
        guard let name = allowed(request[6]) else {
            onRefused(address, "client key \(CurveKeyPair.encode(request[6]) ?? "?") is not in the allow-list")
            return reply("400", "key not allowed")
        }
        return reply("200", "OK", user: name)
    }

    private final class Failure: @unchecked Sendable {
        private let lock = NSLock()
        private var error: (any Error)?
        func set(_ e: any Error) { lock.withLock { error = e } }
        func get() -> (any Error)? { lock.withLock { error } }
    }

    private final class HandleBox: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
        init(_ h: UnsafeMutableRawPointer) { handle = h }
    }
}
