@testable import Packager
import StorecastRuntime
import Testing

/// Whose media a packager takes for a stream (issue 23), as a golden table: announces with
/// their verified grant times (nil: no valid ticket) and media from senders, with the clock as
/// a parameter. The wall clock is the table's milliseconds plus 1,000,000; a ticket expires at
/// `expires` (default far ahead).
@Suite struct MediaAdmissionTests {
    enum Step {
        /// An announce at `at` ms from `sender` whose ticket proved `lease` (session, grant time;
        /// nil: it did not verify).
        case announce(at: Int, String, lease: (Int64, UInt64)?, expires: UInt64 = .max / 2, MediaAdmission.Verdict)
        /// A unit (or thumbnail, or end) at `at` ms from `sender`, taken or not.
        case media(at: Int, String, Bool)
        case expire(at: Int)
    }

    static let refusedTicket = MediaAdmission.Verdict.refuse(reason: "its lease ticket is missing or not ingest's for this stream, session and sender")
    static func older(than holder: String) -> MediaAdmission.Verdict { .refuse(reason: "its lease is older than the one \(holder) holds") }
    static func expired(_ seconds: Int) -> MediaAdmission.Verdict {
        .refuse(reason: "its lease ticket expired \(seconds) s ago (ingest renews a holder's ticket long before it expires: the sender holds the stream no longer, or this node's clock is ahead of ingest's; keep nodes in step with NTP)")
    }
    static let wall: UInt64 = 1_000_000

    static let cases: [(name: String, steps: [Step])] = [
        ("media before any announce is refused", [.media(at: 0, "a", false)]),
        ("the holder's announce, then its media", [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .media(at: 1, "a", true), .announce(at: 2000, "a", lease: (1, 10), .accept)]),
        ("an announce without a valid ticket takes nothing",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .announce(at: 1, "rogue", lease: nil, refusedTicket), .media(at: 2, "rogue", false), .media(at: 3, "a", true)]),
        ("another node's units are refused (the hijack of a known stream id)",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .media(at: 5, "b", false), .media(at: 6, "a", true)]),
        ("a newer lease takes over; the old worker's tail is taken for 2 s, then refused",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .announce(at: 1000, "b", lease: (1, 20), .holder(from: "a")),
          .media(at: 1100, "b", true), .media(at: 2900, "a", true), .media(at: 3001, "a", false)]),
        ("a stopped worker that resumes cannot take its stream back",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .announce(at: 1000, "b", lease: (1, 20), .holder(from: "a")),
          .media(at: 5000, "b", true), .announce(at: 5500, "a", lease: (1, 10), older(than: "b")), .media(at: 5600, "a", false)]),
        ("an older lease is refused however long the holder has been silent (a publisher's stall)",
         [.announce(at: 0, "a", lease: (2, 50), .holder(from: nil)), .media(at: 100, "a", true),
          .announce(at: 60_000, "b", lease: (2, 20), older(than: "a")), .media(at: 60_001, "b", false)]),
        ("a worker that held an earlier session cannot claim a later one",
         [.announce(at: 0, "a", lease: (7, 10), .holder(from: nil)), .announce(at: 10, "old", lease: (6, 999_999), older(than: "a")), .media(at: 20, "old", false)]),
        ("a later session takes over whatever its grant time (an ingest restarted, its clock behind)",
         [.announce(at: 0, "a", lease: (3, 50), .holder(from: nil)), .announce(at: 100, "b", lease: (4, 20), .holder(from: "a")), .media(at: 200, "b", true)]),
        ("a new lease of the same worker keeps it the holder",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .announce(at: 60_000, "a", lease: (2, 30), .accept), .media(at: 60_001, "a", true)]),
        ("with role keys every worker is one sender: the role holds the stream",
         [.announce(at: 0, "transcoder", lease: (1, 10), .holder(from: nil)), .announce(at: 1000, "transcoder", lease: (1, 20), .accept), .media(at: 1001, "transcoder", true)]),
        ("a ticket is good until 30 s (clock skew) after it expires",
         [.announce(at: 0, "a", lease: (1, 10), expires: wall + 1000, .holder(from: nil)), .announce(at: 31_000, "a", lease: (1, 10), expires: wall + 1000, .accept)]),
        ("an expired ticket claims nothing where no holder is known (a packager that restarted, a stale worker)",
         [.announce(at: 31_001, "old", lease: (1, 10), expires: wall, expired(31)), .media(at: 31_002, "old", false),
          .announce(at: 32_000, "a", lease: (1, 20), expires: wall + 120_000, .holder(from: nil)), .media(at: 32_001, "a", true)]),
        ("an expired ticket of a later lease does not take over", [
            .announce(at: 0, "a", lease: (1, 10), .holder(from: nil)),
            .announce(at: 200_000, "b", lease: (2, 20), expires: wall + 100_000, expired(100)), .media(at: 200_001, "b", false), .media(at: 200_002, "a", true)]),
        ("the holder's renewed ticket (same grant, later expiry) keeps it the holder", [
            .announce(at: 0, "a", lease: (1, 10), expires: wall + 120_000, .holder(from: nil)),
            .announce(at: 140_000, "a", lease: (1, 10), expires: wall + 150_000, .accept), .media(at: 140_001, "a", true)]),
        ("the holder's own lease is taken expired (an ingest that stopped renewing): it claims nothing new", [
            .announce(at: 0, "a", lease: (1, 10), expires: wall + 1000, .holder(from: nil)),
            .announce(at: 40_000, "a", lease: (1, 10), expires: wall + 1000, .accept), .media(at: 40_001, "a", true),
            .announce(at: 40_002, "a", lease: (1, 11), expires: wall + 1000, expired(39))]),
        ("a holder silent for 10 minutes is forgotten: its media needs a new announce",
         [.announce(at: 0, "a", lease: (1, 10), .holder(from: nil)), .expire(at: 600_001), .media(at: 600_002, "a", false), .announce(at: 600_003, "a", lease: (1, 10), .holder(from: nil))]),
    ]

    @Test(arguments: cases.indices)
    func decisions(_ i: Int) {
        let c = Self.cases[i]
        let zero = ContinuousClock.now
        func at(_ ms: Int) -> ContinuousClock.Instant { zero.advanced(by: .milliseconds(ms)) }
        var admission = MediaAdmission()
        for (index, step) in c.steps.enumerated() {
            switch step {
            case .announce(let t, let sender, let lease, let expires, let expected):
                let ticket = lease.map { MediaAdmission.Ticket(lease: .init(session: $0.0, grantedAt: $0.1), expiresAt: expires) }
                let verdict = admission.announce(streamID: 1, sender: sender, ticket: ticket, wallClock: Self.wall + UInt64(t), now: at(t))
                #expect(verdict == expected, "\(c.name), step \(index)")
            case .media(let t, let sender, let expected):
                #expect(admission.admits(streamID: 1, sender: sender, now: at(t)) == expected, "\(c.name), step \(index)")
            case .expire(let t):
                admission.expire(now: at(t))
            }
        }
    }

    @Test func streamsAreHeldApart() {
        let now = ContinuousClock.now
        var admission = MediaAdmission()
        #expect(admission.announce(streamID: 1, sender: "a", ticket: .init(lease: .init(session: 1, grantedAt: 10), expiresAt: 5000), wallClock: 1000, now: now) == .holder(from: nil))
        #expect(admission.announce(streamID: 2, sender: "b", ticket: .init(lease: .init(session: 2, grantedAt: 11), expiresAt: 5000), wallClock: 1000, now: now) == .holder(from: nil))
        #expect(admission.admits(streamID: 1, sender: "b", now: now) == false)
        #expect(admission.admits(streamID: 2, sender: "a", now: now) == false)
        #expect(admission.admits(streamID: 2, sender: "b", now: now) == true)
    }
}
