import Foundation
import StorecastRuntime
import Testing

/// Standard Webhooks signing, against the specification's own example.
@Suite struct WebhookSignatureTests {
    // From the Standard Webhooks specification's test vectors (also what the PyPI library signs).
    static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    static let body = Array(#"{"test": 2432232314}"#.utf8)

    @Test func signsTheSpecificationsExample() {
        #expect(WebhookSignature.sign(secret: Self.secret, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: Self.body)
                == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func twoSecretsGiveTwoSignaturesAndTheThreeHeaders() {
        let other = WebhookSignature.newSecret()
        let headers = WebhookSignature.headers(id: "msg_1", timestamp: 10, body: Self.body, secrets: [other, Self.secret])
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        let signatures = headers[2].value.split(separator: " ").map(String.init)
        #expect(signatures == [WebhookSignature.sign(secret: other, id: "msg_1", timestamp: 10, body: Self.body)!,
                               WebhookSignature.sign(secret: Self.secret, id: "msg_1", timestamp: 10, body: Self.body)!])
        #expect(signatures[0] != signatures[1])
    }

    @Test func onlyWhsecSecretsSign() {
        #expect(WebhookSignature.sign(secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", id: "m", timestamp: 1, body: []) == nil)
        #expect(WebhookSignature.sign(secret: "whsec_", id: "m", timestamp: 1, body: []) == nil)
        #expect(WebhookSignature.newSecret().hasPrefix("whsec_") && WebhookSignature.key(of: WebhookSignature.newSecret())?.count == 24)
    }
}

/// What a delivery does after each attempt, as a golden table.
@Suite struct WebhookRetryPolicyTests {
    static let cases: [(name: String, attempt: Int, outcome: WebhookRetryPolicy.Outcome, jitter: Double, expected: WebhookRetryPolicy.Decision)] = [
        ("200 delivers", 1, .answered(status: 200, retryAfter: nil), 0.5, .delivered),
        ("204 delivers", 3, .answered(status: 204, retryAfter: nil), 0.5, .delivered),
        ("a 500 on the first attempt waits 5 s", 1, .answered(status: 500, retryAfter: nil), 0.5, .retry(after: .seconds(5))),
        ("jitter at its low end: 10 % sooner", 1, .answered(status: 500, retryAfter: nil), 0, .retry(after: .seconds(4.5))),
        ("jitter at its high end: 10 % later", 2, .failed("timeout"), 1, .retry(after: .seconds(330))),
        ("no answer is retried like an error", 3, .failed("connection refused"), 0.5, .retry(after: .seconds(1800))),
        ("a 3xx is not followed, and retried", 1, .answered(status: 302, retryAfter: nil), 0.5, .retry(after: .seconds(5))),
        ("410 disables the endpoint", 1, .answered(status: 410, retryAfter: nil), 0.5, .disableEndpoint(reason: "the endpoint answered 410 Gone")),
        ("429 with Retry-After waits at least that", 1, .answered(status: 429, retryAfter: .seconds(60)), 0.5, .retry(after: .seconds(60))),
        ("503 with a short Retry-After keeps the schedule", 2, .answered(status: 503, retryAfter: .seconds(10)), 0.5, .retry(after: .seconds(300))),
        ("Retry-After is believed up to a day", 1, .answered(status: 429, retryAfter: .seconds(900_000)), 0.5, .retry(after: .seconds(86_400))),
        ("Retry-After on a 500 is not a reason to wait", 1, .answered(status: 500, retryAfter: .seconds(600)), 0.5, .retry(after: .seconds(5))),
        ("the seventh failure waits 10 h", 7, .answered(status: 500, retryAfter: nil), 0.5, .retry(after: .seconds(36_000))),
        ("the eighth failure is the last", 8, .answered(status: 500, retryAfter: nil), 0.5, .failed(reason: "answered 500 on the last of 8 attempts")),
        ("the last attempt's 200 still delivers", 8, .answered(status: 200, retryAfter: nil), 0.5, .delivered),
    ]

    @Test(arguments: cases.indices)
    func decisions(_ i: Int) {
        let c = Self.cases[i]
        #expect(WebhookRetryPolicy().decide(attempt: c.attempt, outcome: c.outcome, jitter: c.jitter) == c.expected, "\(c.name)")
    }

    /// `Retry-After` read as RFC 9110 says, from 1994-11-06 08:49:37 GMT.
    static let retryAfters: [(value: String, wait: Duration?)] = [
        ("120", .seconds(120)),
        (" 0 ", .seconds(0)),
        ("Sun, 06 Nov 1994 08:49:57 GMT", .seconds(20)),            // IMF-fixdate
        ("Sunday, 06-Nov-94 08:50:37 GMT", .seconds(60)),           // RFC 850
        ("Sun Nov  6 08:49:47 1994", .seconds(10)),                 // asctime
        ("Sun, 06 Nov 1994 08:00:00 GMT", .seconds(0)),             // already past: no wait
        ("99999999999999999999999", .seconds(Int.max / 2)),         // too large to count: a long wait, capped by the policy
        ("-5", nil), ("1.5", nil), ("soon", nil), ("", nil), ("Sun, 06 Nov 1994 08:49:57 PST", nil),
        ("Sun Nov  6 08:\u{33C}37 14", nil),                         // a combining mark: Foundation's DateFormatter stopped the process on it
    ]

    @Test(arguments: retryAfters.indices)
    func retryAfterFields(_ i: Int) {
        let now = Date(timeIntervalSince1970: 784_111_777)  // 1994-11-06 08:49:37 GMT
        let c = Self.retryAfters[i]
        #expect(WebhookRetryPolicy.retryAfter(c.value, now: now) == c.wait, "\(c.value)")
    }

    @Test func theScheduleSpansAboutADayAndAHalfAndScales() {
        let total = WebhookRetryPolicy.schedule.reduce(Duration.zero, +)
        #expect(total == .seconds(99_305), "27.6 hours")
        #expect(WebhookRetryPolicy(scale: 0.01).decide(attempt: 2, outcome: .failed("x"), jitter: 0.5) == .retry(after: .seconds(3)))
    }
}

/// Where a tenant's webhook may go (SSRF), as a table.
@Suite struct NetworkAddressPolicyTests {
    static let inside = [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.2.5", "::1", "::", "fe80::1", "fd00::1", "fc00::5", "ff02::1",
        "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2001:db8::1", "not an address", "",
        "::127.0.0.1", "::8.8.8.8", "2002:0a00:0001::1", "2002:a9fe:a9fe::", "64:ff9b:1::8.8.8.8",
    ]
    static let outside = ["93.184.216.34", "8.8.8.8", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2002:0808:0808::1", "64:ff9b::808:808"]

    @Test(arguments: inside) func refused(_ address: String) { #expect(NetworkAddressPolicy.isInternal(address), "\(address)") }
    @Test(arguments: outside) func allowed(_ address: String) { #expect(!NetworkAddressPolicy.isInternal(address), "\(address)") }

    @Test func urlsAreCheckedByWhereTheirHostResolves() {
        #expect(NetworkAddressPolicy.refusal(of: "http://127.0.0.1:8080/hook", allowInternal: false)?.contains("inside the operator's networks") == true)
        #expect(NetworkAddressPolicy.refusal(of: "http://localhost/hook", allowInternal: false)?.contains("inside the operator's networks") == true)
        #expect(NetworkAddressPolicy.refusal(of: "http://[::1]/hook", allowInternal: false) != nil)
        #expect(NetworkAddressPolicy.refusal(of: "ftp://example.com/", allowInternal: false) == "the URL must be http:// or https:// with a host")
        #expect(NetworkAddressPolicy.refusal(of: "https://user:pw@example.com/", allowInternal: false) == "the URL may not carry a user or password")
        #expect(NetworkAddressPolicy.refusal(of: "http://127.0.0.1:8080/hook", allowInternal: true) == nil)
    }
}
