@testable import RTMP
import Testing

@Suite struct ServerSessionStateMachineTests {
    static func command(_ values: [AMF0Value], stream: UInt32 = 0) -> RTMPMessage {
        .command(values, streamID: stream)
    }

    static func connectAndPublish(_ s: inout ServerSessionStateMachine, name: String = "KEY?token=abc&x=1") -> [ServerSessionStateMachine.Action] {
        _ = s.received(command([.string("connect"), .number(1), .object([("app", .string("live/")), ("tcUrl", .string("rtmp://h/live")), ("flashVer", .string("FMLE/3.0"))])]))
        _ = s.received(command([.string("createStream"), .number(2), .null]))
        return s.received(command([.string("publish"), .number(3), .null, .string(name), .string("live")], stream: 1))
    }

    @Test func publishAsksForAuthorizationWithKeyAndQuery() {
        var s = ServerSessionStateMachine()
        let actions = Self.connectAndPublish(&s)
        #expect(actions == [.authorize(PublishRequest(app: "live", streamKey: "KEY", query: ["token": "abc", "x": "1"], publishType: "live", tcUrl: "rtmp://h/live", flashVer: "FMLE/3.0"))])
    }

    @Test func mediaDuringAuthorizationIsHeldAndReplayedInOrder() {
        var s = ServerSessionStateMachine()
        _ = Self.connectAndPublish(&s)
        let v1 = RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1, payload: [0x17, 0])
        let v2 = RTMPMessage(chunkStreamID: 6, timestamp: 33, typeID: 9, messageStreamID: 1, payload: [0x27, 1])
        #expect(s.received(v1).isEmpty)
        #expect(s.received(v2).isEmpty)
        let actions = s.publishAuthorized()
        #expect(Array(actions.dropFirst()) == [.media(v1), .media(v2)])
        #expect(s.received(v2) == [.media(v2)])
    }

    @Test func heldMediaIsDroppedOnRejection() {
        var s = ServerSessionStateMachine()
        _ = Self.connectAndPublish(&s)
        _ = s.received(RTMPMessage(chunkStreamID: 6, timestamp: 0, typeID: 9, messageStreamID: 1, payload: [0x17, 0]))
        let actions = s.publishRejected(.badName("x"))
        #expect(actions.count == 1)
        #expect(!actions.contains { if case .media = $0 { true } else { false } })
    }

    @Test func unknownKeyGetsBadNameAndClose() throws {
        var s = ServerSessionStateMachine()
        _ = Self.connectAndPublish(&s)
        let actions = s.publishRejected(.badName("Unknown stream key."))
        guard case .close(_, let messages) = try #require(actions.first) else { Issue.record("expected close"); return }
        let status = try AMF0.decodeAll(messages[0].payload)
        #expect(status[0] == .string("onStatus"))
        #expect(status[3]["code"] == .string("NetStream.Publish.BadName"))
        #expect(status[3]["level"] == .string("error"))
        #expect(s.state == .closed)
    }

    @Test func unpublishThenDisconnectEndsOnce() {
        var s = ServerSessionStateMachine()
        _ = Self.connectAndPublish(&s)
        _ = s.publishAuthorized()
        let actions = s.received(Self.command([.string("FCUnpublish"), .number(5), .null, .string("KEY")]))
        #expect(actions.contains(.unpublished))
        #expect(!s.connectionClosed().contains(.unpublished))
    }

    @Test func publishBeforeConnectCloses() {
        var s = ServerSessionStateMachine()
        let actions = s.received(Self.command([.string("publish"), .number(3), .null, .string("k")]))
        #expect(actions == [.close(reason: "publish before connect", messages: [])])
    }

    @Test func pingRequestIsAnswered() {
        var s = ServerSessionStateMachine()
        let ping = RTMPMessage(chunkStreamID: 2, timestamp: 0, typeID: 4, messageStreamID: 0, payload: [0, 6, 0, 0, 1, 0])
        #expect(s.received(ping) == [.send([.pingResponse(256)])])
    }

    @Test func malformedCommandCloses() {
        var s = ServerSessionStateMachine()
        let bad = RTMPMessage(chunkStreamID: 3, timestamp: 0, typeID: 20, messageStreamID: 0, payload: [0x02, 0x00])
        guard case .close = s.received(bad).first else { Issue.record("expected close"); return }
    }

    @Test func unsupportedMediaEndsThePublishWithRejected() throws {
        var s = ServerSessionStateMachine()
        _ = Self.connectAndPublish(&s)
        _ = s.publishAuthorized()
        let actions = s.publishFailed("unsupported FLV video codec id 2")
        #expect(actions.first == .unpublished)
        guard case .close(_, let messages) = try #require(actions.last) else { Issue.record("expected close"); return }
        let status = try AMF0.decodeAll(messages[0].payload)
        #expect(status[3]["code"] == .string("NetStream.Publish.Rejected"))
        #expect(status[3]["description"]?.stringValue?.contains("codec id 2") == true)
        #expect(s.state == .closed)
    }
}
