import Foundation
import StorecastRuntime
import StorecastTestSupport
import Testing

/// Lease tickets (issue 23): ingest's proof that a worker holds a stream, made with a key that
/// only ingest and packagers can derive. The golden ticket was computed apart from this code,
/// with Python's `cryptography` (X25519, HKDF-SHA256, HMAC-SHA256) from the layout in
/// schemas/wire.md (stream 42, session 7, shop/live, worker edge-7, expiring 120 s after its grant).
@Suite struct LeaseTicketTests {
    static let ingestSecret = Array(UInt8(1)...32), packagerSecret = Array(UInt8(33)...64)
    static let ingestPublic = Hex.bytes("07a37cbc142093c8b755dc1b10e86cb426374ad16aa853ed0bdfc0b2b86d1c7c")
    static let packagerPublic = Hex.bytes("5869aff450549732cbaaed5e5df9b30a6da31cb0e5742bad5ad4a1a768f1a67b")
    static let golden = "0000019abf88b9fb0000019abf8a8ebb492f0a56e16cdaa818356c0e89a732ab5f9a21c913bdcd4bbe858a7a701b9950"
    static let grantedAt: UInt64 = 1_764_150_000_123, expiresAt: UInt64 = 1_764_150_120_123

    static func ingest() throws -> LeaseTicketKey { try LeaseTicketKey(secretKey: ingestSecret, peerPublicKey: packagerPublic) }
    static func packager() throws -> LeaseTicketKey { try LeaseTicketKey(secretKey: packagerSecret, peerPublicKey: ingestPublic) }

    @Test func ingestSignsTheGoldenTicketAndThePackagerDerivesTheSameKey() throws {
        let ticket = try Self.ingest().ticket(streamID: 42, sessionID: 7, tenant: "shop", stream: "live", worker: "edge-7", grantedAt: Self.grantedAt, expiresAt: Self.expiresAt)
        #expect(Hex.string(ticket) == Self.golden)
        #expect(try Self.packager().verify(Hex.bytes(Self.golden), streamID: 42, sessionID: 7, tenant: "shop", stream: "live", worker: "edge-7")
                == LeaseTicketKey.Proof(grantedAt: Self.grantedAt, expiresAt: Self.expiresAt))
    }

    /// Anything but the exact stream, name, worker and bytes fails.
    static let refusals: [(name: String, ticket: @Sendable (inout [UInt8]) -> Void, streamID: Int64, tenant: String, stream: String, worker: String)] = [
        ("another stream id", { _ in }, 43, "shop", "live", "edge-7"),
        ("another publish session (checked below)", { _ in }, 42, "shop", "live", "edge-7"),
        ("another tenant", { _ in }, 42, "shop2", "live", "edge-7"),
        ("another stream name", { _ in }, 42, "shop", "live2", "edge-7"),
        ("another worker (a stolen ticket)", { _ in }, 42, "shop", "live", "rogue"),
        ("the role instead of the node", { _ in }, 42, "shop", "live", "transcoder"),
        ("names that only concatenate alike", { _ in }, 42, "shopl", "ive", "edge-7"),
        ("a later grant time", { $0[7] ^= 1 }, 42, "shop", "live", "edge-7"),
        ("a later expiry (a worker extending its own lease)", { $0[13] ^= 1 }, 42, "shop", "live", "edge-7"),
        ("a flipped MAC bit", { $0[47] ^= 0x80 }, 42, "shop", "live", "edge-7"),
        ("truncated", { $0.removeLast() }, 42, "shop", "live", "edge-7"),
        ("empty", { $0 = [] }, 42, "shop", "live", "edge-7"),
        ("zeros", { $0 = [UInt8](repeating: 0, count: 48) }, 42, "shop", "live", "edge-7"),
    ]

    @Test(arguments: refusals.indices)
    func aTicketForAnythingElseIsRefused(_ i: Int) throws {
        let c = Self.refusals[i]
        var ticket = Hex.bytes(Self.golden)
        c.ticket(&ticket)
        let session: Int64 = c.name.hasPrefix("another publish session") ? 8 : 7
        #expect(try Self.packager().verify(ticket, streamID: c.streamID, sessionID: session, tenant: c.tenant, stream: c.stream, worker: c.worker) == nil, "\(c.name)")
    }

    @Test func aKeyFromOtherRoleKeysRefusesTheTicket() throws {
        // A worker holds neither secret: with its own key it derives another key.
        let worker = try LeaseTicketKey(secretKey: Array(UInt8(65)...96), peerPublicKey: Self.ingestPublic)
        let forged = worker.ticket(streamID: 42, sessionID: 7, tenant: "shop", stream: "live", worker: "edge-7", grantedAt: 1, expiresAt: .max)
        #expect(try Self.packager().verify(forged, streamID: 42, sessionID: 7, tenant: "shop", stream: "live", worker: "edge-7") == nil)
    }

    @Test func durationsAndDatesInMilliseconds() {
        #expect(LeaseTicketKey.milliseconds(LeaseTicketKey.defaultValidity) == 120_000)
        #expect(LeaseTicketKey.milliseconds(.milliseconds(1_500)) == 1_500)
        #expect(LeaseTicketKey.milliseconds(Date(timeIntervalSince1970: 1_764_150_000.123)) == 1_764_150_000_123)
        #expect(LeaseTicketKey.milliseconds(Date(timeIntervalSince1970: -5)) == 0)
    }

    @Test func grantTimesOnlyIncrease() {
        var clock = LeaseGrantClock()
        let now = Date(timeIntervalSince1970: 1_764_150_000)
        let first = clock.next(now: now)
        #expect(first == 1_764_150_000_000)
        #expect(clock.next(now: now) == first + 1, "the same millisecond")
        #expect(clock.next(now: now.addingTimeInterval(-60)) == first + 2, "the clock stepped back")
        #expect(clock.next(now: now.addingTimeInterval(1)) == first + 1000)
    }
}
