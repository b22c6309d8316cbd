import StorecastRuntime
import StorecastWire

/// Which transcoder worker holds each live stream, and when a stream moves: a pure decider. The
/// dispatcher (``WorkDispatcher``, the ZeroMQ shell) reports what happened, with the clock as a
/// parameter, and carries out the actions returned: leases with their GOP snapshot, releases,
/// ends, the lease ledger, logs and counters.
///
/// - A stream with media and no worker goes to the live worker with the most free slots that fit
///   its cost (``SourceCost``: its pixel rate against a 1080p30 source's), or to an idle worker
///   when it is bigger than any worker's free slots.
/// - A worker silent for ``WorkerRegistry/livenessBeats`` heartbeats is lost: its streams move
///   at once (the new worker replays the GOP snapshot; the packager splices).
/// - A worker that reports capacity 0 is draining: each of its streams moves at its next
///   handoff point (a video keyframe), where the new worker starts exactly where it stops.
/// - A worker that says READY without a stream it held restarted: it is leased the stream again.
/// - A stream whose packager left the live list is leased again to its worker, to push to its
///   new owner.
/// - A stream placed on the default packager while none was registered (ingest had not read the
///   list yet) keeps it once that packager registers, and its origin is recorded then; if the
///   default is not among those registered, the stream moves to one that is, as from a lost one.
public struct LeaseScheduler: Sendable {
    public enum Action: Sendable, Equatable {
        /// Lease `stream` to `worker` (the assignment and the GOP snapshot; with `replay`, the
        /// snapshot may repeat what an earlier worker delivered). A lease still recorded for the
        /// stream ends with `replacing`.
        case lease(stream: Int64, worker: String, replacing: LeaseEndReason, replay: Bool)
        /// The draining `worker` stops `stream` here (it flushes what it holds up to this unit).
        case release(stream: Int64, worker: String)
        /// The stream ended: tell its worker, end the lease.
        case end(stream: Int64, worker: String)
        /// The stream's lease ended with no successor yet.
        case leaseEnded(stream: Int64, reason: LeaseEndReason)
        /// `claimed`: the capacity the worker reported, when more than the registry's cap.
        case workerJoined(worker: String, capacity: Int, claimed: Int? = nil)
        case workerLost(worker: String, streams: [Int64])
        case draining(worker: String, stream: Int64)
        case packagerLost(stream: Int64, packager: String)
        /// The stream's packager, the default chosen while none was registered, is now registered
        /// as `node`: record it as the stream's origin (the API points players at it).
        case packagerRegistered(stream: Int64, node: String)
    }

    /// Where one unit goes: straight to its worker (the hot path), or actions first.
    public enum Route: Sendable, Equatable {
        case forward(to: String)
        case act([Action])
    }

    private struct Placement: Sendable {
        var worker: String?
        var handoff = false
        var packager: String?
        /// False while `packager` is the default, chosen with no packager registered.
        var packagerRegistered = true
        var hadWorker = false
        var hasMedia = false
        var cost = SourceCost.unknown
    }

    public private(set) var registry: WorkerRegistry
    private var placements: [Int64: Placement] = [:]

    public init(maximumWorkerCapacity: Int = WorkerRegistry.defaultMaximumCapacity) {
        registry = WorkerRegistry(maximumCapacity: maximumWorkerCapacity)
    }

    public func worker(of stream: Int64) -> String? { placements[stream]?.worker }
    public func packager(of stream: Int64) -> String? { placements[stream]?.packager }

    /// What the stream costs a worker, in slots (its size announced, its frame rate measured):
    /// placements from now on count it; its worker keeps it.
    public mutating func weigh(_ stream: Int64, cost: Double) {
        placements[stream, default: Placement()].cost = cost
        registry.reweigh(stream, cost: cost)
    }

    public func cost(of stream: Int64) -> Double { placements[stream]?.cost ?? SourceCost.unknown }

    /// The shell chose the stream's packager (at its first lease); kept for the session.
    /// `registered`: among the registered packagers; false: the default, none being registered.
    public mutating func place(_ stream: Int64, packager endpoint: String, registered: Bool = true) {
        var placement = placements[stream] ?? Placement()
        (placement.packager, placement.packagerRegistered) = (endpoint, registered)
        placements[stream] = placement
    }

    /// A unit of `stream`; `announced`: the stream's configuration is known (it can be leased);
    /// `handoffPoint`: a new worker can start at this unit.
    public mutating func media(stream id: Int64, announced: Bool, handoffPoint: Bool) -> Route {
        let index = placements.index(forKey: id) ?? { placements[id] = Placement(); return placements.index(forKey: id)! }()
        if announced { placements.values[index].hasMedia = true }
        let p = placements.values[index]
        if let worker = p.worker {
            guard p.handoff, handoffPoint, let next = registry.leastLoaded(cost: p.cost), next != worker else { return .forward(to: worker) }
            registry.unassign(id)
            placements.values[index].handoff = false
            return .act([.release(stream: id, worker: worker)] + lease(id, to: next, replacing: .workerDraining))
        }
        return .act(assign(id))
    }

    /// The stream ended (the publisher left for good).
    public mutating func ended(stream id: Int64) -> [Action] {
        guard let p = placements.removeValue(forKey: id), let worker = p.worker else { return [] }
        registry.unassign(id)
        return [.end(stream: id, worker: worker)]
    }

    /// A worker's READY (`ready`) or heartbeat at `now`.
    public mutating func heard(_ status: WorkerStatus, ready: Bool, at now: ContinuousClock.Instant) -> [Action] {
        var actions: [Action] = []
        if registry.heard(from: status, at: now) {
            let capped = registry.workers[status.workerID]?.capacity ?? 0
            actions.append(.workerJoined(worker: status.workerID, capacity: capped, claimed: Int(status.capacity) > capped ? Int(status.capacity) : nil))
        }
        let running = Set(status.streams)
        for id in placements.keys.sorted() where placements[id]?.worker == status.workerID {
            if ready, !running.contains(id) {
                actions += lease(id, to: status.workerID, replacing: .workerRestarted)
            }
            if status.capacity == 0, placements[id]?.handoff == false {
                placements[id]?.handoff = true
                actions.append(.draining(worker: status.workerID, stream: id))
            }
        }
        for id in placements.keys.sorted() where placements[id]?.worker == nil { actions += assign(id) }
        return actions
    }

    /// Once a tick: lost packagers and default ones that registered (with `livePackagers` known,
    /// each endpoint with its node id; empty: keep every placement), and workers that missed
    /// their heartbeats.
    public mutating func tick(now: ContinuousClock.Instant, livePackagers: [String: String]) -> [Action] {
        var actions: [Action] = []
        if !livePackagers.isEmpty {
            for id in placements.keys.sorted() {
                guard let chosen = placements[id]?.packager else { continue }
                if let node = livePackagers[chosen] {
                    if placements[id]?.packagerRegistered == false {
                        placements[id]?.packagerRegistered = true
                        actions.append(.packagerRegistered(stream: id, node: node))
                    }
                    continue
                }
                placements[id]?.packager = nil
                guard let worker = placements[id]?.worker else { continue }
                actions.append(.packagerLost(stream: id, packager: chosen))
                actions += lease(id, to: worker, replacing: .packagerLost)
            }
        }
        for (worker, orphaned) in registry.expire(now: now) {
            actions.append(.workerLost(worker: worker, streams: orphaned.sorted()))
            for id in orphaned.sorted() {
                placements[id]?.worker = nil
                placements[id]?.handoff = false
                actions.append(.leaseEnded(stream: id, reason: .workerSilent))
                actions += assign(id)
            }
        }
        return actions
    }

    /// Sending to `worker` failed (unroutable, or at its high-water mark): it is dropped, and its
    /// streams wait for the next worker to be heard or their next unit.
    public mutating func unreachable(_ worker: String) -> [Action] {
        registry.remove(worker).sorted().compactMap { id in
            guard placements[id] != nil else { return nil }
            placements[id]?.worker = nil
            placements[id]?.handoff = false
            return .leaseEnded(stream: id, reason: .workerUnreachable)
        }
    }

    private mutating func assign(_ id: Int64) -> [Action] {
        guard let p = placements[id], p.worker == nil, p.hasMedia, let worker = registry.leastLoaded(cost: p.cost) else { return [] }
        return lease(id, to: worker, replacing: .workerUnreachable)
    }

    private mutating func lease(_ id: Int64, to worker: String, replacing reason: LeaseEndReason) -> [Action] {
        registry.unassign(id)
        registry.assign(id, to: worker, cost: placements[id]?.cost ?? SourceCost.unknown)
        let replay = placements[id]?.hadWorker ?? false
        placements[id]?.worker = worker
        placements[id]?.hadWorker = true
        return [.lease(stream: id, worker: worker, replacing: reason, replay: replay)]
    }
}
