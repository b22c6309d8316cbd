import Crypto
import Foundation

/// Proof that ingest leased a stream to a worker, which a packager checks before it takes that
/// worker's media for the stream (issue 23: an allowed node must not push into another's show).
///
/// Ingest writes a ticket into each `assign`; the worker copies it into every `streamAnnounce`
/// it sends the packager; the packager checks it against the announce's stream id and name and
/// the sender's authenticated name (its ZAP User-Id), and from then on takes that stream's
/// media from that sender only (``LeaseTicketKey`` signs and checks; the packager's
/// `MediaAdmission` decides). A ticket is `u64 grantedAt (ms, increasing per ingest) ‖
/// u64 expiresAt (ms) ‖ HMAC-SHA256(key, "storecast-lease-3" ‖ i64 streamID ‖ i64 sessionID ‖
/// str tenant ‖ str stream ‖ str worker ‖ u64 grantedAt ‖ u64 expiresAt)`, strings as `u16`
/// length and UTF-8 (schemas/wire.md). It names the publish session, so a ticket of an earlier
/// session (a worker that once held the stream) cannot claim a later one; and it expires
/// (``defaultValidity``), so a worker that held the stream once cannot claim it again later:
/// ingest renews the holder's ticket every quarter of the validity (`leaseRenewal`) with the
/// same grant time, and the worker's announces carry the newest.
///
/// The key is shared by ingest and packagers only, with no file of its own: X25519 between the
/// ingest role's secret key and the packager role's public key (the packager computes the same
/// from its secret key and ingest's public key), through HKDF-SHA256. Workers hold neither
/// secret key, so they can carry tickets but not make them.
public struct LeaseTicketKey: Sendable {
    public static let ticketLength = 8 + 8 + 32
    /// How long a ticket is good for after ingest wrote it (ingest's `--lease-ticket-validity`).
    /// Ingest renews its holders' tickets every quarter of it: three renewals may be lost before
    /// a ticket lapses.
    public static let defaultValidity: Duration = .seconds(120)
    /// How long after its expiry a packager still takes a ticket, for a packager's clock that
    /// runs ahead of ingest's (the packager's `--lease-clock-skew`; nodes keep time with NTP).
    public static let defaultClockSkewAllowance: Duration = .seconds(30)
    private static let label = Array("storecast-lease-3".utf8)

    /// What a ticket that verified proves.
    public struct Proof: Sendable, Equatable {
        /// When ingest granted the lease (ms; the same in every renewal of one lease).
        public var grantedAt: UInt64
        /// When this ticket lapses (ms of ingest's wall clock).
        public var expiresAt: UInt64
        public init(grantedAt: UInt64, expiresAt: UInt64) {
            self.grantedAt = grantedAt
            self.expiresAt = expiresAt
        }
    }
    /// The HMAC key's bytes (SymmetricKey is not Sendable).
    private let keyBytes: [UInt8]
    private var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// The key between the holder of `secretKey` and the holder of the secret of `peerPublicKey`
    /// (32-byte X25519 keys, as CURVE's).
    public init(secretKey: [UInt8], peerPublicKey: [UInt8]) throws {
        let mine = try Curve25519.KeyAgreement.PrivateKey(rawRepresentation: secretKey)
        let theirs = try Curve25519.KeyAgreement.PublicKey(rawRepresentation: peerPublicKey)
        let shared = try mine.sharedSecretFromKeyAgreement(with: theirs)
        let derived = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: Self.label, sharedInfo: Array("ingest-packager".utf8), outputByteCount: 32)
        keyBytes = derived.withUnsafeBytes { Array($0) }
    }

    /// A ticket for `worker` (its authenticated name) holding `streamID` (`tenant/stream`) for
    /// publish session `sessionID`, good until `expiresAt`.
    public func ticket(streamID: Int64, sessionID: Int64, tenant: String, stream: String, worker: String, grantedAt: UInt64, expiresAt: UInt64) -> [UInt8] {
        var ticket = Self.bigEndian(grantedAt) + Self.bigEndian(expiresAt)
        ticket += Array(HMAC<SHA256>.authenticationCode(for: Self.message(streamID, sessionID, tenant, stream, worker, grantedAt, expiresAt), using: key))
        return ticket
    }

    /// The ticket's grant and expiry times when it is this key's for exactly these, else nil
    /// (whether it has expired is the caller's decision, with its clock).
    public func verify(_ ticket: [UInt8], streamID: Int64, sessionID: Int64, tenant: String, stream: String, worker: String) -> Proof? {
        guard ticket.count == Self.ticketLength else { return nil }
        let proof = Proof(grantedAt: Self.uint64(ticket[0..<8]), expiresAt: Self.uint64(ticket[8..<16]))
        let message = Self.message(streamID, sessionID, tenant, stream, worker, proof.grantedAt, proof.expiresAt)
        guard HMAC<SHA256>.isValidAuthenticationCode(ticket.suffix(32), authenticating: message, using: key) else { return nil }
        return proof
    }

    /// Milliseconds since 1970 of `date`, the unit of grant and expiry times.
    public static func milliseconds(_ date: Date) -> UInt64 { UInt64(max(0, (date.timeIntervalSince1970 * 1000).rounded())) }

    /// Milliseconds in `duration`.
    public static func milliseconds(_ duration: Duration) -> UInt64 { UInt64(max(0, duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)) }

    private static func uint64(_ bytes: ArraySlice<UInt8>) -> UInt64 { bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }

    private static func message(_ streamID: Int64, _ sessionID: Int64, _ tenant: String, _ stream: String, _ worker: String, _ grantedAt: UInt64, _ expiresAt: UInt64) -> [UInt8] {
        var bytes = label
        bytes += bigEndian(UInt64(bitPattern: streamID))
        bytes += bigEndian(UInt64(bitPattern: sessionID))
        for text in [tenant, stream, worker] {
            let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
            bytes += [UInt8(utf8.count >> 8), UInt8(utf8.count & 0xFF)] + utf8
        }
        bytes += bigEndian(grantedAt) + bigEndian(expiresAt)
        return bytes
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}

/// Grant times for tickets: milliseconds of the wall clock, but always above the last one, so
/// a later lease of this ingest has the later time even if the clock steps back.
public struct LeaseGrantClock: Sendable {
    private var last: UInt64 = 0
    public init() {}
    public mutating func next(now: Date) -> UInt64 {
        last = max(last + 1, LeaseTicketKey.milliseconds(now))
        return last
    }
}
