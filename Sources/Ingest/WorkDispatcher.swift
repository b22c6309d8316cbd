import Foundation
import Logging
import Metrics
import StorecastRuntime
import StorecastWire
import ZeroMQ

/// What ingest's connection handlers hand to the dispatcher.
public enum DispatchCommand: Sendable {
    case media(streamID: Int64, WireMessage)
    /// Everything the connections produced in one loop iteration, handled together (libzmq's I/O
    /// thread wakes once for it).
    case mediaBatch([(streamID: Int64, message: WireMessage)])
    case ended(streamID: Int64, reason: String)
    /// The stream's ladder profile (nil: the worker's settings) and its tenant's ladder ceiling
    /// (nil: none), sent when a publish starts.
    case profile(streamID: Int64, TranscodeProfile?, ladderCeiling: UInt16?)
    /// The source's frame rate, declared or measured: its cost in slots is weighed again.
    case frameRate(streamID: Int64, Double)
}

/// The ZeroMQ side of ingest, on the RTMP event loop (``EventLoopZMQActor``; non-blocking calls
/// only): a bound ROUTER that transcoder workers connect
/// their DEALERs to. Workers send READY and heartbeats; the dispatcher leases each live stream to
/// the least-loaded worker, sends it the GOP snapshot and then every unit in order, and moves
/// the stream to another worker when its worker goes silent or unreachable (the new worker starts
/// from the GOP cache; the packager splices the repeated stretch). A worker that reports capacity
/// 0 is draining: each of its streams moves at its next keyframe, where the new worker starts
/// exactly where the old one stops. Every lease is recorded in PostgreSQL (``LeaseLedger``), and
/// each `assign` carries a lease ticket naming the worker as its messages are authenticated
/// (``LeaseTicketKey``), which the packager requires before it takes the worker's media. Tickets
/// expire; the holder of each stream gets a fresh one every quarter of their validity.
final class WorkDispatcher: ZMQActorBody {
    typealias Command = DispatchCommand

    private struct Stream {
        var cache = GOPCache()
        var profile: TranscodeProfile?
        var ladderCeiling: UInt16?
        var frameRate: Double?
    }

    private let router: ZMQSocket
    private let nodeID: String
    private let packagers: PackagerDirectory
    private let logger: Logger
    private let ledger: LeaseLedger?
    /// Signs lease tickets (nil: none are written, and packagers that check them refuse the media).
    private let leaseKey: LeaseTicketKey?
    private var grants = LeaseGrantClock()
    /// How long a ticket is good for, and how often a holder's is renewed (a quarter of that).
    private let ticketValidity: Duration
    private var renewalInterval: Duration { ticketValidity / 4 }
    /// The lease each ticket was written for, renewed every ``renewalInterval`` while its worker
    /// holds the stream.
    private struct IssuedTicket {
        let worker: String
        let name: String
        let announce: StreamAnnounce
        let grantedAt: UInt64
        var renewAt: ContinuousClock.Instant
    }
    private var tickets: [Int64: IssuedTicket] = [:]
    /// Each worker's authenticated name (the ZAP User-Id of its READY and heartbeats).
    private var authenticatedNames: [String: String] = [:]
    private let clock = ContinuousClock()
    /// Who holds what and when streams move: the decisions, apart from this shell.
    private var scheduler: LeaseScheduler
    private var nextBeat: ContinuousClock.Instant?
    private var streams: [Int64: Stream] = [:]
    /// What this turn queued for one worker.
    private struct Outgoing {
        let worker: String
        var batch: WireBatchQueue
        /// Units and announces in the batch (the forwarded-units counter).
        var media = 0
        var announced: [Int64] = []
    }
    /// This turn's queues, in the order the workers were first sent to (a few workers: a list,
    /// searched from the end, where the worker of the previous unit usually is).
    private var outgoing: [Outgoing] = []
    private static let defaultBatchCapacity = 4096
    /// Buffer size for a worker's batch opened in this turn.
    private var batchCapacity = defaultBatchCapacity

    private let unitsForwarded = Counter(label: "storecast_ingest_units_forwarded_total")
    private let unitsUnassigned = Counter(label: "storecast_ingest_units_without_worker_total")
    private let reassignments = Counter(label: "storecast_ingest_stream_reassignments_total")
    private let handoffs = Counter(label: "storecast_ingest_stream_handoffs_total")
    private let packagerMoves = Counter(label: "storecast_ingest_packager_moves_total")
    private let workersGauge = Gauge(label: "storecast_ingest_workers")

    var readableSockets: [ZMQSocket] { [router] }

    init(context: ZMQContext, bindEndpoint: String, nodeID: String, packagers: PackagerDirectory, ledger: LeaseLedger?, leaseKey: LeaseTicketKey? = nil, ticketValidity: Duration = LeaseTicketKey.defaultValidity,
         maximumWorkerCapacity: Int = WorkerRegistry.defaultMaximumCapacity, logger: Logger) throws {
        self.leaseKey = leaseKey
        self.ticketValidity = ticketValidity
        scheduler = LeaseScheduler(maximumWorkerCapacity: maximumWorkerCapacity)
        router = try ZMQSocket(context: context, type: .router, maximumMessageSize: WireCodec.maximumControlMessage)
        try router.setRouterMandatory(true)
        // Counted in messages, which are batches (about one per worker per turn: ten a second at
        // the default read pacing), each at most WireBatchQueue.defaultMaximumBytes: a worker
        // that falls this far behind is dropped and its streams move.
        try router.setSendHighWaterMark(2_000)
        try router.bind(bindEndpoint)
        self.nodeID = nodeID
        self.packagers = packagers
        self.ledger = ledger
        self.logger = logger
    }

    func handle(_ command: DispatchCommand) throws {
        defer { flush() }
        switch command {
        case .mediaBatch(let batch):
            // Size each worker's batch for the whole turn up front (no regrowing as it fills).
            batchCapacity = batch.reduce(4096) { $0 + $1.message.payloadSize + 48 }
            defer { batchCapacity = Self.defaultBatchCapacity }
            for (id, message) in batch { media(message, streamID: id) }
        case .media(let id, let message):
            media(message, streamID: id)
        case .profile(let id, let profile, let ceiling):
            streams[id, default: Stream()].profile = profile
            streams[id]?.ladderCeiling = ceiling
        case .frameRate(let id, let fps):
            guard streams[id] != nil else { return }  // ended already
            streams[id]?.frameRate = fps
            weigh(id)
        case .ended(let id, let reason):
            tickets[id] = nil
            guard streams.removeValue(forKey: id) != nil else { return }
            carryOut(scheduler.ended(stream: id), endReason: reason)
        }
    }

    private func media(_ message: WireMessage, streamID id: Int64) {
        // The stream mutated in place (a copy would copy its GOP).
        let index = streams.index(forKey: id) ?? { streams[id] = Stream(); return streams.index(forKey: id)! }()
        streams.values[index].cache.record(message)
        if case .streamAnnounce = message { weigh(id) }
        // The cache now starts at a handoff point's unit, so a lease there sends it as the first
        // of the snapshot.
        switch scheduler.media(stream: id, announced: streams.values[index].cache.announce != nil, handoffPoint: isHandoffPoint(message, id)) {
        case .forward(let worker):
            send(message, to: worker)
        case .act(let actions):
            if case .release = actions.first {} else { unitsUnassigned.increment() }  // not a hand-over: it had no worker
            carryOut(actions)
        }
    }

    /// Carries out the scheduler's decisions.
    private func carryOut(_ actions: [LeaseScheduler.Action], endReason: String = "") {
        for action in actions {
            switch action {
            case .lease(let id, let worker, let reason, let replay):
                lease(id, to: worker, replacing: reason, replay: replay)
            case .release(let id, let worker):
                send(.release(streamID: id), to: worker)
                handoffs.increment()
                logger.info("handing stream over from a draining worker", metadata: ["stream": "\(id)", "from": "\(worker)"])
            case .end(let id, let worker):
                send(.streamEnd(StreamEnd(streamID: id, reason: endReason)), to: worker)
                ledger?.ended(streamID: id, reason: .streamEnded)
            case .leaseEnded(let id, let reason):
                ledger?.ended(streamID: id, reason: reason)
                if reason == .workerSilent { reassignments.increment() }
            case .workerJoined(let worker, let capacity, let claimed):
                logger.info("transcoder worker joined", metadata: ["worker": "\(worker)", "capacity": "\(capacity)"])
                if let claimed {
                    logger.warning("worker claims more slots than --max-worker-slots allows; capped", metadata: ["worker": "\(worker)", "claimed": "\(claimed)", "capped_to": "\(capacity)"])
                }
                workersGauge.record(scheduler.registry.workers.count)
            case .workerLost(let worker, let orphaned):
                logger.warning("transcoder worker missed \(WorkerRegistry.livenessBeats) heartbeats; moving its streams", metadata: ["worker": "\(worker)", "streams": "\(orphaned)"])
                workersGauge.record(scheduler.registry.workers.count)
            case .draining(let worker, let id):
                logger.info("worker is draining; its stream moves at the next keyframe", metadata: ["worker": "\(worker)", "stream": "\(id)"])
            case .packagerLost(let id, let packager):
                packagerMoves.increment()
                logger.warning("the stream's packager is gone; moving the stream to a live one", metadata: ["stream": "\(id)", "packager": "\(packager)"])
            case .packagerRegistered(let id, let node):
                packagers.recordOrigin(streamID: id, node: node)
                logger.info("the stream's default packager has registered; recorded as its origin", metadata: ["stream": "\(id)", "packager": "\(node)"])
            }
        }
    }

    func socketReadable(_ socket: ZMQSocket) throws {
        defer { flush() }
        guard let (frames, sender) = try socket.receiveWithSender(dontWait: true) else { return }
        guard frames.count == 2 else { return }
        let identity = String(decoding: frames[0], as: UTF8.self)
        let message: WireMessage
        do { message = try WireCodec.decode(frames[1]) } catch {
            logger.warning("undecodable message from worker", metadata: ["worker": "\(identity)", "error": "\(error)"])
            return
        }
        switch message {
        case .workerReady(let status), .workerHeartbeat(let status):
            guard status.workerID == identity else { return }
            if let sender, authenticatedNames[identity] != sender {
                if authenticatedNames.count >= 1024 {  // forget workers that left
                    let known = scheduler.registry.workers
                    authenticatedNames = authenticatedNames.filter { known[$0.key] != nil }
                }
                authenticatedNames[identity] = sender
            }
            carryOut(scheduler.heard(status, ready: isReady(message), at: clock.now))
        default:
            break
        }
    }

    /// The stream's cost in slots from its announced video size and its frame rate (fair share:
    /// a 1080p60 source takes more of a worker than a 720p30 one).
    private func weigh(_ id: Int64) {
        guard let stream = streams[id], let video = stream.cache.announce?.tracks.first(where: { $0.kind == .video }) else { return }
        let cost = SourceCost.slots(width: Int(video.width), height: Int(video.height), frameRate: stream.frameRate)
        guard cost != scheduler.cost(of: id) else { return }
        scheduler.weigh(id, cost: cost)
        logger.info("stream weighed in transcoder slots", metadata: ["stream": "\(id)", "slots": "\(cost)", "source": "\(video.width)x\(video.height)@\(stream.frameRate.map { "\($0)" } ?? "?")"])
    }

    /// A unit a new worker can start from: a video keyframe, or any unit of a stream without video.
    private func isHandoffPoint(_ message: WireMessage, _ id: Int64) -> Bool {
        guard case .accessUnit(let u) = message else { return false }
        let hasVideo = streams[id]?.cache.announce?.tracks.contains { $0.kind == .video } ?? false
        return hasVideo ? u.trackID == StreamAssembler.videoTrack && u.isKeyframe : true
    }

    private func isReady(_ message: WireMessage) -> Bool {
        if case .workerReady = message { return true }
        return false
    }

    func tick(now: ContinuousClock.Instant) throws {
        defer { flush() }
        // A misconfiguration that gives two nodes one endpoint records the first one's id.
        let live = Dictionary(packagers.live.map { ($0.endpoint, $0.id) }, uniquingKeysWith: { first, _ in first })
        carryOut(scheduler.tick(now: now, livePackagers: live))
        renewTickets(now: now)
        // Heartbeats go once a second (schemas/wire.md), not on every 250 ms tick.
        // On a fixed 1 s grid (from the last beat, not from this tick, so the beat does not slip a
        // tick each time); after a stall the grid starts again from now.
        guard nextBeat.map({ now >= $0 }) ?? true else { return }
        let following = (nextBeat ?? now).advanced(by: WorkerRegistry.heartbeatInterval)
        nextBeat = following > now ? following : now.advanced(by: WorkerRegistry.heartbeatInterval)
        let beat = WireMessage.workerHeartbeat(WorkerStatus(workerID: nodeID, capacity: 0, streams: Array(streams.keys)))
        for worker in scheduler.registry.workers.keys { send(beat, to: worker) }
    }

    /// Leases `id` to `worker` (the scheduler decided): the ledger, the assignment with the
    /// session's packager, and the GOP snapshot. A session whose packager was lost (see
    /// ``LeaseScheduler``) is placed again here; the worker tells the old packager the stream
    /// ended there. After another worker (`replay`), the snapshot may repeat what it already
    /// delivered: the new worker places extra keyframes up to the snapshot's last picture, so the
    /// packager continues close to where the previous one stopped (a freeze of about 0.1 s, not
    /// up to a GOP). In a drain hand-over that is one extra IDR, which also covers the old
    /// worker's last frames arriving after the new one's first.
    private func lease(_ id: Int64, to worker: String, replacing reason: LeaseEndReason, replay: Bool) {
        guard let stream = streams[id] else { return }
        ledger?.granted(streamID: id, workerID: worker, replacing: reason)
        logger.info("stream leased to transcoder", metadata: ["stream": "\(id)", "worker": "\(worker)", "slots": "\(scheduler.cost(of: id))", "snapshot_units": "\(stream.cache.units.count)"])
        var assignment = Assignment(streamID: id, packagerEndpoint: packagerEndpoint(for: id), profile: stream.profile, replayUntil: replay ? stream.cache.replayEnd : nil, ladderCeiling: stream.ladderCeiling)
        tickets[id] = nil
        if let leaseKey, let announce = stream.cache.announce {
            if let name = authenticatedNames[worker] {
                let issued = IssuedTicket(worker: worker, name: name, announce: announce, grantedAt: grants.next(now: Date()), renewAt: clock.now + renewalInterval)
                assignment.leaseTicket = write(issued, with: leaseKey)
                tickets[id] = issued
            } else {
                // Only on a socket without authentication; a packager that checks leases refuses the media.
                logger.warning("no authenticated name for the worker; its lease carries no ticket", metadata: ["stream": "\(id)", "worker": "\(worker)"])
            }
        }
        send(.assign(assignment), to: worker)
        for message in stream.cache.snapshot { send(message, to: worker) }
    }

    /// The ticket for `issued`'s lease, good for ``ticketValidity`` from now.
    private func write(_ issued: IssuedTicket, with key: LeaseTicketKey) -> [UInt8] {
        let a = issued.announce
        return key.ticket(streamID: a.streamID, sessionID: a.sessionID, tenant: a.tenant, stream: a.streamName, worker: issued.name,
                          grantedAt: issued.grantedAt, expiresAt: LeaseTicketKey.milliseconds(Date()) + LeaseTicketKey.milliseconds(ticketValidity))
    }

    /// Sends each holder whose ticket is due a fresh one (same lease, later expiry); tickets of
    /// leases that moved or ended are dropped, so those workers' tickets lapse.
    private func renewTickets(now: ContinuousClock.Instant) {
        guard let leaseKey else { return }
        for (id, issued) in tickets where now >= issued.renewAt {
            guard scheduler.worker(of: id) == issued.worker, streams[id] != nil else {
                tickets[id] = nil
                continue
            }
            tickets[id]?.renewAt = now + renewalInterval
            send(.leaseRenewal(streamID: id, ticket: write(issued, with: leaseKey)), to: issued.worker)
        }
    }

    /// The session's packager: chosen at its first lease by rendezvous hashing over the live
    /// packagers, then kept, so a new worker after a failover pushes to the same one.
    private func packagerEndpoint(for id: Int64) -> String {
        if let chosen = scheduler.packager(of: id) { return chosen }
        guard let announce = streams[id]?.cache.announce else { return packagers.fallbackEndpoint }  // leases need an announce
        let placement = packagers.placement(tenant: announce.tenant, stream: announce.streamName)
        scheduler.place(id, packager: placement.endpoint, registered: placement.node != nil)
        if let node = placement.node {
            packagers.recordOrigin(streamID: id, node: node)
            logger.info("stream placed on packager", metadata: ["stream": "\(id)", "packager": "\(node)"])
        }
        return placement.endpoint
    }

    /// Queues `message` for `worker`; ``flush()`` sends it, with everything else queued for that
    /// worker in this turn, as one ZeroMQ message (``WireBatchQueue``; more than one if the turn
    /// holds over 16,384 messages or 4 MiB), so what one worker gets keeps its order.
    private func send(_ message: WireMessage, to worker: String) {
        let i = outgoing.lastIndex { $0.worker == worker } ?? {
            // The turn's bytes shared among the workers (a guess; a batch grows if it needs to).
            outgoing.append(Outgoing(worker: worker, batch: WireBatchQueue(capacity: batchCapacity / max(1, scheduler.registry.workers.count))))
            return outgoing.count - 1
        }()
        outgoing[i].batch.append(message)
        switch message {
        case .accessUnit: outgoing[i].media += 1
        case .streamAnnounce(let a): outgoing[i].media += 1; outgoing[i].announced.append(a.streamID)
        default: break
        }
    }

    /// Sends what this turn queued, one message per worker. A worker that is unroutable or
    /// full is dropped and its streams move on the next tick; an announce counts as delivered
    /// (its discontinuity flag is not repeated) only once its batch went out.
    private func flush() {
        guard !outgoing.isEmpty else { return }
        let turn = outgoing
        outgoing.removeAll(keepingCapacity: true)
        for pending in turn {
            let worker = pending.worker
            let identity = Array(worker.utf8)
            do {
                var sent = true
                for body in pending.batch.encoded() where sent {
                    sent = try router.send([identity, body], dontWait: true)
                }
                if sent {
                    unitsForwarded.increment(by: pending.media)
                    for id in pending.announced { streams[id]?.cache.announceDelivered() }
                    continue
                }
                logger.warning("transcoder worker is not keeping up; dropping it", metadata: ["worker": "\(worker)"])
            } catch {
                logger.warning("transcoder worker unreachable", metadata: ["worker": "\(worker)", "error": "\(error)"])
            }
            carryOut(scheduler.unreachable(worker))
            workersGauge.record(scheduler.registry.workers.count)
        }
    }
}
