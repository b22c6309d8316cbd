/// How the stores read a timestamp column for JSON: UTC, ISO 8601 with milliseconds
/// (`2026-11-26T09:05:24.123Z`), in SQL so no date parsing happens in Swift.
enum SQLTime {
    static func utc(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }
}
