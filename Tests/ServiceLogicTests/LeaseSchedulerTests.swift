@testable import Ingest
import StorecastRuntime
import StorecastWire
import Testing

/// The lease scheduler as golden tables: the faults of the field as events (with the clock as a
/// parameter), and the actions ingest must carry out. Worker "a" joins first, "b" second, two
/// slots each.
@Suite struct LeaseSchedulerTests {
    typealias Action = LeaseScheduler.Action

    enum Event: Sendable {
        case heard(String, capacity: UInt16, streams: [Int64], ready: Bool, at: Double)
        /// A unit of the stream: announced, and whether a new worker can start there.
        case unit(Int64, keyframe: Bool)
        case tick(at: Double, live: Set<String>)
        case placed(Int64, String)
        /// Placed on the default packager, none being registered yet.
        case placedByDefault(Int64, String)
        case ended(Int64)
        case unreachable(String)
        /// The stream's cost in slots (its size announced, its frame rate known).
        case weigh(Int64, Double)
    }

    static let zero = ContinuousClock.now
    static func at(_ s: Double) -> ContinuousClock.Instant { zero.advanced(by: .milliseconds(Int64(s * 1000))) }
    static func ready(_ w: String, _ at: Double, capacity: UInt16 = 2, streams: [Int64] = []) -> Event { .heard(w, capacity: capacity, streams: streams, ready: true, at: at) }
    static func beat(_ w: String, _ at: Double, capacity: UInt16 = 2, streams: [Int64] = []) -> Event { .heard(w, capacity: capacity, streams: streams, ready: false, at: at) }
    static let joined: [Event] = [ready("a", 0), ready("b", 0)]

    struct Scenario: Sendable, CustomStringConvertible {
        let name: String
        let events: [Event]
        /// The actions of the events from index `from` on (what the fault decides).
        let from: Int
        let expected: [Action]
        /// Where each stream's units go at the end.
        let holders: [Int64: String?]
        var description: String { name }
    }

    static let scenarios: [Scenario] = [
        Scenario(name: "a show starting goes to the worker with the most free slots, from the GOP",
                 events: joined + [.unit(1, keyframe: true)], from: 2,
                 expected: [.lease(stream: 1, worker: "a", replacing: .workerUnreachable, replay: false)], holders: [1: "a"]),
        Scenario(name: "publisher silence: heartbeats go on, nothing moves",
                 events: joined + [.unit(1, keyframe: true), beat("a", 1, streams: [1]), beat("b", 1), .tick(at: 2.5, live: []),
                                   beat("a", 3, streams: [1]), beat("b", 3), .tick(at: 5.5, live: []), beat("a", 5.9, streams: [1]), beat("b", 5.9), .tick(at: 8.5, live: [])],
                 from: 3, expected: [], holders: [1: "a"]),
        Scenario(name: "a burst and a timestamp back-jump are only units: forwarded to the same worker",
                 events: joined + [.unit(1, keyframe: true)] + Array(repeating: .unit(1, keyframe: false), count: 50) + [.unit(1, keyframe: true)],
                 from: 3, expected: [], holders: [1: "a"]),
        Scenario(name: "kill -9: the worker misses 3 heartbeats, its streams move at once with the replay",
                 events: joined + [.unit(1, keyframe: true), .unit(2, keyframe: true), beat("b", 2.9, streams: [2]), .tick(at: 3.5, live: [])], from: 4,
                 expected: [.workerLost(worker: "a", streams: [1]), .leaseEnded(stream: 1, reason: .workerSilent),
                            .lease(stream: 1, worker: "b", replacing: .workerUnreachable, replay: true)],
                 holders: [1: "b", 2: "b"]),
        Scenario(name: "drain: capacity 0 marks the stream, which moves at its next keyframe, not before",
                 events: joined + [.unit(1, keyframe: true), beat("a", 1, capacity: 0, streams: [1]), .unit(1, keyframe: false), .unit(1, keyframe: true)], from: 3,
                 expected: [.draining(worker: "a", stream: 1), .release(stream: 1, worker: "a"),
                            .lease(stream: 1, worker: "b", replacing: .workerDraining, replay: true)],
                 holders: [1: "b"]),
        Scenario(name: "a lost packager: the worker is leased the stream again, to push to the new owner",
                 events: joined + [.unit(1, keyframe: true), .placed(1, "tcp://pk-b"), .tick(at: 0.5, live: ["tcp://pk-a", "tcp://pk-b"]),
                                   .tick(at: 1, live: ["tcp://pk-a"])], from: 4,
                 expected: [.packagerLost(stream: 1, packager: "tcp://pk-b"), .lease(stream: 1, worker: "a", replacing: .packagerLost, replay: true)],
                 holders: [1: "a"]),
        Scenario(name: "no packager registered: placements stay",
                 events: joined + [.unit(1, keyframe: true), .placed(1, "tcp://pk-b"), .tick(at: 1, live: [])], from: 4, expected: [], holders: [1: "a"]),
        Scenario(name: "a show placed on the default packager before any registered: once it registers, its origin is recorded, once, and nothing moves",
                 events: joined + [.unit(1, keyframe: true), .placedByDefault(1, "tcp://pk-a"), .tick(at: 0.5, live: []), .tick(at: 1, live: ["tcp://pk-a"]),
                                   .tick(at: 1.5, live: ["tcp://pk-a", "tcp://pk-b"])], from: 4,
                 expected: [.packagerRegistered(stream: 1, node: "pk-a")], holders: [1: "a"]),
        Scenario(name: "a show placed on a default packager that never registers moves to one that did",
                 events: joined + [.unit(1, keyframe: true), .placedByDefault(1, "tcp://default"), .tick(at: 1, live: ["tcp://pk-a"])], from: 4,
                 expected: [.packagerLost(stream: 1, packager: "tcp://default"), .lease(stream: 1, worker: "a", replacing: .packagerLost, replay: true)],
                 holders: [1: "a"]),
        Scenario(name: "a worker restarted under its id (READY without the stream) is leased it again",
                 events: joined + [.unit(1, keyframe: true), ready("a", 2)], from: 3,
                 expected: [.lease(stream: 1, worker: "a", replacing: .workerRestarted, replay: true)], holders: [1: "a"]),
        Scenario(name: "a worker restarted while draining: leased the stream again, and it still moves at the next keyframe",
                 events: joined + [.unit(1, keyframe: true), ready("a", 2, capacity: 0)], from: 3,
                 expected: [.lease(stream: 1, worker: "a", replacing: .workerRestarted, replay: true), .draining(worker: "a", stream: 1)], holders: [1: "a"]),
        Scenario(name: "an unreachable worker loses its streams; the next unit leases them again",
                 events: joined + [.unit(1, keyframe: true), .unreachable("a"), .unit(1, keyframe: false)], from: 3,
                 expected: [.leaseEnded(stream: 1, reason: .workerUnreachable), .lease(stream: 1, worker: "b", replacing: .workerUnreachable, replay: true)],
                 holders: [1: "b"]),
        Scenario(name: "no worker yet: the stream waits and goes to the first one heard",
                 events: [.unit(1, keyframe: true), .unit(1, keyframe: false), ready("a", 1)], from: 0,
                 expected: [.workerJoined(worker: "a", capacity: 2), .lease(stream: 1, worker: "a", replacing: .workerUnreachable, replay: false)],
                 holders: [1: "a"]),
        // Issue 23: a peer claiming 65535 slots was leased every new stream. It is believed
        // WorkerRegistry.defaultMaximumCapacity (8); the ninth stream waits for a real worker.
        Scenario(name: "a worker's claimed capacity is capped",
                 events: [ready("rogue", 0, capacity: 65535)] + (1...9).map { .unit(Int64($0), keyframe: true) }, from: 0,
                 expected: [.workerJoined(worker: "rogue", capacity: 8, claimed: 65535)]
                     + (1...8).map { .lease(stream: Int64($0), worker: "rogue", replacing: .workerUnreachable, replay: false) },
                 holders: [8: "rogue", 9: nil]),
        // Fair share (issue 23): a stream costs its pixel rate against a 1080p30 source's.
        Scenario(name: "a 1080p60 source takes both slots of a worker; the 720p30 ones after it go to the other",
                 events: joined + [.weigh(1, 2.0), .unit(1, keyframe: true), .weigh(2, 0.444), .unit(2, keyframe: true), .weigh(3, 0.444), .unit(3, keyframe: true)], from: 2,
                 expected: [.lease(stream: 1, worker: "a", replacing: .workerUnreachable, replay: false), .lease(stream: 2, worker: "b", replacing: .workerUnreachable, replay: false),
                            .lease(stream: 3, worker: "b", replacing: .workerUnreachable, replay: false)],
                 holders: [1: "a", 2: "b", 3: "b"]),
        Scenario(name: "four 720p30 sources fit a 2-slot worker (two unweighed streams did); the fifth waits",
                 events: [ready("a", 0)] + (1...5).flatMap { [Event.weigh(Int64($0), 0.444), .unit(Int64($0), keyframe: true)] }, from: 1,
                 expected: (1...4).map { .lease(stream: Int64($0), worker: "a", replacing: .workerUnreachable, replay: false) },
                 holders: [1: "a", 4: "a", 5: nil]),
        Scenario(name: "a source bigger than any worker goes to an idle worker, alone; with none idle it waits",
                 events: joined + [.weigh(1, 4.0), .unit(1, keyframe: true), .weigh(2, 4.0), .unit(2, keyframe: true), .weigh(3, 4.0), .unit(3, keyframe: true), .weigh(4, 0.25), .unit(4, keyframe: true)], from: 2,
                 expected: [.lease(stream: 1, worker: "a", replacing: .workerUnreachable, replay: false), .lease(stream: 2, worker: "b", replacing: .workerUnreachable, replay: false)],
                 holders: [1: "a", 2: "b", 3: nil, 4: nil]),
        Scenario(name: "a frame rate measured later weighs the stream again on its worker; later placements count it",
                 events: [ready("a", 0), .weigh(1, 0.444), .unit(1, keyframe: true), .weigh(2, 0.444), .unit(2, keyframe: true), .weigh(1, 0.889),
                          .weigh(3, 0.444), .unit(3, keyframe: true), .weigh(4, 0.444), .unit(4, keyframe: true)], from: 1,
                 expected: (1...3).map { .lease(stream: Int64($0), worker: "a", replacing: .workerUnreachable, replay: false) },
                 holders: [1: "a", 3: "a", 4: nil]),
        Scenario(name: "a draining worker's stream moves only to a worker its cost fits: it stays until one joins",
                 events: joined + [.weigh(1, 1.5), .unit(1, keyframe: true), .weigh(2, 1.0), .unit(2, keyframe: true),
                                   beat("a", 1, capacity: 0, streams: [1]), .unit(1, keyframe: true), ready("c", 2), .unit(1, keyframe: false), .unit(1, keyframe: true)], from: 6,
                 expected: [.draining(worker: "a", stream: 1), .workerJoined(worker: "c", capacity: 2), .release(stream: 1, worker: "a"),
                            .lease(stream: 1, worker: "c", replacing: .workerDraining, replay: true)],
                 holders: [1: "c", 2: "b"]),
        Scenario(name: "the stream ends: its worker is told",
                 events: joined + [.unit(1, keyframe: true), .ended(1)], from: 3, expected: [.end(stream: 1, worker: "a")], holders: [1: nil]),
    ]

    @Test(arguments: scenarios)
    func decisions(_ scenario: Scenario) {
        var s = LeaseScheduler()
        var actions: [Action] = []
        var forwarded: [Int64: String] = [:]
        for (i, event) in scenario.events.enumerated() {
            var out: [Action] = []
            switch event {
            case .heard(let w, let capacity, let streams, let ready, let t):
                out = s.heard(WorkerStatus(workerID: w, capacity: capacity, streams: streams), ready: ready, at: Self.at(t))
            case .unit(let id, let keyframe):
                switch s.media(stream: id, announced: true, handoffPoint: keyframe) {
                case .forward(let w): forwarded[id] = w
                case .act(let a): out = a
                }
            case .tick(let t, let live):  // each endpoint's node id: the endpoint without its scheme
                out = s.tick(now: Self.at(t), livePackagers: Dictionary(uniqueKeysWithValues: live.map { ($0, String($0.dropFirst("tcp://".count))) }))
            case .placed(let id, let endpoint): s.place(id, packager: endpoint)
            case .placedByDefault(let id, let endpoint): s.place(id, packager: endpoint, registered: false)
            case .ended(let id): out = s.ended(stream: id)
            case .unreachable(let w): out = s.unreachable(w)
            case .weigh(let id, let cost): s.weigh(id, cost: cost)
            }
            if i >= scenario.from { actions += out }
        }
        #expect(actions == scenario.expected, "\(scenario.name): \(actions)")
        for (id, holder) in scenario.holders { #expect(s.worker(of: id) == holder, "\(scenario.name): stream \(id)") }
    }

    @Test(arguments: [
        (1920, 1080, 30.0 as Double?, 1.0), (1920, 1080, 60, 2.0), (1080, 1920, 30, 1.0), (1280, 720, 30, 0.444), (1280, 720, nil, 0.444),
        (1280, 720, 0, 0.444), (854, 480, 30, 0.25), (640, 360, 30, 0.25), (3840, 2160, 30, 4.0), (1920, 1080, 25, 0.833), (0, 0, 30, 1.0),
    ])
    func aSourceCostsItsPixelRateInSlots(_ width: Int, _ height: Int, _ fps: Double?, _ slots: Double) {
        #expect(SourceCost.slots(width: width, height: height, frameRate: fps) == slots, "\(width)x\(height)@\(fps ?? -1)")
    }
}
