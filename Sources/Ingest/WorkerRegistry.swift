import StorecastWire

/// Transcoder workers known to this ingest, their liveness and their streams (Paranoid Pirate:
/// a worker that misses ``livenessBeats`` heartbeats is dead), each stream weighed in slots by
/// ``SourceCost``. Pure: time is a parameter.
public struct WorkerRegistry: Sendable {
    public static let heartbeatInterval: Duration = .seconds(1)
    public static let livenessBeats = 3

    public struct Worker: Sendable, Equatable {
        public var id: String
        public var capacity: Int
        public var lastSeen: ContinuousClock.Instant
        /// Each stream's cost in slots.
        public var costs: [Int64: Double] = [:]
        public var streams: Set<Int64> { Set(costs.keys) }
        public var freeSlots: Double { Double(capacity) - costs.values.reduce(0, +) }
        /// Slack for sums of costs that should fit exactly.
        static let tolerance = 0.0005
        func fits(_ cost: Double) -> Bool { capacity > 0 && (freeSlots + Self.tolerance >= cost || costs.isEmpty) }
    }

    public private(set) var workers: [String: Worker] = [:]
    /// The most slots a worker is believed to have, whatever it claims: a peer claiming 65535
    /// would otherwise be leased every new stream (issue 23).
    public let maximumCapacity: Int
    public static let defaultMaximumCapacity = 8

    public init(maximumCapacity: Int = WorkerRegistry.defaultMaximumCapacity) { self.maximumCapacity = max(1, maximumCapacity) }

    /// Records a READY or HEARTBEAT. Returns true when the worker is new to us.
    @discardableResult
    public mutating func heard(from status: WorkerStatus, at now: ContinuousClock.Instant) -> Bool {
        if var w = workers[status.workerID] {
            w.capacity = min(Int(status.capacity), maximumCapacity)
            w.lastSeen = now
            workers[status.workerID] = w
            return false
        }
        workers[status.workerID] = Worker(id: status.workerID, capacity: min(Int(status.capacity), maximumCapacity), lastSeen: now)
        return true
    }

    /// The live worker with the most free slots that fit a stream costing `cost` (ties: fewest
    /// streams, then id for determinism). A source bigger than any worker's free slots goes to an
    /// idle worker, alone, rather than nowhere.
    public func leastLoaded(cost: Double = SourceCost.unknown) -> String? {
        workers.values
            .filter { $0.fits(cost) }
            .max { a, b in
                if a.freeSlots != b.freeSlots { return a.freeSlots < b.freeSlots }
                if a.costs.count != b.costs.count { return a.costs.count > b.costs.count }
                return a.id > b.id
            }?.id
    }

    public mutating func assign(_ stream: Int64, to worker: String, cost: Double = SourceCost.unknown) {
        workers[worker]?.costs[stream] = cost
    }

    /// The stream's cost is better known now (its frame rate was measured): its worker keeps it.
    public mutating func reweigh(_ stream: Int64, cost: Double) {
        for id in workers.keys where workers[id]?.costs[stream] != nil { workers[id]?.costs[stream] = cost }
    }

    public mutating func unassign(_ stream: Int64) {
        for id in workers.keys { workers[id]?.costs[stream] = nil }
    }

    /// Removes a worker and returns the streams it held.
    public mutating func remove(_ worker: String) -> Set<Int64> {
        workers.removeValue(forKey: worker)?.streams ?? []
    }

    /// Drops workers silent for longer than the liveness window; returns (worker, its streams).
    public mutating func expire(now: ContinuousClock.Instant) -> [(String, Set<Int64>)] {
        let limit = Self.heartbeatInterval * Self.livenessBeats
        let dead = workers.values.filter { now - $0.lastSeen > limit }.map(\.id).sorted()
        return dead.map { ($0, remove($0)) }
    }
}
