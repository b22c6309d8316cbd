/// Whose media a packager takes for each stream, as a pure decider with the clock as a
/// parameter (issue 23: an allowed node that knows a live stream's id must not push pictures
/// into it, end it, or replace its thumbnail).
///
/// A stream's holder is the sender (its authenticated name, the ZAP User-Id) of the newest
/// announce whose lease ticket verified (``LeaseTicketKey``: ingest made it for that stream,
/// that name and that worker). Units, thumbnails and ends of the stream are taken from the
/// holder only; from anyone else they are refused and counted.
///
/// - A newer lease (a later grant time) takes the stream over: a failover or a drain hand-over.
///   The previous holder's last units are still taken for ``handoverGrace`` (a draining worker
///   flushes its encoders after the new one started).
/// - An older lease is refused while the holder is heard, so a stopped worker that resumes
///   cannot take back the stream. After ``silentHolder`` without media from the holder, any
///   valid lease takes it (an ingest restarted with its clock behind grants older-looking
///   leases).
/// - Without a valid ticket an announce is refused; the stream's holder is unchanged.
///
/// With role keys every worker is named `transcoder`, so the holder is a role, not a node: give
/// workers node keys (`storecast keys DIR --node NAME`) to bind each stream to one node.
struct MediaAdmission: Sendable {
    static let handoverGrace: Duration = .seconds(2)
    static let silentHolder: Duration = .seconds(3)
    /// Holders not heard for this long are forgotten (their streams ended long ago).
    static let forgetAfter: Duration = .seconds(600)

    enum Verdict: Sendable, Equatable {
        case accept
        /// Accepted, and `sender` now holds the stream (it held none before, or `from` did).
        case holder(from: String?)
        case refuse(reason: String)
    }

    private struct Holder: Sendable {
        var sender: String
        var grantedAt: UInt64
        var lastHeard: ContinuousClock.Instant
    }

    private var holders: [Int64: Holder] = [:]
    private var previous: [Int64: (sender: String, until: ContinuousClock.Instant)] = [:]

    /// An announce of `streamID` from `sender`; `grantedAt` is its ticket's grant time when the
    /// ticket verified for that stream, name and sender, else nil.
    mutating func announce(streamID: Int64, sender: String, grantedAt: UInt64?, now: ContinuousClock.Instant) -> Verdict {
        guard let grantedAt else { return .refuse(reason: "its lease ticket is missing or not ingest's for this stream and sender") }
        guard let holder = holders[streamID] else {
            holders[streamID] = Holder(sender: sender, grantedAt: grantedAt, lastHeard: now)
            return .holder(from: nil)
        }
        if holder.sender == sender && holder.grantedAt == grantedAt {
            holders[streamID]!.lastHeard = now
            return .accept
        }
        guard grantedAt > holder.grantedAt || now - holder.lastHeard > Self.silentHolder else {
            return .refuse(reason: "its lease is older than the one \(holder.sender) holds")
        }
        if holder.sender != sender { previous[streamID] = (holder.sender, now + Self.handoverGrace) }
        holders[streamID] = Holder(sender: sender, grantedAt: grantedAt, lastHeard: now)
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
