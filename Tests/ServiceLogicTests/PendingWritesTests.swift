import StorecastRuntime
import Testing

/// The write-behind's decisions as golden tables: each scenario is a run of events (writes
/// recorded, the database answering or not, time passing) and the writes that reach the
/// database, in order, with what was given up. The write is its label.
@Suite struct PendingWritesTests {
    enum Event: Sendable {
        case record(String, key: String?, at: Double)
        /// Ask for the next step at `at`; a write handed out is answered with `answer`.
        case step(at: Double, answer: Answer)
    }

    enum Answer: Sendable { case written, connectionLost, refused }

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let configuration: PendingWrites<String>.Configuration
        let events: [Event]
        /// What each step did: "write X", "wait until T", "idle".
        let steps: [String]
        let written: [String]
        let dropped: [PendingWrites<String>.Dropped]
        var description: String { name }
    }

    static let zero = ContinuousClock.now
    static func at(_ s: Double) -> ContinuousClock.Instant { zero.advanced(by: .milliseconds(Int64(s * 1000))) }
    static func record(_ w: String, key: String? = nil, at t: Double = 0) -> Event { .record(w, key: key, at: t) }
    static func step(_ t: Double, _ answer: Answer = .written) -> Event { .step(at: t, answer: answer) }
    static let standard = PendingWrites<String>.Configuration()

    static let scenarios: [Scenario] = [
        Scenario(name: "a healthy database: written at once, in order",
                 configuration: standard,
                 events: [record("grant 1"), record("end 1"), step(0), step(0), step(0)],
                 steps: ["write grant 1", "write end 1", "idle"], written: ["grant 1", "end 1"], dropped: []),
        Scenario(name: "an outage: the first write waits with a doubling backoff; the rest wait behind it, then all land in order",
                 configuration: standard,
                 events: [record("grant 1"), record("session end 7"), step(0, .connectionLost), step(0.1), step(0.25, .connectionLost),
                          step(0.3), step(0.75, .connectionLost), step(1.75), step(1.75), step(1.75)],
                 steps: ["write grant 1", "wait until 0.25", "write grant 1", "wait until 0.75", "write grant 1", "write grant 1", "write session end 7", "idle"],
                 written: ["grant 1", "session end 7"], dropped: []),
        Scenario(name: "the backoff stops growing at the longest wait",
                 configuration: .init(firstRetry: .seconds(1), longestRetry: .seconds(3)),
                 events: [record("a"), step(0, .connectionLost), step(1, .connectionLost), step(3, .connectionLost), step(6, .connectionLost), step(8.9), step(9)],
                 steps: ["write a", "write a", "write a", "write a", "wait until 9.0", "write a"], written: ["a"], dropped: []),
        Scenario(name: "a refused write is dropped and counted; the next goes on",
                 configuration: standard,
                 events: [record("bad"), record("good"), step(0, .refused), step(0)],
                 steps: ["write bad", "write good"], written: ["good"],
                 dropped: [.init(what: "bad", reason: .refused, failures: 1)]),
        Scenario(name: "a status recorded again replaces the pending one and moves behind what came between",
                 configuration: standard,
                 events: [record("status live", key: "status 1"), record("session end 1"), record("status reconnecting", key: "status 1"),
                          step(0), step(0), step(0)],
                 steps: ["write session end 1", "write status reconnecting", "idle"],
                 written: ["session end 1", "status reconnecting"], dropped: []),
        Scenario(name: "a keyed write waiting out an outage is replaced by a newer value, which is what lands",
                 configuration: standard,
                 events: [record("cursors 1", key: "cursors"), step(0, .connectionLost), record("cursors 2", key: "cursors", at: 0.1), step(0.25), step(0.25)],
                 steps: ["write cursors 1", "write cursors 2", "idle"], written: ["cursors 2"], dropped: []),
        Scenario(name: "a full queue drops its oldest write to keep the newest",
                 configuration: .init(capacity: 2),
                 events: [record("a"), record("b"), record("c"), step(0), step(0), step(0)],
                 steps: ["write b", "write c", "idle"], written: ["b", "c"],
                 dropped: [.init(what: "a", reason: .queueFull, failures: 0)]),
        Scenario(name: "a write still not written after the maximum age is given up",
                 configuration: .init(maximumAge: .seconds(10), firstRetry: .seconds(4), longestRetry: .seconds(4)),
                 events: [record("old"), record("new", at: 8), step(0, .connectionLost), step(4, .connectionLost), step(8, .connectionLost), step(12)],
                 steps: ["write old", "write old", "write old", "write new"], written: ["new"],
                 dropped: [.init(what: "old", reason: .expired, failures: 3)]),
    ]

    @Test(arguments: scenarios)
    func decides(_ scenario: Scenario) {
        var pending = PendingWrites<String>(configuration: scenario.configuration)
        var steps: [String] = [], written: [String] = [], dropped: [PendingWrites<String>.Dropped] = []
        // Events are applied in time order; records and steps at the same time keep their order.
        let events = scenario.events.enumerated().sorted { a, b in
            func time(_ e: Event) -> Double { switch e { case .record(_, _, let t), .step(let t, _): t } }
            return (time(a.element), a.offset) < (time(b.element), b.offset)
        }.map(\.element)
        for event in events {
            switch event {
            case .record(let what, let key, let t):
                dropped += pending.record(what, key: key, write: what, now: Self.at(t))
            case .step(let t, let answer):
                let (step, expired) = pending.next(now: Self.at(t))
                dropped += expired
                switch step {
                case .idle: steps.append("idle")
                case .waitUntil(let instant): steps.append("wait until \(Self.zero.duration(to: instant) / .milliseconds(1) / 1000)")
                case .write(let entry):
                    steps.append("write \(entry.write)")
                    switch answer {
                    case .written: pending.succeeded(); written.append(entry.write)
                    case .connectionLost: if let d = pending.failed(retryable: true, now: Self.at(t)) { dropped.append(d) }
                    case .refused: if let d = pending.failed(retryable: false, now: Self.at(t)) { dropped.append(d) }
                    }
                }
            }
        }
        #expect(steps == scenario.steps)
        #expect(written == scenario.written)
        #expect(dropped == scenario.dropped)
    }

    @Test(arguments: [(1, 0.25), (2, 0.5), (3, 1.0), (5, 4.0), (6, 5.0), (40, 5.0)])
    func backoffDoublesUpToTheLongestWait(_ failures: Int, _ seconds: Double) {
        #expect(PendingWrites<String>(configuration: .init()).backoff(after: failures) == .milliseconds(Int64(seconds * 1000)))
    }
}
