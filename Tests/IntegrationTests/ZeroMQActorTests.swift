import Foundation
import StorecastWire
import Synchronization
import Testing
import ZeroMQ

/// Real libzmq sockets on loopback, each owned by its actor thread.
@Suite struct ZeroMQActorTests {
    final class Received: Sendable {
        let messages = Mutex<[WireMessage]>([])
    }

    final class Sink: ZMQActorBody {
        typealias Command = Never
        let socket: ZMQSocket
        let received: Received
        var readableSockets: [ZMQSocket] { [socket] }
        init(socket: ZMQSocket, received: Received) { self.socket = socket; self.received = received }
        func socketReadable(_ socket: ZMQSocket) throws {
            guard let frames = try socket.receive(dontWait: true), let body = frames.last else { return }
            let message = try WireCodec.decode(body)
            received.messages.withLock { $0.append(message) }
        }
        func handle(_ command: Never) throws {}
        func tick(now: ContinuousClock.Instant) throws {}
    }

    final class Source: ZMQActorBody {
        typealias Command = WireMessage
        let socket: ZMQSocket
        var readableSockets: [ZMQSocket] { [] }
        init(socket: ZMQSocket) { self.socket = socket }
        func socketReadable(_ socket: ZMQSocket) throws {}
        func handle(_ command: WireMessage) throws { try socket.send([WireCodec.encode(command)]) }
        func tick(now: ContinuousClock.Instant) throws {}
    }

    @Test func pushToPullDeliversEveryMessageInOrder() async throws {
        let context = try ZMQContext(security: .plaintext)
        let port = try TestEnvironment.freePort()
        let received = Received()
        let sink = try ZMQActor<Never>(name: "sink", onError: { _ in }) {
            let s = try ZMQSocket(context: context, type: .pull, maximumMessageSize: 1 << 20)
            try s.bind("tcp://127.0.0.1:\(port)")
            return Sink(socket: s, received: received)
        }
        let source = try ZMQActor<WireMessage>(name: "source", onError: { _ in }) {
            let s = try ZMQSocket(context: context, type: .push, maximumMessageSize: 1 << 20)
            try s.connect("tcp://127.0.0.1:\(port)", server: "test")
            return Source(socket: s)
        }
        let sent = (0..<500).map { WireMessage.accessUnit(AccessUnit(streamID: 1, trackID: 1, flags: 0, sequence: UInt64($0), dts: Int64($0), compositionOffset: 0, data: [UInt8($0 & 0xFF)])) }
        for m in sent { source.send(m) }
        let deadline = ContinuousClock.now + .seconds(10)
        while received.messages.withLock({ $0.count }) < sent.count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        source.stop()
        sink.stop()
        #expect(received.messages.withLock { $0 } == sent)
    }

    @Test func bindingATakenPortFailsAtStartWithTheEndpoint() throws {
        let context = try ZMQContext(security: .plaintext)
        let port = try TestEnvironment.freePort()
        let first = try ZMQActor<Never>(name: "a", onError: { _ in }) {
            let s = try ZMQSocket(context: context, type: .pull, maximumMessageSize: 1 << 20)
            try s.bind("tcp://127.0.0.1:\(port)")
            return Sink(socket: s, received: Received())
        }
        defer { first.stop() }
        do {
            _ = try ZMQActor<Never>(name: "b", onError: { _ in }) {
                let s = try ZMQSocket(context: context, type: .pull, maximumMessageSize: 1 << 20)
                try s.bind("tcp://127.0.0.1:\(port)")
                return Sink(socket: s, received: Received())
            }
            Issue.record("second bind succeeded")
        } catch let error as ZMQError {
            #expect(error.operation.contains("\(port)"))
            #expect(error.description.contains("in use"))
        }
    }
}
