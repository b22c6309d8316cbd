import StorecastRuntime

/// Whose media a packager takes for each stream, as a pure decider with the clock as a
/// parameter (issue 23: an allowed node that knows a live stream's id must not push pictures
/// into it, end it, or replace its thumbnail).
///
/// A stream's holder is the sender (its authenticated name, the ZAP User-Id) of the newest
/// announce whose lease ticket verified (``LeaseTicketKey``: ingest made it for that stream,
/// that name, that worker and that publish session). Units, thumbnails and ends of the stream
/// are taken from the holder only; from anyone else they are refused and counted.
///
/// - Leases are ordered by publish session, then by grant time: a lease of a later session (the
///   seller went live again, an ingest restarted) or a later grant in the same session (a
///   failover, a drain hand-over) takes the stream over. The previous holder's last units are
///   still taken for ``handoverGrace`` (a draining worker flushes its encoders after the new one
///   started).
/// - An older lease is always refused: a stopped worker that resumes cannot take back the
///   stream, and a worker that held an earlier session cannot claim a later one.
/// - Without a valid ticket an announce is refused; the stream's holder is unchanged. So is a
///   claim (no holder known, or a takeover) whose ticket expired more than
///   ``clockSkewAllowance`` ago by this node's wall clock: ingest renews its
///   holders' tickets, so an expired one belongs to a worker that no longer holds the stream,
///   which would otherwise claim it wherever no holder is known (on a packager that restarted,
///   or after ``forgetAfter``). The holder's own lease is taken, expired or not: it claims
///   nothing new.
///
/// With role keys every worker is named `transcoder`, so the holder is a role, not a node: give
/// workers node keys (`storecast keys DIR --node NAME`) to bind each stream to one node.
struct MediaAdmission: Sendable {
    static let handoverGrace: Duration = .seconds(2)
    /// How long after its expiry a ticket is still taken (a clock ahead of ingest's).
    let clockSkewAllowance: Duration

    init(clockSkewAllowance: Duration = LeaseTicketKey.defaultClockSkewAllowance) {
        self.clockSkewAllowance = clockSkewAllowance
    }
    /// Holders not heard for this long are forgotten (their streams ended long ago).
    static let forgetAfter: Duration = .seconds(600)

    /// What a verified ticket proves, in the order leases follow one another.
    struct Lease: Sendable, Equatable, Comparable {
        var session: Int64
        var grantedAt: UInt64
        static func < (a: Lease, b: Lease) -> Bool { (a.session, a.grantedAt) < (b.session, b.grantedAt) }
    }

    /// A verified ticket: the lease it proves and when it lapses (ms of ingest's wall clock).
    struct Ticket: Sendable, Equatable {
        var lease: Lease
        var expiresAt: UInt64
    }

    enum Verdict: Sendable, Equatable {
        case accept
        /// Accepted, and `sender` now holds the stream (it held none before, or `from` did).
        case holder(from: String?)
        case refuse(reason: String)
    }

    private struct Holder: Sendable {
        var sender: String
        var lease: Lease
        var lastHeard: ContinuousClock.Instant
    }

    private var holders: [Int64: Holder] = [:]
    private var previous: [Int64: (sender: String, until: ContinuousClock.Instant)] = [:]

    /// An announce of `streamID` from `sender`; `ticket` is what its ticket proved when it
    /// verified for that stream, session, name and sender, else nil. `wallClock` is this node's
    /// time in ms since 1970, `now` its monotonic clock.
    mutating func announce(streamID: Int64, sender: String, ticket: Ticket?, wallClock: UInt64, now: ContinuousClock.Instant) -> Verdict {
        guard let ticket else { return .refuse(reason: "its lease ticket is missing or not ingest's for this stream, session and sender") }
        let lease = ticket.lease
        if let holder = holders[streamID], holder.sender == sender, holder.lease == lease {
            // The holder's own lease claims nothing new, expired or not.
            holders[streamID]!.lastHeard = now
            return .accept
        }
        guard wallClock <= ticket.expiresAt &+ LeaseTicketKey.milliseconds(clockSkewAllowance) else {
            return .refuse(reason: "its lease ticket expired \((wallClock - ticket.expiresAt) / 1000) s ago (ingest renews a holder's ticket long before it expires: the sender holds the stream no longer, or this node's clock is ahead of ingest's; keep nodes in step with NTP)")
        }
        guard let holder = holders[streamID] else {
            holders[streamID] = Holder(sender: sender, lease: lease, lastHeard: now)
            return .holder(from: nil)
        }
        guard lease > holder.lease else {
            return .refuse(reason: "its lease is older than the one \(holder.sender) holds")
        }
        if holder.sender != sender { previous[streamID] = (holder.sender, now + Self.handoverGrace) }
        holders[streamID] = Holder(sender: sender, lease: lease, lastHeard: now)
        return holder.sender == sender ? .accept : .holder(from: holder.sender)
    }

    /// Whether a unit, thumbnail or end of `streamID` from `sender` is taken.
    mutating func admits(streamID: Int64, sender: String, now: ContinuousClock.Instant) -> Bool {
        if holders[streamID]?.sender == sender {
            holders[streamID]!.lastHeard = now
            return true
        }
        guard let previous = previous[streamID], previous.sender == sender else { return false }
        return now < previous.until
    }

    /// Drops holders silent for ``forgetAfter`` and hand-over graces that are over.
    mutating func expire(now: ContinuousClock.Instant) {
        holders = holders.filter { now - $0.value.lastHeard < Self.forgetAfter }
        previous = previous.filter { now < $0.value.until }
    }

    /// The stream's holder (tests, logs).
    func holder(of streamID: Int64) -> String? { holders[streamID]?.sender }
}
