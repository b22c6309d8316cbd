import Foundation

/// What a webhook delivery does after an attempt, as a pure decider (issue 16), tested with a table.
///
/// - A 2xx answer delivers it.
/// - 410 Gone disables the endpoint (the receiver says it is gone for good).
/// - Anything else (another status, a timeout, a refused connection) is tried again on Standard
///   Webhooks' schedule, after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h (eight attempts over
///   about 27.6 hours), each delay with ±10 % jitter so that a receiver that comes back is not hit
///   by every retry at once; `scale` shrinks the schedule (tests).
/// - A 429 or 503 with `Retry-After` waits at least that long (at most a day).
/// - After the last attempt the delivery has failed; it stays in the log and can be replayed.
public struct WebhookRetryPolicy: Sendable {
    /// The wait before attempt 2, 3, …: Standard Webhooks' (and Svix's) schedule.
    public static let schedule: [Duration] = [.seconds(5), .seconds(300), .seconds(1800), .seconds(7200), .seconds(18000), .seconds(36000), .seconds(36000)]
    public static var attempts: Int { schedule.count + 1 }
    /// Each attempt's deadline.
    public static let timeout: Duration = .seconds(15)

    public enum Outcome: Sendable, Equatable {
        case answered(status: Int, retryAfter: Duration?)
        /// No answer: a timeout, a refused connection, an address refused before connecting.
        case failed(String)
    }

    public enum Decision: Sendable, Equatable {
        case delivered
        case retry(after: Duration)
        case failed(reason: String)
        case disableEndpoint(reason: String)
    }

    public var scale: Double

    /// A `Retry-After` field's wait from `now` (RFC 9110 10.2.3): delay-seconds, or an HTTP-date
    /// in any of the three forms a recipient must read (IMF-fixdate, RFC 850, asctime). A date
    /// already past is no wait; a value of neither form is nil (the schedule alone applies).
    public static func retryAfter(_ value: String, now: Date) -> Duration? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.allSatisfy({ (48...57).contains($0) }) { return .seconds(Int(text) ?? Int.max / 2) }
        // An HTTP-date is short printable ASCII. Anything else never reaches Foundation's
        // DateFormatter, which stops the process on some non-ASCII text (a combining mark in
        // "Sun Nov  6 08:\u{33C}37 14": "Incorrect range CFRange"; found by fuzz/run.sh).
        guard text.utf8.count <= maximumHTTPDateBytes, text.utf8.allSatisfy({ (32...126).contains($0) }) else { return nil }
        for format in httpDateFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return .milliseconds(max(0, Int((date.timeIntervalSince(now) * 1000).rounded(.up)))) }
        }
        return nil
    }

    /// The longest HTTP-date read (RFC 850's longest is 33 bytes).
    static let maximumHTTPDateBytes = 64

    /// IMF-fixdate, RFC 850 and asctime (RFC 9110 5.6.7).
    static let httpDateFormats = ["EEE, dd MMM yyyy HH:mm:ss 'GMT'", "EEEE, dd-MMM-yy HH:mm:ss 'GMT'", "EEE MMM d HH:mm:ss yyyy"]

    public init(scale: Double = 1) { self.scale = scale }

    /// After attempt `attempt` (1 = the first) had `outcome`; `jitter` is uniform in 0…1.
    public func decide(attempt: Int, outcome: Outcome, jitter: Double) -> Decision {
        let problem: String
        var floor: Duration = .zero
        switch outcome {
        case .answered(let status, _) where (200..<300).contains(status):
            return .delivered
        case .answered(410, _):
            return .disableEndpoint(reason: "the endpoint answered 410 Gone")
        case .answered(let status, let retryAfter):
            problem = "answered \(status)"
            if status == 429 || status == 503, let retryAfter { floor = min(retryAfter, .seconds(86_400)) }
        case .failed(let why):
            problem = why
        }
        guard attempt >= 1, attempt < Self.attempts else {
            return .failed(reason: "\(problem) on the last of \(Self.attempts) attempts")
        }
        let wait = Self.schedule[attempt - 1] * (scale * (0.9 + 0.2 * min(max(jitter, 0), 1)))
        return .retry(after: max(wait, floor))
    }
}
