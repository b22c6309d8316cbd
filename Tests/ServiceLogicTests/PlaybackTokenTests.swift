import StorecastRuntime
import Testing

/// Tokens checked against a vector made independently with Python's hmac module:
/// hmac.new(b"s3cret", b"shop/launch/1795000000", sha256), base64url without padding.
@Suite struct PlaybackTokenTests {
    static let golden = "1795000000.JFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU"
    static let now: Int64 = 1_794_999_000

    @Test func issuesTheGoldenToken() {
        #expect(PlaybackToken.issue(tenant: "shop", stream: "launch", expiry: 1_795_000_000, secret: "s3cret") == Self.golden)
    }

    static let refusals: [(token: String?, tenant: String, stream: String, secret: String, denial: PlaybackToken.Denial)] = [
        (nil, "shop", "launch", "s3cret", .missing),
        ("", "shop", "launch", "s3cret", .missing),
        ("1795000000", "shop", "launch", "s3cret", .malformed),
        ("1795000000.", "shop", "launch", "s3cret", .malformed),
        ("x.JFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU", "shop", "launch", "s3cret", .malformed),
        ("1795000000.JFB3C+ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU", "shop", "launch", "s3cret", .malformed),
        ("1795000000.JFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMS", "shop", "launch", "s3cret", .malformed),
        ("1795000000.a.b", "shop", "launch", "s3cret", .malformed),
        (golden, "shop", "other", "s3cret", .badSignature),
        (golden, "brand", "launch", "s3cret", .badSignature),
        (golden, "shop", "launch", "rotated", .badSignature),
        ("1895000000.JFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU", "shop", "launch", "s3cret", .badSignature),  // expiry moved
        ("1795000000.AFB3C-ZlVEQniKUjk0Tx459h8J9AAI9LMrSFTPTvMSU", "shop", "launch", "s3cret", .badSignature),
    ]

    @Test func refusesWithTheReason() {
        #expect(throws: Never.self) { try PlaybackToken.verify(Self.golden, tenant: "shop", stream: "launch", secret: "s3cret", now: Self.now) }
        for row in Self.refusals {
            #expect(throws: row.denial, "\(String(describing: row.token))") {
                try PlaybackToken.verify(row.token, tenant: row.tenant, stream: row.stream, secret: row.secret, now: Self.now)
            }
        }
        #expect(throws: PlaybackToken.Denial.expired(at: 1_795_000_000)) {
            try PlaybackToken.verify(Self.golden, tenant: "shop", stream: "launch", secret: "s3cret", now: 1_795_000_000)
        }
    }

    @Test func statusesAndMessages() {
        #expect(PlaybackToken.Denial.missing.httpStatus == 401)
        for d in [PlaybackToken.Denial.malformed, .badSignature, .expired(at: 1)] { #expect(d.httpStatus == 403) }
        #expect(PlaybackToken.Denial.missing.description.contains("playback-tokens"), "says how to get one")
    }
}
