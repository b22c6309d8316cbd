/// Wrong secrets (stream keys at ingest, API keys and tokens at the API) from one address or for
/// one key id, and how long it must wait before the next is checked (issue 23: one client tried
/// 140 stream keys a second, each a database query). A pure
/// decider with the clock as a parameter: after ``freeFailures`` wrong keys within
/// ``window``, each further one doubles the wait from ``firstPenalty`` up to ``maximumPenalty``;
/// a right key clears the address. While an address waits, its publishes are refused without
/// a query. Bounded: at most ``maximumAddresses`` are remembered (the oldest go first).
public struct KeyFailureBackoff: Sendable {
    public static let freeFailures = 5
    public static let window: Duration = .seconds(60)
    public static let firstPenalty: Duration = .seconds(1)
    public static let maximumPenalty: Duration = .seconds(60)
    public static let maximumAddresses = 10_000

    struct Record: Sendable, Equatable {
        var failures: Int
        var firstFailure: ContinuousClock.Instant
        var blockedUntil: ContinuousClock.Instant?
    }

    private(set) var records: [String: Record] = [:]

    public init() {}

    /// How long `address` must still wait, or nil when its key may be checked now.
    public func wait(_ address: String, now: ContinuousClock.Instant) -> Duration? {
        guard let until = records[address]?.blockedUntil, until > now else { return nil }
        return until - now
    }

    /// A wrong key from `address`; returns the wait it now has (nil: none yet).
    @discardableResult
    public mutating func failed(_ address: String, now: ContinuousClock.Instant) -> Duration? {
        var record = records[address] ?? Record(failures: 0, firstFailure: now)
        if now - record.firstFailure > Self.window, record.blockedUntil.map({ $0 <= now }) ?? true {
            record = Record(failures: 0, firstFailure: now)
        }
        record.failures += 1
        var penalty: Duration?
        if record.failures > Self.freeFailures {
            let doublings = min(record.failures - Self.freeFailures - 1, 16)
            penalty = min(Self.firstPenalty * (1 << doublings), Self.maximumPenalty)
            record.blockedUntil = now + penalty!
        }
        if records[address] == nil, records.count >= Self.maximumAddresses { evict(now: now) }
        records[address] = record
        return penalty
    }

    /// A right key: the address starts over.
    public mutating func succeeded(_ address: String) { records[address] = nil }

    /// Makes room: the record with the oldest first failure among those not waiting now, else
    /// the one whose wait ends first. So a flood of new addresses (or key ids) cannot push out
    /// one that is waiting for a long time, the one under attack.
    private mutating func evict(now: ContinuousClock.Instant) {
        var free: (key: String, since: ContinuousClock.Instant)?, soonest: (key: String, until: ContinuousClock.Instant)?
        for (key, record) in records {  // one pass, nothing copied: this runs for every new address once full
            if let until = record.blockedUntil, until > now {
                if soonest.map({ until < $0.until }) ?? true { soonest = (key, until) }
            } else if free.map({ record.firstFailure < $0.since }) ?? true {
                free = (key, record.firstFailure)
            }
        }
        if let victim = free?.key ?? soonest?.key { records[victim] = nil }
    }
}
