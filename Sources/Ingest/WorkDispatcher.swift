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
    /// The stream's ladder profile (nil: the worker's settings), sent when a publish starts.
    case profile(streamID: Int64, TranscodeProfile?)
}

/// The ZeroMQ side of ingest, on the RTMP event loop (``EventLoopZMQActor``; non-blocking calls
/// only): a bound ROUTER that transcoder workers connect
/// their DEALERs to. Workers send READY and heartbeats; the dispatcher leases each live stream to
/// the least-loaded worker, sends it the GOP snapshot and then every unit in order, and moves
/// the stream to another worker when its worker goes silent or unreachable (the new worker starts
/// from the GOP cache; the packager splices the repeated stretch). A worker that reports capacity
/// 0 is draining: each of its streams moves at its next keyframe, where the new worker starts
/// exactly where the old one stops. Every lease is recorded in PostgreSQL (``LeaseLedger``).
final class WorkDispatcher: ZMQActorBody {
    typealias Command = DispatchCommand

    private struct Stream {
        var cache = GOPCache()
        var worker: String?
        /// The worker is draining: move at the next point a new worker can start from.
        var handoff = false
        var profile: TranscodeProfile?
        /// The packager this session's renditions go to; kept for the session once chosen.
        var packagerEndpoint: String?
        /// A worker has held the stream: a new lease may repeat what it delivered.
        var hadWorker = false
    }

    private let router: ZMQSocket
    private let nodeID: String
    private let packagers: PackagerDirectory
    private let logger: Logger
    private let ledger: LeaseLedger?
    private let clock = ContinuousClock()
    private var registry = WorkerRegistry()
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

    init(context: ZMQContext, bindEndpoint: String, nodeID: String, packagers: PackagerDirectory, ledger: LeaseLedger?, logger: Logger) throws {
        router = try ZMQSocket(context: context, type: .router)
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
        case .profile(let id, let profile):
            streams[id, default: Stream()].profile = profile
        case .ended(let id, let reason):
            guard let stream = streams.removeValue(forKey: id) else { return }
            if let worker = stream.worker {
                send(.streamEnd(StreamEnd(streamID: id, reason: reason)), to: worker)
                registry.unassign(id)
                ledger?.ended(streamID: id, reason: .streamEnded)
            }
        }
    }

    private func media(_ message: WireMessage, streamID id: Int64) {
        // One hash lookup per unit, and the stream mutated in place (a copy would copy its GOP).
        let index = streams.index(forKey: id) ?? { streams[id] = Stream(); return streams.index(forKey: id)! }()
        streams.values[index].cache.record(message)
        let worker = streams.values[index].worker
        if let worker, streams.values[index].handoff, isHandoffPoint(message, id), let next = registry.leastLoaded(), next != worker {
            // The cache now starts at this unit: the new worker begins exactly here, and the
            // draining one flushes what it has up to here.
            send(.release(streamID: id), to: worker)
            registry.unassign(id)
            streams[id]?.handoff = false
            handoffs.increment()
            logger.info("handing stream over from a draining worker", metadata: ["stream": "\(id)", "from": "\(worker)", "to": "\(next)"])
            lease(id, to: next, replacing: .workerDraining)
        } else if let worker {
            send(message, to: worker)
        } else {
            unitsUnassigned.increment()
            assign(id)
        }
    }

    func socketReadable(_ socket: ZMQSocket) throws {
        defer { flush() }
        guard let frames = try socket.receive(dontWait: true) else { return }
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
            let isNew = registry.heard(from: status, at: clock.now)
            if isNew {
                logger.info("transcoder worker joined", metadata: ["worker": "\(identity)", "capacity": "\(status.capacity)"])
                workersGauge.record(registry.workers.count)
            }
            // A worker that restarted under the same id lost its streams: lease them again.
            let running = Set(status.streams)
            for (id, stream) in streams where stream.worker == identity && !running.contains(id) && isReady(message) {
                lease(id, to: identity, replacing: .workerRestarted)
            }
            // Capacity 0 means draining (schemas/wire.md): move its streams at their next keyframe.
            if status.capacity == 0 {
                for (id, stream) in streams where stream.worker == identity && !stream.handoff {
                    streams[id]?.handoff = true
                    logger.info("worker is draining; its stream moves at the next keyframe", metadata: ["worker": "\(identity)", "stream": "\(id)"])
                }
            }
            for (id, stream) in streams where stream.worker == nil {
                _ = stream
                assign(id)
            }
        default:
            break
        }
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
        relocateFromLostPackagers()
        for (worker, orphaned) in registry.expire(now: now) {
            logger.warning("transcoder worker missed \(WorkerRegistry.livenessBeats) heartbeats; moving its streams", metadata: ["worker": "\(worker)", "streams": "\(orphaned.sorted())"])
            workersGauge.record(registry.workers.count)
            for id in orphaned {
                streams[id]?.worker = nil
                streams[id]?.handoff = false
                ledger?.ended(streamID: id, reason: .workerSilent)
                reassignments.increment()
                assign(id)
            }
        }
        // Heartbeats go once a second (schemas/wire.md), not on every 250 ms tick.
        // On a fixed 1 s grid (from the last beat, not from this tick, so the beat does not slip a
        // tick each time); after a stall the grid starts again from now.
        guard nextBeat.map({ now >= $0 }) ?? true else { return }
        let following = (nextBeat ?? now).advanced(by: WorkerRegistry.heartbeatInterval)
        nextBeat = following > now ? following : now.advanced(by: WorkerRegistry.heartbeatInterval)
        let beat = WireMessage.workerHeartbeat(WorkerStatus(workerID: nodeID, capacity: 0, streams: Array(streams.keys)))
        for worker in registry.workers.keys { send(beat, to: worker) }
    }

    /// A session whose packager left the live list (stopped, or stopped heartbeating for
    /// `NodeRegistry.liveSeconds`) moves to its owner among the live ones: its worker is leased
    /// the stream again, pushing there, from the GOP cache. The new packager makes a fresh package
    /// (a new generation); players come back through the API, which already names it. With no
    /// packager registered (none yet, or none left) placements stay; with the database
    /// unreachable the directory keeps its last list. The worker tells the old packager the
    /// stream ended there. A session without a worker just forgets the placement: its next
    /// lease places it again.
    private func relocateFromLostPackagers() {
        let live = Set(packagers.live.map(\.endpoint))
        guard !live.isEmpty else { return }
        for (id, stream) in streams {
            guard let chosen = stream.packagerEndpoint, !live.contains(chosen) else { continue }
            streams[id]?.packagerEndpoint = nil
            guard let worker = stream.worker else { continue }
            packagerMoves.increment()
            logger.warning("the stream's packager is gone; moving the stream to a live one", metadata: ["stream": "\(id)", "packager": "\(chosen)"])
            lease(id, to: worker, replacing: .packagerLost)
        }
    }

    private func assign(_ id: Int64) {
        // Only streams with media: a publish that never sent any has nothing to transcode.
        guard let stream = streams[id], stream.worker == nil, stream.cache.announce != nil, let worker = registry.leastLoaded() else { return }
        lease(id, to: worker, replacing: .workerUnreachable)
    }

    /// Leases `id` to `worker`; a lease still recorded for the stream ends with `reason`.
    private func lease(_ id: Int64, to worker: String, replacing reason: LeaseEndReason) {
        guard let stream = streams[id] else { return }
        registry.unassign(id)
        registry.assign(id, to: worker)
        streams[id]?.worker = worker
        ledger?.granted(streamID: id, workerID: worker, replacing: reason)
        logger.info("stream leased to transcoder", metadata: ["stream": "\(id)", "worker": "\(worker)", "snapshot_units": "\(stream.cache.units.count)"])
        // After another worker, the snapshot may repeat what it already delivered: the new worker
        // places extra keyframes up to the snapshot's last picture, so the packager continues
        // close to where the previous one stopped (a freeze of about 0.1 s, not up to a GOP). In
        // a drain hand-over that is one extra IDR, which also covers the old worker's last
        // frames arriving after the new one's first.
        let replayUntil = stream.hadWorker ? stream.cache.replayEnd : nil
        streams[id]?.hadWorker = true
        let assignment = Assignment(streamID: id, packagerEndpoint: packagerEndpoint(for: id), profile: stream.profile, replayUntil: replayUntil)
        send(.assign(assignment), to: worker)
        for message in stream.cache.snapshot { send(message, to: worker) }
    }

    /// The session's packager: chosen at its first lease by rendezvous hashing over the live
    /// packagers, then kept, so a new worker after a failover pushes to the same one.
    private func packagerEndpoint(for id: Int64) -> String {
        if let chosen = streams[id]?.packagerEndpoint { return chosen }
        guard let announce = streams[id]?.cache.announce else { return packagers.fallbackEndpoint }  // leases need an announce
        let placement = packagers.placement(tenant: announce.tenant, stream: announce.streamName)
        streams[id]?.packagerEndpoint = placement.endpoint
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
            outgoing.append(Outgoing(worker: worker, batch: WireBatchQueue(capacity: batchCapacity / max(1, registry.workers.count))))
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
            for id in registry.remove(worker) {
                streams[id]?.worker = nil
                streams[id]?.handoff = false
                ledger?.ended(streamID: id, reason: .workerUnreachable)
            }
            workersGauge.record(registry.workers.count)
        }
    }
}
