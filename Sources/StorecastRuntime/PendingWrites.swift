/// The writes about live streams that nothing waits for (a stream's status, a session's details
/// and end, transcoder leases, a recording's outcome), as a decider: what to write next, when to
/// try again while PostgreSQL is away, and what to give up on. The clock is a parameter; the
/// shell (``DatabaseWriteBehind``) runs the writes and reports back.
///
/// - Writes run one at a time, in the order they were recorded, so a lease granted and then
///   ended lands in that order. While the first one fails because the database cannot be reached,
///   the rest wait behind it (they would fail too), and it is tried again after a backoff that
///   doubles from `firstRetry` up to `longestRetry`.
/// - A write recorded with a `key` replaces a pending one with the same key (a stream's status:
///   only the latest matters) and takes its place at the end of the queue, where it belongs in time.
/// - Nothing is given up silently: a write the database refuses (not a lost connection), one
///   pushed out of a full queue, or one older than `maximumAge` comes back as ``Dropped``, for
///   the shell to log and count.
public struct PendingWrites<Write> {
    public struct Configuration: Sendable {
        public var capacity: Int
        public var maximumAge: Duration
        public var firstRetry: Duration
        public var longestRetry: Duration

        public init(capacity: Int = 10_000, maximumAge: Duration = .seconds(3600), firstRetry: Duration = .milliseconds(250), longestRetry: Duration = .seconds(5)) {
            self.capacity = max(1, capacity)
            self.maximumAge = maximumAge
            self.firstRetry = firstRetry
            self.longestRetry = longestRetry
        }
    }

    public struct Entry {
        public let id: UInt64
        /// What the write records, for logs and metrics ("session end", "lease grant").
        public let what: String
        public let key: String?
        public let write: Write
        public let recorded: ContinuousClock.Instant
        public var failures: Int
    }

    public enum DropReason: String, Sendable, Equatable {
        /// The database answered with an error that retrying cannot fix.
        case refused
        /// The queue was full; the oldest write made room.
        case queueFull = "queue_full"
        /// Still not written `maximumAge` after it was recorded.
        case expired
    }

    public struct Dropped: Equatable, Sendable {
        public let what: String
        public let reason: DropReason
        public let failures: Int

        public init(what: String, reason: DropReason, failures: Int) {
            self.what = what
            self.reason = reason
            self.failures = failures
        }
    }

    public enum Step {
        /// Run this write and report ``succeeded()`` or ``failed(retryable:now:)``.
        case write(Entry)
        /// The first write failed; nothing runs before this instant.
        case waitUntil(ContinuousClock.Instant)
        /// Nothing to write.
        case idle
    }

    public let configuration: Configuration
    private var entries: [Entry] = []
    private var nextID: UInt64 = 0
    /// The entry handed out by ``next(now:)`` and not yet reported.
    private var running: UInt64?
    private var retryAt: ContinuousClock.Instant?

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// Records a write. Returns what had to be dropped to make room.
    public mutating func record(_ what: String, key: String? = nil, write: Write, now: ContinuousClock.Instant) -> [Dropped] {
        let running = self.running
        if let key, let index = entries.firstIndex(where: { $0.key == key && $0.id != running }) {
            entries.remove(at: index)
        }
        var dropped: [Dropped] = []
        while entries.count >= configuration.capacity, let index = entries.firstIndex(where: { $0.id != running }) {
            let old = entries.remove(at: index)
            dropped.append(Dropped(what: old.what, reason: .queueFull, failures: old.failures))
        }
        nextID += 1
        entries.append(Entry(id: nextID, what: what, key: key, write: write, recorded: now, failures: 0))
        return dropped
    }

    /// What to do now. Writes older than `maximumAge` are dropped first.
    public mutating func next(now: ContinuousClock.Instant) -> (step: Step, dropped: [Dropped]) {
        var dropped: [Dropped] = []
        let (running, maximumAge) = (self.running, configuration.maximumAge)
        entries.removeAll { entry in
            guard entry.id != running, entry.recorded.duration(to: now) > maximumAge else { return false }
            dropped.append(Dropped(what: entry.what, reason: .expired, failures: entry.failures))
            return true
        }
        if self.running != nil { return (.idle, dropped) }  // one at a time: the shell reports first
        guard let first = entries.first else { return (.idle, dropped) }
        if let retryAt, now < retryAt { return (.waitUntil(retryAt), dropped) }
        self.running = first.id
        return (.write(first), dropped)
    }

    /// The running write is in the database.
    public mutating func succeeded() {
        guard let id = running else { return }
        running = nil
        retryAt = nil
        entries.removeAll { $0.id == id }
    }

    /// The running write failed. A lost connection keeps it first and waits before the next try;
    /// any other error drops it (the database refused it: retrying cannot help).
    public mutating func failed(retryable: Bool, now: ContinuousClock.Instant) -> Dropped? {
        guard let id = running, let index = entries.firstIndex(where: { $0.id == id }) else {
            running = nil
            return nil
        }
        running = nil
        guard retryable else {
            let entry = entries.remove(at: index)
            return Dropped(what: entry.what, reason: .refused, failures: entry.failures + 1)
        }
        entries[index].failures += 1
        retryAt = now.advanced(by: backoff(after: entries[index].failures))
        return nil
    }

    /// The wait after `failures` failed tries in a row: `firstRetry`, doubled each time, at most
    /// `longestRetry`.
    public func backoff(after failures: Int) -> Duration {
        var wait = configuration.firstRetry
        for _ in 1..<max(1, failures) where wait < configuration.longestRetry { wait *= 2 }
        return min(wait, configuration.longestRetry)
    }
}
extension PendingWrites: Sendable where Write: Sendable {}
extension PendingWrites.Entry: Sendable where Write: Sendable {}
