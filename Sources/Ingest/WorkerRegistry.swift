import StorecastWire

/// Transcoder workers known to this ingest, their liveness and their streams (Paranoid Pirate:
/// a worker that misses ``livenessBeats`` heartbeats is dead). Pure: time is a parameter.
public struct WorkerRegistry: Sendable {
    public static let heartbeatInterval: Duration = .seconds(1)
    public static let livenessBeats = 3

    public struct Worker: Sendable, Equatable {
        public var id: String
        public var capacity: Int
        public var lastSeen: ContinuousClock.Instant
        public var streams: Set<Int64>
        public var freeSlots: Int { capacity - streams.count }
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
        workers[status.workerID] = Worker(id: status.workerID, capacity: min(Int(status.capacity), maximumCapacity), lastSeen: now, streams: [])
        return true
    }

    /// The live worker with the most free slots (ties: fewest streams, then id for determinism).
    public func leastLoaded() -> String? {
        workers.values
            .filter { $0.freeSlots > 0 }
            .max { a, b in
                if a.freeSlots != b.freeSlots { return a.freeSlots < b.freeSlots }
                if a.streams.count != b.streams.count { return a.streams.count > b.streams.count }
                return a.id > b.id
            }?.id
    }

    public mutating func assign(_ stream: Int64, to worker: String) {
        workers[worker]?.streams.insert(stream)
    }

    public mutating func unassign(_ stream: Int64) {
        for id in workers.keys { workers[id]?.streams.remove(stream) }
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
