import Foundation
import OpenAPIRuntime

/// The document's `date-time` values as the database writes them (``SQLTime``): UTC with
/// milliseconds, `2026-11-27T17:30:00.123Z`. Written back to the millisecond they were read as
/// (a `Date` holds seconds in a `Double`, so formatting it plainly can lose one).
struct MillisecondDates: DateTranscoder {
    struct Malformed: Error, CustomStringConvertible {
        let text: String
        var description: String { "not an RFC 3339 time: \(text)" }
    }

    func encode(_ date: Date) throws -> String { Self.text(date) }

    func decode(_ text: String) throws -> Date { try Self.date(text) }

    static func text(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (seconds, fraction) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        let (whole, millis) = fraction < 0 ? (seconds - 1, fraction + 1000) : (seconds, fraction)
        var time = time_t(whole), parts = tm()
        gmtime_r(&time, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), Int(millis))
    }

    static func date(_ text: String) throws -> Date {
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true)) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle()) { return date }
        throw Malformed(text: text)
    }
}
