@testable import RTMP
import Testing

@Suite struct HandshakeTests {
    @Test func plainHandshakeEchoesC1AndHandsOverLeftoverBytes() throws {
        var h = HandshakeStateMachine(serverTime: 5, random: Array(repeating: 9, count: 1528))
        let c1 = (0..<1536).map { UInt8($0 % 251) }
        let first = try h.feed([3] + c1)
        guard case .send(let s) = first.first else { Issue.record("expected S0S1S2"); return }
        #expect(s.count == 1 + 1536 * 2)
        #expect(s[0] == 3)
        #expect(Array(s[1..<5]) == [0, 0, 0, 5])
        #expect(Array(s[1537...]) == c1, "S2 echoes C1")
        #expect(h.state == .awaitingC2)
        let done = try h.feed(Array(repeating: 1, count: 1536) + [0xAA, 0xBB])
        #expect(done == [.complete(leftover: [0xAA, 0xBB])])
        #expect(h.state == .done)
    }

    @Test func partialC1WaitsForMore() throws {
        var h = HandshakeStateMachine()
        #expect(try h.feed([3, 1, 2]) == [.needMoreBytes])
        #expect(h.state == .awaitingC0C1)
    }

    @Test func wrongVersionIsRefused() {
        var h = HandshakeStateMachine()
        #expect(throws: HandshakeStateMachine.Failure(version: 6)) { try h.feed([6] + Array(repeating: 0, count: 1536)) }
    }
}
