import BinaryCoding
/// The digest ("complex") RTMP handshake of Flash-era and hardware encoders, as librtmp,
/// nginx-rtmp and SRS implement it: C1 carries an HMAC-SHA256 digest at a position derived from
/// four of its bytes; the server proves itself with digests in S1 and S2.
///
/// Pure: the HMAC-SHA256 function is passed in, so this module needs no crypto library.
public struct DigestHandshake: Sendable {
    public typealias HMACSHA256 = @Sendable (_ key: [UInt8], _ message: [UInt8]) -> [UInt8]

    /// "Genuine Adobe Flash Player 001" followed by the shared 32-byte tail (62 bytes).
    public static let playerKey: [UInt8] = Array("Genuine Adobe Flash Player 001".utf8) + sharedTail
    /// "Genuine Adobe Flash Media Server 001" followed by the shared tail (68 bytes).
    public static let serverKey: [UInt8] = Array("Genuine Adobe Flash Media Server 001".utf8) + sharedTail
    /// What C1 digests are made with (the player key's text part) and S1's (the server key's).
    static let playerDigestKey = Array(playerKey.prefix(30))
    static let serverDigestKey = Array(serverKey.prefix(36))
    static let sharedTail: [UInt8] = [
        0xF0, 0xEE, 0xC2, 0x4A, 0x80, 0x68, 0xBE, 0xE8, 0x2E, 0x00, 0xD0, 0xD1, 0x02, 0x9E, 0x7E, 0x57,
        0x6E, 0xEC, 0x5D, 0x2D, 0x29, 0x80, 0x6F, 0xAB, 0x93, 0xB8, 0xE6, 0x36, 0xCF, 0xEB, 0x31, 0xAE,
    ]

    /// Where the digest sits: the offset bytes start at 8 (FP9 "scheme 0" in C1 as ffmpeg writes
    /// it) or at 772.
    public enum Scheme: Sendable, Equatable {
        case offsetAt8, offsetAt772

        var base: Int { self == .offsetAt8 ? 8 : 772 }

        func digestOffset(in packet: [UInt8]) -> Int {
            let sum = packet[base..<base + 4].reduce(0) { $0 + Int($1) }
            return sum % 728 + base + 4
        }
    }

    public let hmac: HMACSHA256

    public init(hmac: @escaping HMACSHA256) {
        self.hmac = hmac
    }

    /// The scheme whose digest validates C1 under the player key, or nil (a plain C1).
    public func validate(c1: [UInt8]) -> (scheme: Scheme, digest: [UInt8])? {
        guard c1.count == HandshakeStateMachine.packetSize, c1[4..<8] != [0, 0, 0, 0] else { return nil }
        for scheme in [Scheme.offsetAt772, .offsetAt8] {
            let offset = scheme.digestOffset(in: c1)
            let digest = Array(c1[offset..<offset + 32])
            if self.digest(of: c1, at: offset, key: Self.playerDigestKey) == digest { return (scheme, digest) }
        }
        return nil
    }

    /// A client's C1 with its digest under the player key (what Flash-era encoders and Larix
    /// send): time, a non-zero version, random bytes, and the digest where `scheme` puts it.
    /// Also what an RTMP client of ours (restreaming) would send.
    public func c1(scheme: Scheme, time: UInt32, version: [UInt8], random: [UInt8]) -> [UInt8] {
        precondition(version.count == 4 && version != [0, 0, 0, 0] && random.count == HandshakeStateMachine.packetSize - 8,
                     "C1 is time, a non-zero version (a zero one means no digest) and 1528 random bytes")
        return sign(time.bigEndianBytes + version + random, scheme: scheme, key: Self.playerDigestKey)
    }

    /// S1 with our digest under the server key, in the client's scheme.
    public func s1(scheme: Scheme, time: UInt32, random: [UInt8]) -> [UInt8] {
        sign(time.bigEndianBytes + [0x0D, 0x0E, 0x0A, 0x0D] + random, scheme: scheme, key: Self.serverDigestKey)
    }

    /// The packet with its digest under `key` written where `scheme` puts it.
    private func sign(_ packet: [UInt8], scheme: Scheme, key: [UInt8]) -> [UInt8] {
        var signed = packet
        let offset = scheme.digestOffset(in: packet)
        signed.replaceSubrange(offset..<offset + 32, with: digest(of: packet, at: offset, key: key))
        return signed
    }

    /// HMAC-SHA256 under `key` of the packet without the 32 digest bytes at `offset`.
    private func digest(of packet: [UInt8], at offset: Int, key: [UInt8]) -> [UInt8] {
        hmac(key, Array(packet[..<offset]) + Array(packet[(offset + 32)...]))
    }

    /// S2: random bytes signed with a key derived from the client's digest.
    public func s2(clientDigest: [UInt8], random: [UInt8]) -> [UInt8] {
        var s2 = random
        let key = hmac(Self.serverKey, clientDigest)
        s2.replaceSubrange(1504..<1536, with: hmac(key, Array(s2[..<1504])))
        return s2
    }
}
