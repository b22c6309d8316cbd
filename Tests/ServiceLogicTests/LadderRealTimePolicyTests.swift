import StorecastWire
import Testing
@testable import Transcoder

/// The transcoder's real-time policy as golden tables: what a worker sees (a unit's arrival and
/// the moment its encode is done) and what it is told to do. The faults of the field: a stalled
/// publisher, a burst, a timestamp jump, a reconnect, a worker that is truly too slow.
@Suite struct LadderRealTimePolicyTests {
    typealias Action = LadderRealTimePolicy.Action

    /// One step of a scenario: a video unit encoded (arrived, done), or a skip carried out.
    enum Event: Sendable, CustomStringConvertible {
        case encoded(arrived: Double, done: Double)
        case skipped(at: Double)
        var description: String {
            switch self {
            case .encoded(let a, let d): "encoded(\(a)→\(d))"
            case .skipped(let t): "skipped(\(t))"
            }
        }
    }

    /// Units arriving every `step` s (30 fps by default) from `from` for `seconds`, each encoded
    /// `work` seconds after it arrived: what a steady worker reports. (Times on the recovery
    /// boundary use binary-exact steps.)
    static func steady(from: Double, seconds: Double, work: Double, step: Double = 1.0 / 30) -> [Event] {
        stride(from: from, to: from + seconds, by: step).map { .encoded(arrived: $0, done: $0 + work) }
    }

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let events: [Event]
        /// Every action returned, in order, with the index of the event that returned it.
        let expected: [(Int, Action)]
        let frameStep: Int
        var description: String { name }
    }

    static let scenarios: [Scenario] = {
        var s: [Scenario] = []
        // A publisher stopped for 8 s (SIGSTOP, a stalled phone), then resumed: nothing arrives
        // while it is quiet, and what arrives after is encoded promptly. The old monitor saw
        // 8 s of "lag" here and shed the top rung for good.
        s.append(Scenario(name: "8 s publisher silence is never lag",
                          events: steady(from: 0, seconds: 5, work: 0.03) + steady(from: 13, seconds: 5, work: 0.03),
                          expected: [], frameStep: 1))
        // Video stops while audio continues (app in the background): no video units at all.
        s.append(Scenario(name: "a 5 s video gap is never lag",
                          events: steady(from: 0, seconds: 3, work: 0.05) + steady(from: 8, seconds: 3, work: 0.05),
                          expected: [], frameStep: 1))
        // A burst the worker drains: 3 s of frames arrive at once and are done within 0.8 s.
        let drained: [Event] = (0..<90).map { i in .encoded(arrived: 10, done: 10 + Double(i) * 0.009) }
        s.append(Scenario(name: "a burst drained within a second needs nothing",
                          events: steady(from: 0, seconds: 2, work: 0.03) + drained, expected: [], frameStep: 1))
        // A burst it cannot drain: the queue's age passes 1 s at the 34th unit; one skip, and
        // not another within the 2 s hold-off.
        let backlog: [Event] = (0..<60).map { i in .encoded(arrived: 20, done: 20 + Double(i) * 0.03) }
        s.append(Scenario(name: "a burst behind by over 1 s skips once, then holds off",
                          events: backlog, expected: [(34, .skipToNewestKeyframe)], frameStep: 1))
        // Truly too slow: three skips within 30 s thin the frame rate; three more thin it again;
        // the policy never thins beyond one frame in three.
        let slow: [Event] = [
            .encoded(arrived: 0, done: 1.2), .skipped(at: 1.2),
            .encoded(arrived: 3, done: 4.5), .skipped(at: 4.5),
            .encoded(arrived: 6, done: 7.5), .skipped(at: 7.5),
            .encoded(arrived: 9, done: 10.5), .skipped(at: 10.5),
            .encoded(arrived: 12, done: 13.5), .skipped(at: 13.5),
            .encoded(arrived: 15, done: 16.5), .skipped(at: 16.5),
            .encoded(arrived: 18, done: 19.5), .skipped(at: 19.5),
            .encoded(arrived: 21, done: 22.5), .skipped(at: 22.5),
            .encoded(arrived: 24, done: 25.5), .skipped(at: 25.5),
        ]
        s.append(Scenario(name: "sustained lag thins the frame rate, at most to one in three",
                          events: slow,
                          expected: [(0, .skipToNewestKeyframe), (2, .skipToNewestKeyframe), (4, .skipToNewestKeyframe), (5, .frameStep(2)),
                                     (6, .skipToNewestKeyframe), (8, .skipToNewestKeyframe), (10, .skipToNewestKeyframe), (11, .frameStep(3)),
                                     (12, .skipToNewestKeyframe), (14, .skipToNewestKeyframe), (16, .skipToNewestKeyframe)],
                          frameStep: 3))
        // Skips spread over more than 30 s are separate bursts, not a worker that is too slow.
        s.append(Scenario(name: "skips 20 s apart never thin",
                          events: [.skipped(at: 0), .skipped(at: 20), .skipped(at: 40), .skipped(at: 60)], expected: [], frameStep: 1))
        // Skips asked for count only once the shell reports them (it reports every attempt).
        s.append(Scenario(name: "skips not reported do not count",
                          events: [.encoded(arrived: 0, done: 1.5), .encoded(arrived: 2, done: 3.6), .encoded(arrived: 4, done: 5.7)],
                          expected: [(0, .skipToNewestKeyframe), (1, .skipToNewestKeyframe), (2, .skipToNewestKeyframe)], frameStep: 1))
        // Capacity returns: 20 s under 0.25 s of lag restores one step; a spike restarts the count.
        let thinned: [Event] = [.skipped(at: 0), .skipped(at: 1), .skipped(at: 2)]
        s.append(Scenario(name: "20 s of good lag restores full frame rate",
                          events: thinned + steady(from: 3, seconds: 21, work: 0.125, step: 0.25),
                          expected: [(2, .frameStep(2)), (3 + 80, .frameStep(1))], frameStep: 1))
        s.append(Scenario(name: "a lag spike restarts the recovery count",
                          events: thinned + steady(from: 3, seconds: 15, work: 0.125, step: 0.25) + [.encoded(arrived: 18, done: 18.5)]
                              + steady(from: 18.75, seconds: 19, work: 0.125, step: 0.25),
                          expected: [(2, .frameStep(2))], frameStep: 2))
        return s
    }()

    @Test(arguments: scenarios)
    func decisions(_ scenario: Scenario) {
        var policy = LadderRealTimePolicy()
        var actions: [(Int, Action)] = []
        for (i, event) in scenario.events.enumerated() {
            let out: [Action]
            switch event {
            case .encoded(let arrived, let done): out = policy.encoded(arrived: arrived, done: done)
            case .skipped(let at): out = policy.skipped(at: at)
            }
            actions += out.map { (i, $0) }
        }
        #expect(actions.map(\.0) == scenario.expected.map(\.0), "\(scenario.name): \(actions)")
        #expect(actions.map(\.1) == scenario.expected.map(\.1), "\(scenario.name): \(actions)")
        #expect(policy.frameStep == scenario.frameStep)
    }

    /// The skip over queued work, golden: (kind, keyframe) per queued message in, the indices kept.
    static let skips: [(queue: [String], kept: [Int], dropped: Int)] = [
        // v = video, V = video keyframe, a = audio, A = announce, E = end.
        (["v", "a", "v", "V", "v", "a"], [1, 3, 4, 5], 2),
        (["v", "V", "v", "V", "v"], [3, 4], 3),          // to the newest keyframe, not the first
        (["v", "a", "v", "a"], [0, 1, 2, 3], 0),          // no keyframe queued: nothing goes
        (["V"], [0], 0),
        (["A", "v", "a", "V", "E"], [0, 2, 3, 4], 1),     // announces and ends always stay, in order
        ([], [], 0),
    ]

    @Test(arguments: skips.indices)
    func catchUpSkip(_ index: Int) {
        let c = Self.skips[index]
        let queued = c.queue.enumerated().map { i, kind -> QueuedMessage in
            let message: WireMessage = switch kind {
            case "A": .streamAnnounce(StreamAnnounce(streamID: 1, sessionID: 1, tenant: "t", streamName: "s", discontinuity: false, tracks: []))
            case "E": .streamEnd(StreamEnd(streamID: 1, reason: "done"))
            default: .accessUnit(AccessUnit(streamID: 1, trackID: kind == "a" ? 2 : 1, flags: kind == "V" ? AccessUnit.keyframeFlag : 0,
                                           sequence: UInt64(i), dts: Int64(i), compositionOffset: 0, data: [UInt8(i)]))
            }
            return QueuedMessage(message: message, arrived: Double(i))
        }
        let (kept, dropped) = CatchUpSkip.apply(to: queued, videoTracks: [1])
        #expect(kept.map { Int($0.arrived) } == c.kept, "\(c.queue)")
        #expect(dropped == c.dropped, "\(c.queue)")
    }
}
