@testable import Ingest
@testable import StorecastRuntime
import Testing

/// Wrong stream keys back off per address (golden table; clock as a parameter).
@Suite struct KeyFailureBackoffTests {
    enum Event { case wrong(String, at: Double), right(String) }
    static let t0 = ContinuousClock.now
    static func at(_ s: Double) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(Int(s * 1000))) }
    static func wrongs(_ ip: String, _ times: [Double]) -> [Event] { times.map { .wrong(ip, at: $0) } }

    static let cases: [(name: String, events: [Event], ip: String, at: Double, wait: Double?)] = [
        ("five wrong keys are free", wrongs("a", [0, 1, 2, 3, 4]), "a", 4.1, nil),
        ("the sixth waits 1 s", wrongs("a", [0, 1, 2, 3, 4, 5]), "a", 5, 1),
        ("the wait is over after it", wrongs("a", [0, 1, 2, 3, 4, 5]), "a", 6, nil),
        ("the seventh waits 2 s, the eighth 4 s", wrongs("a", [0, 1, 2, 3, 4, 5, 6.5, 9]), "a", 9, 4),
        ("capped at 60 s", wrongs("a", (0..<40).map { Double($0) * 100 / 40 }), "a", 97.5, 60),
        ("another address is not disturbed", wrongs("a", [0, 1, 2, 3, 4, 5]), "b", 5, nil),
        ("a right key starts over", wrongs("a", [0, 1, 2, 3, 4, 5]) + [.right("a")], "a", 5, nil),
        ("wrong keys spread over more than a minute stay free", wrongs("a", [0, 20, 40, 61, 80, 100]), "a", 100, nil),
    ]

    @Test(arguments: cases.indices) func waits(_ i: Int) {
        let c = Self.cases[i]
        var backoff = KeyFailureBackoff()
        for event in c.events {
            switch event {
            case .wrong(let ip, let t): backoff.failed(ip, now: Self.at(t))
            case .right(let ip): backoff.succeeded(ip)
            }
        }
        #expect(backoff.wait(c.ip, now: Self.at(c.at)) == c.wait.map { .milliseconds(Int($0 * 1000)) }, "\(c.name)")
    }

    /// A flood of new addresses (or key ids) does not push out the one that is waiting: what
    /// goes to make room is one not waiting.
    @Test func aFloodDoesNotPushOutWhatIsWaiting() {
        var backoff = KeyFailureBackoff()
        for _ in 0..<20 { backoff.failed("target", now: Self.at(0)) }  // waits 60 s
        for i in 0..<(KeyFailureBackoff.maximumAddresses + 100) { backoff.failed("flood-\(i)", now: Self.at(1)) }
        #expect(backoff.records.count == KeyFailureBackoff.maximumAddresses)
        #expect(backoff.wait("target", now: Self.at(2)) != nil, "the target still waits")
    }

    @Test func addressesAreBounded() {
        var backoff = KeyFailureBackoff()
        for i in 0...KeyFailureBackoff.maximumAddresses { backoff.failed("10.0.\(i / 256).\(i % 256)", now: Self.at(Double(i) / 1000)) }
        #expect(backoff.records.count == KeyFailureBackoff.maximumAddresses)
        #expect(backoff.records["10.0.0.0"] == nil)
    }

    @Test func addressOfRemote() {
        #expect(PublishGate.address(of: "203.0.113.7:51234") == "203.0.113.7")
        #expect(PublishGate.address(of: "::1:51234") == "::1")
    }
}

/// A tenant's largest source (fair share), as a table.
@Suite struct SourceLimitsTests {
    static let limits = SourceLimits(maximumShortSide: 720, maximumFrameRate: 30)
    static let sizes: [(Int, Int, Bool)] = [(1280, 720, true), (720, 1280, true), (1920, 1080, false), (1080, 1920, false), (640, 360, true), (1281, 721, false)]
    static let rates: [(Double, Bool)] = [(30, true), (29.97, true), (32.9, true), (33.1, false), (60, false)]

    @Test(arguments: sizes) func size(_ width: Int, _ height: Int, _ admitted: Bool) {
        #expect((Self.limits.refusal(width: width, height: height) == nil) == admitted, "\(width)x\(height)")
    }

    @Test(arguments: rates) func frameRate(_ fps: Double, _ admitted: Bool) {
        #expect((Self.limits.refusal(frameRate: fps) == nil) == admitted, "\(fps)")
    }

    @Test func theReasonSaysWhatToDo() {
        #expect(Self.limits.refusal(width: 1920, height: 1080) == "Your video is 1920x1080; this account takes at most 720p. Lower the resolution in your encoder.")
    }
}
