@testable import Ingest
import NIOCore
import NIOPosix
import Synchronization
import Testing
import ZeroMQ

/// Ingest's dispatcher host with real libzmq sockets: a ROUTER living on a NIO event loop,
/// talking to a DEALER on a ZeroMQ actor thread of its own.
@Suite struct EventLoopZMQActorTests {
    final class Log: Sendable {
        let received = Mutex<[String]>([])
        let ticks = Mutex(0)
        let handled = Mutex(0)
        let offLoop = Mutex<[String]>([])
        let endpoint = Mutex("")
        let released = Mutex(false)
    }

    /// A ROUTER that records what peers send and sends each command to the peer named "peer".
    final class Router: ZMQActorBody {
        typealias Command = String
        let socket: ZMQSocket
        let log: Log
        let loop: any EventLoop
        var readableSockets: [ZMQSocket] { [socket] }
        init(context: ZMQContext, log: Log, loop: any EventLoop) throws {
            let router = try ZMQSocket(context: context, type: .router, maximumMessageSize: 1 << 20)
            try router.bind("tcp://127.0.0.1:*")
            let endpoint = router.lastEndpoint
            log.endpoint.withLock { $0 = endpoint }
            socket = router
            self.log = log
            self.loop = loop
        }
        deinit {
            let onLoop = loop.inEventLoop
            log.released.withLock { $0 = true }
            if !onLoop { log.offLoop.withLock { $0.append("deinit") } }
        }
        private func checkLoop(_ what: String) {
            if !loop.inEventLoop { log.offLoop.withLock { $0.append(what) } }
        }
        func socketReadable(_ socket: ZMQSocket) throws {
            checkLoop("receive")
            guard let frames = try socket.receive(dontWait: true), frames.count == 2 else { return }
            log.received.withLock { $0.append(String(decoding: frames[1], as: UTF8.self)) }
        }
        func handle(_ command: String) throws {
            checkLoop("handle")
            log.handled.withLock { $0 += 1 }
            _ = try socket.send([Array("peer".utf8), Array(command.utf8)], dontWait: true)
        }
        func tick(now: ContinuousClock.Instant) throws {
            checkLoop("tick")
            log.ticks.withLock { $0 += 1 }
        }
    }

    final class PeerBox: Sendable {
        let received = Mutex<[String]>([])
    }

    /// The other side: a DEALER named "peer" on its own thread.
    final class Peer: ZMQActorBody {
        typealias Command = String
        let socket: ZMQSocket
        let box: PeerBox
        var readableSockets: [ZMQSocket] { [socket] }
        init(context: ZMQContext, endpoint: String, box: PeerBox) throws {
            socket = try ZMQSocket(context: context, type: .dealer, maximumMessageSize: 1 << 20)
            try socket.setRoutingID(Array("peer".utf8))
            try socket.connect(endpoint, server: "test")
            self.box = box
        }
        func socketReadable(_ socket: ZMQSocket) throws {
            guard let frames = try socket.receive(dontWait: true), let last = frames.last else { return }
            box.received.withLock { $0.append(String(decoding: last, as: UTF8.self)) }
        }
        func handle(_ command: String) throws { _ = try socket.send([Array(command.utf8)]) }
        func tick(now: ContinuousClock.Instant) throws {}
    }

    static func waitUntil(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition(), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
    }

    @Test func theRouterLivesOnTheLoopAndTalksBothWays() async throws {
        let context = try ZMQContext(security: .plaintext)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let log = Log()
        let actor = try await EventLoopZMQActor(on: loop, tickInterval: .milliseconds(50), pollInterval: .milliseconds(10), onError: { _ in }) {
            try Router(context: context, log: log, loop: loop)
        }
        let endpoint = log.endpoint.withLock { $0 }
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        let peerBox = PeerBox()
        let peer = try ZMQActor<String>(name: "peer", tickInterval: .milliseconds(50), onError: { _ in }) {
            try Peer(context: context, endpoint: endpoint, box: peerBox)
        }

        // Peer → router: picked up by the loop's poll, without a zmq_poll thread.
        for i in 0..<20 { peer.send("up \(i)") }
        try await Self.waitUntil { log.received.withLock { $0.count } >= 20 }
        #expect(log.received.withLock { $0 } == (0..<20).map { "up \($0)" })

        // Router → peer: commands posted from off the loop, handled in order.
        for i in 0..<200 { actor.send("down \(i)") }
        try await Self.waitUntil { peerBox.received.withLock { $0.count } >= 200 }
        #expect(peerBox.received.withLock { $0 } == (0..<200).map { "down \($0)" })

        // Commands posted on the loop are handled there and then, before `send` returns.
        let handledAtOnce = try await loop.submit {
            let before = log.handled.withLock { $0 }
            actor.send("inline")
            return log.handled.withLock { $0 } == before + 1
        }.get()
        #expect(handledAtOnce)
        try await Self.waitUntil { peerBox.received.withLock { $0.last } == "inline" }
        #expect(peerBox.received.withLock { $0.last } == "inline")

        try await Task.sleep(for: .milliseconds(200))
        #expect(log.ticks.withLock { $0 } >= 2)

        await actor.stop()
        #expect(log.released.withLock { $0 }, "the body, and its socket, are released at stop")
        actor.send("after stop")  // ignored, no crash
        #expect(log.offLoop.withLock { $0 }.isEmpty, "everything ran on the loop: \(log.offLoop.withLock { $0 })")
        peer.stop()
        try await group.shutdownGracefully()
    }

    @Test func aBindErrorIsThrownFromInit() async throws {
        let context = try ZMQContext(security: .plaintext)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        await #expect(throws: ZMQError.self) {
            _ = try await EventLoopZMQActor<Router>(on: loop, onError: { _ in }) {
                let s = try ZMQSocket(context: context, type: .router, maximumMessageSize: 1 << 20)
                try s.bind("tcp://256.0.0.1:1")
                throw CancellationError()  // not a ZMQError: fails the expectation if the bind worked
            }
        }
        try await group.shutdownGracefully()
    }
}
