@testable import Packager
import Testing

/// A packaged stream's life as golden tables: what the packager sees once a tick (which streams
/// had media), starts and ends, with the clock as a parameter, and what it must do.
@Suite struct StreamLifecycleTests {
    enum Event: Sendable {
        case start(Int64, String)
        case end(Int64, at: Int)
        /// A tick at second `at`; the streams that had media since the last one.
        case tick(at: Int, heard: Set<Int64>)
    }

    static let zero = ContinuousClock.now
    static func at(_ s: Int) -> ContinuousClock.Instant { zero.advanced(by: .seconds(s)) }
    /// Ticks every second from `from` through `to` with `heard` each time.
    static func ticks(_ from: Int, _ to: Int, heard: Set<Int64> = []) -> [Event] { (from...to).map { .tick(at: $0, heard: heard) } }
    static let idle = StreamLifecycle.Action.end(streamID: 1, reason: "no media for 30 s")

    static let cases: [(name: String, events: [Event], expected: [(Int, StreamLifecycle.Action)])] = [
        ("a live stream with media every tick: nothing", [.start(1, "t/s")] + ticks(1, 120, heard: [1]), []),
        // A publisher's 8 s stall, a reconnect, a worker failover: silent, but under 30 s.
        ("29 s of silence is not an end", [.start(1, "t/s")] + ticks(1, 5, heard: [1]) + ticks(6, 35) + ticks(36, 40, heard: [1]), []),
        // The tick starts the count: silent from second 6, ended once more than 30 s have passed.
        ("over 30 s of silence ends the stream once", [.start(1, "t/s")] + ticks(1, 5, heard: [1]) + ticks(6, 37), [(37, idle)]),
        ("an ended stream leaves memory after the retention",
         [.start(1, "t/s"), .tick(at: 1, heard: [1]), .end(1, at: 2)] + ticks(3, 123), [(123, .forget(key: "t/s"))]),
        ("a show restarted within the retention is not forgotten",
         [.start(1, "t/s"), .end(1, at: 2), .start(1, "t/s")] + ticks(3, 130, heard: [1]), []),
        ("two streams: only the silent one ends",
         [.start(1, "t/a"), .start(2, "t/b")] + ticks(1, 32, heard: [2]), [(33, idle)]),
    ]

    @Test(arguments: cases.indices)
    func decisions(_ i: Int) {
        let c = Self.cases[i]
        var lifecycle = StreamLifecycle(endedRetention: .seconds(120))
        var actions: [(Int, StreamLifecycle.Action)] = []
        for (index, event) in c.events.enumerated() {
            switch event {
            case .start(let id, let key): lifecycle.started(id, key: key)
            case .end(let id, let t): lifecycle.ended(id, at: Self.at(t))
            case .tick(let t, let heard):
                for a in lifecycle.tick(now: Self.at(t), heard: heard) {
                    actions.append((index, a))
                    if case .end(let id, _) = a { lifecycle.ended(id, at: Self.at(t)) }  // as the pipeline does
                }
            }
        }
        #expect(actions.map(\.0) == c.expected.map(\.0), "\(c.name): \(actions)")
        #expect(actions.map(\.1) == c.expected.map(\.1), "\(c.name): \(actions)")
    }
}

/// Whose media a package takes (issue 23: a foreign stream id announcing a live show's name was
/// merged into it, and its idle end put ENDLIST on the real show).
@Suite struct StreamClaimTests {
    enum Step { case start(Int64, String), end(Int64) }

    static let cases: [(name: String, before: [Step], streamID: Int64, key: String, expected: StreamLifecycle.Claim)] = [
        ("a new stream on a free key", [], 1, "acme/show", .accept),
        ("the live stream's own repeat", [.start(1, "acme/show")], 1, "acme/show", .accept),
        ("another id on a live key: refused", [.start(1, "acme/show")], 99, "acme/show", .refuse(reason: "acme/show is live here as stream 1")),
        ("a live id under another key: refused", [.start(1, "acme/show")], 1, "acme/other", .refuse(reason: "stream 1 is live here as acme/show")),
        ("another id once the show ended (made again under that name)", [.start(1, "acme/show"), .end(1)], 2, "acme/show", .accept),
        ("other keys are not disturbed", [.start(1, "acme/show")], 2, "acme/sale", .accept),
    ]

    @Test(arguments: cases.indices) func claims(_ i: Int) {
        let c = Self.cases[i]
        var lifecycle = StreamLifecycle(endedRetention: .seconds(120))
        for step in c.before {
            switch step {
            case .start(let id, let key): lifecycle.started(id, key: key)
            case .end(let id): lifecycle.ended(id, at: .now)
            }
        }
        #expect(lifecycle.claim(streamID: c.streamID, key: c.key) == c.expected, "\(c.name)")
    }
}
