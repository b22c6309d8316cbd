/// Wrong secrets for one API key id, from anywhere (issue 16: failed authentication is limited
/// per key prefix as well as per address). A pure decider with the clock as a parameter.
///
/// Key ids are public, so a limit that refused a key outright would let anyone lock a tenant's
/// key out. Instead, once an id is over its budget (``KeyFailureBackoff``'s: 5 wrong secrets in
/// a minute, then a wait doubling from 1 s to 60 s), a presented secret is compared with the
/// key's stored hash held in memory (read from the database again once it is
/// ``memoLifetime`` old): the right secret goes on to the usual check, a wrong one is refused with
/// 429 and no database query. So a spray of guesses at one key, from however many addresses,
/// costs the database about one query per ``memoLifetime``, and the key's owner is not refused
/// (but for up to ``memoLifetime`` after its suspended tenant is resumed).
public struct KeyIDThrottle: Sendable {
    /// How long a key's stored hash is trusted in memory (a revocation reaches the check within it).
    public static let memoLifetime: Duration = .seconds(5)
    /// Most keys whose hash is held (only keys over their budget are).
    public static let maximumMemos = 10_000

    public enum Decision: Sendable, Equatable {
        /// The usual check: the row by id, the secret against its hash.
        case check
        /// Read the key's stored hash (``remember(_:storedHash:now:)``), then decide again.
        case refresh
        /// A wrong secret while the id is over its budget: 429, nothing looked up.
        case refuse(wait: Duration)
    }

    struct Memo: Sendable, Equatable {
        /// nil: no usable key has this id (none, revoked, or its tenant suspended).
        var storedHash: String?
        var readAt: ContinuousClock.Instant
    }

    private var backoff = KeyFailureBackoff()
    private var memos: [String: Memo] = [:]

    public init() {}

    /// What to do with `secretHash` (the presented secret's SHA-256, hex) for key `id`.
    public func decide(_ id: String, secretHash: String, now: ContinuousClock.Instant) -> Decision {
        guard let wait = backoff.wait(id, now: now) else { return .check }
        guard let memo = memos[id], now - memo.readAt < Self.memoLifetime else { return .refresh }
        guard let stored = memo.storedHash, ConstantTime.equal(secretHash, stored) else { return .refuse(wait: wait) }
        return .check
    }

    /// The key's stored hash as the database has it now (nil: no usable key by that id).
    public mutating func remember(_ id: String, storedHash: String?, now: ContinuousClock.Instant) {
        if memos[id] == nil, memos.count >= Self.maximumMemos {
            memos = memos.filter { backoff.wait($0.key, now: now) != nil }  // ids no longer over their budget first
            if memos.count >= Self.maximumMemos, let oldest = memos.min(by: { $0.value.readAt < $1.value.readAt })?.key { memos[oldest] = nil }
        }
        memos[id] = Memo(storedHash: storedHash, readAt: now)
    }

    /// The key ids whose hash is held (tests).
    var heldHashes: Set<String> { Set(memos.keys) }

    /// A wrong secret for `id` (checked or refused); the wait the id now has (nil: none yet).
    @discardableResult
    public mutating func failed(_ id: String, now: ContinuousClock.Instant) -> Duration? {
        backoff.failed(id, now: now)
    }
}
