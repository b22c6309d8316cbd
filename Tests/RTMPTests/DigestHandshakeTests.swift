import Crypto
@testable import RTMP
import StorecastTestSupport
import Testing

@Suite struct DigestHandshakeTests {
    static let hmac: DigestHandshake.HMACSHA256 = { key, message in
        Array(HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: key)))
    }
    static let digest = DigestHandshake(hmac: hmac)

    @Test func keysAreTheGenuineAdobeConstants() {
        #expect(DigestHandshake.playerKey.count == 62)
        #expect(DigestHandshake.serverKey.count == 68)
        #expect(Hex.string(Array(DigestHandshake.serverKey.prefix(36))) == "47656e75696e652041646f626520466c617368204d656469612053657276657220303031")
    }

    /// ffmpeg's real C1 (from the ffmpeg-publish capture) carries a digest in the offset-at-8 scheme.
    @Test func validatesFFmpegsC1() throws {
        let capture = try Fixtures.bytes("Transcripts/ffmpeg-publish.bin")
        let c1 = Array(capture[1...1536])
        let found = try #require(Self.digest.validate(c1: c1))
        #expect(found.scheme == .offsetAt8)
        var tampered = c1
        tampered[100] ^= 0xFF
        #expect(Self.digest.validate(c1: tampered) == nil)
    }

    @Test func plainC1IsNotADigestC1() throws {
        let capture = try Fixtures.bytes("Transcripts/gstreamer-rtmpsink-publish.bin")
        #expect(Self.digest.validate(c1: Array(capture[1...1536])) == nil)
    }

    /// The server's S1 and S2 pass the checks librtmp's FP9 handshake makes.
    @Test func serverPacketsVerifyAsAClientWouldCheckThem() throws {
        let capture = try Fixtures.bytes("Transcripts/ffmpeg-publish.bin")
        var h = HandshakeStateMachine(serverTime: 7, digest: Self.digest)
        let actions = try h.feed(Array(capture[0...1536]))
        guard case .send(let out) = actions.first else { Issue.record("no S0S1S2"); return }
        #expect(h.usedDigest)
        let s1 = Array(out[1...1536]), s2 = Array(out[1537...])
        // S1: digest under the 36-byte server key at the offset-at-8 position.
        let offset = DigestHandshake.Scheme.offsetAt8.digestOffset(in: s1)
        let message = Array(s1[..<offset]) + Array(s1[(offset + 32)...])
        #expect(Self.hmac(Array(DigestHandshake.serverKey.prefix(36)), message) == Array(s1[offset..<offset + 32]))
        #expect(s1[4] != 0, "non-zero version so clients check the digest")
        // S2: signed with HMAC(server key 68, client digest).
        let clientDigest = try #require(Self.digest.validate(c1: Array(capture[1...1536]))).digest
        let key = Self.hmac(DigestHandshake.serverKey, clientDigest)
        #expect(Self.hmac(key, Array(s2[..<1504])) == Array(s2[1504...]))
    }

    @Test func withoutDigestSupportFFmpegGetsThePlainEcho() throws {
        let capture = try Fixtures.bytes("Transcripts/ffmpeg-publish.bin")
        var h = HandshakeStateMachine()
        guard case .send(let out) = try h.feed(Array(capture[0...1536])).first else { Issue.record("no S0S1S2"); return }
        #expect(!h.usedDigest)
        #expect(Array(out[1537...]) == Array(capture[1...1536]))
    }
}

@Suite struct DigestC1Tests {
    /// A C1 we sign validates in its own scheme, and a flipped byte anywhere outside the digest
    /// breaks it.
    @Test(arguments: [DigestHandshake.Scheme.offsetAt8, .offsetAt772])
    func signedC1Validates(_ scheme: DigestHandshake.Scheme) throws {
        var rng = SeededGenerator(seed: 42)
        let random = (0..<1528).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let c1 = DigestHandshakeTests.digest.c1(scheme: scheme, time: 0, version: [0x0A, 0x00, 0x00, 0x01], random: random)
        #expect(c1.count == 1536 && Array(c1[4..<8]) == [0x0A, 0x00, 0x00, 0x01])
        let found = try #require(DigestHandshakeTests.digest.validate(c1: c1))
        #expect(found.scheme == scheme)
        var broken = c1
        broken[scheme == .offsetAt8 ? 1000 : 20] ^= 0x01
        #expect(DigestHandshakeTests.digest.validate(c1: broken) == nil)
    }
}
