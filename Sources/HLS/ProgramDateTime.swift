/// EXT-X-PROGRAM-DATE-TIME values (RFC 8216 section 4.3.2.6): ISO 8601 in UTC with milliseconds,
/// from seconds since 1970. Pure, so playlists render the same on every thread and in tests.
public enum ProgramDateTime {
    public static func format(_ secondsSince1970: Double) -> String {
        let totalMilliseconds = Int64((secondsSince1970 * 1000).rounded())
        let milliseconds = Int(((totalMilliseconds % 1000) + 1000) % 1000)
        let seconds = (totalMilliseconds - Int64(milliseconds)) / 1000
        let days = Int((seconds >= 0 ? seconds : seconds - 86_399) / 86_400)
        let secondOfDay = Int(seconds - Int64(days) * 86_400)
        let (year, month, day) = civil(fromDays: days)
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(milliseconds, 3))Z"
    }

    /// Proleptic Gregorian date of a day count from 1970-01-01 (H. Hinnant's civil_from_days).
    static func civil(fromDays z0: Int) -> (year: Int, month: Int, day: Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
