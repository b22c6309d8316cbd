import Foundation
import PostgresClient

/// Product highlights (issue 18): cards a tenant posts while its show is live, each starting at
/// the moment the API received it. Calls block: use them on the database thread
/// (`PostgresExecutor.run`).
public enum HighlightStore {
    /// Cards a show may get per second, as IVS allows timed metadata.
    public static let perSecond = 5
    /// The channel a new card is announced on (NOTIFY at its insert's commit), which packagers
    /// LISTEN to (`PostgresListener`), so a card reaches the playlists without waiting for a poll.
    public static let channel = "storecast_highlights"

    public struct Highlight: Sendable, Codable, Equatable {
        public var id: Int64
        public var tenant: String
        public var stream: String
        public var session: Int64
        public var productId: String
        public var title: String
        public var price: String?
        public var currency: String?
        public var imageUrl: String?
        public var link: String?
        /// Seconds the card shows; nil: until the show's next card.
        public var durationSeconds: Double?
        /// When it starts: the program date-time of the frame that was live when the API received it.
        public var startDate: String
        /// Seconds since 1970 of `startDate`, to the millisecond (for playlists).
        public var startSeconds: Double
    }

    /// What a `POST …/highlights` carries.
    public struct Draft: Sendable, Equatable {
        public var productId: String
        public var title: String
        public var price: String?
        public var currency: String?
        public var imageUrl: String?
        public var link: String?
        public var durationSeconds: Double?

        public init(productId: String, title: String, price: String? = nil, currency: String? = nil, imageUrl: String? = nil, link: String? = nil, durationSeconds: Double? = nil) {
            self.productId = productId
            self.title = title
            self.price = price
            self.currency = currency
            self.imageUrl = imageUrl
            self.link = link
            self.durationSeconds = durationSeconds
        }

        /// The first field a player could not be given as it is, with what it must be; nil when
        /// every field is valid. Values go into playlists as quoted strings, which cannot hold
        /// a double quote or a line break (RFC 8216bis 4.2).
        public func problem() -> (field: String, message: String)? {
            func text(_ value: String?, _ field: String, _ range: ClosedRange<Int>) -> (String, String)? {
                guard let value else { return nil }
                guard range.contains(value.count) else { return (field, "\(field) must be \(range.lowerBound) to \(range.upperBound) characters") }
                guard !value.contains(where: { $0 == "\"" || $0.isNewline || ($0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } ?? false) }) else {
                    return (field, "\(field) cannot hold a double quote, a line break or a control character")
                }
                return nil
            }
            if let p = text(productId, "productId", 1...64) ?? text(title, "title", 1...120) ?? text(price, "price", 1...20)
                ?? text(imageUrl, "imageUrl", 1...300) ?? text(link, "link", 1...300) { return p }
            if let price, price.range(of: #"^[0-9]{1,12}(\.[0-9]{1,4})?$"#, options: .regularExpression) == nil {
                return ("price", "price is a decimal number as a string, such as \"19.99\"")
            }
            if let currency, currency.range(of: "^[A-Z]{3}$", options: .regularExpression) == nil {
                return ("currency", "currency is an ISO 4217 code such as EUR or USD")
            }
            if price != nil, currency == nil { return ("currency", "a price needs its currency") }
            for (field, url) in [("imageUrl", imageUrl), ("link", link)] {
                guard let url else { continue }
                guard let parsed = URL(string: url), ["https", "http"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host?.isEmpty == false else {
                    return (field, "\(field) must be an absolute http(s) URL")
                }
            }
            if let d = durationSeconds, !(d >= 0.1 && d <= 3600) { return ("durationSeconds", "durationSeconds must be from 0.1 to 3600") }
            return nil
        }
    }

    public enum Outcome: Sendable, Equatable {
        case created(Highlight)
        case noStream
        /// The stream has no open session: there is no frame to put the card on.
        case notLive(state: String)
        /// Over `perSecond`: retry after this many milliseconds.
        case tooMany(retryAfterMilliseconds: Int)
    }

    /// Adds a card to a live show, starting at `receivedAt` (the API's clock when the request
    /// arrived), unless the show already got `perSecond` cards in the second before it. The
    /// stream's row is locked while counting, so API instances running side by side keep the cap.
    public static func create(_ db: PostgresConnection, tenant: String, stream: String, _ draft: Draft, receivedAt: Date, createdBy: String) throws -> Outcome {
        try db.transaction {
            let found = try db.execute(
                """
                SELECT s.id, s.status, (SELECT max(x.id) FROM sessions x WHERE x.stream_id = s.id AND x.ended_at IS NULL) AS session
                FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2 FOR UPDATE OF s
                """, [tenant, stream])
            guard let streamID = found.int(0, "id") else { return .noStream }
            guard let session = found.int(0, "session") else { return .notLive(state: found.value(0, "status") ?? "idle") }
            let at = String(format: "%.3f", receivedAt.timeIntervalSince1970)
            let recent = try db.execute(
                """
                SELECT count(*) AS n, extract(epoch FROM min(starts_at)) AS oldest FROM highlights
                WHERE stream_id = $1 AND starts_at > to_timestamp($2::double precision) - interval '1 second'
                """, [String(streamID), at])
            if let n = recent.int(0, "n"), n >= perSecond, let oldest = recent.value(0, "oldest").flatMap(Double.init) {
                let wait = Int(((oldest + 1 - receivedAt.timeIntervalSince1970) * 1000).rounded(.up))
                return .tooMany(retryAfterMilliseconds: max(1, wait))
            }
            let rows = try db.execute(
                """
                INSERT INTO highlights (stream_id, session_id, product_id, title, price, currency, image_url, link, duration_ms, starts_at, created_by)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::int, to_timestamp($10::double precision), $11)
                RETURNING id
                """, [String(streamID), String(session), draft.productId, draft.title, draft.price, draft.currency, draft.imageUrl, draft.link,
                      draft.durationSeconds.map { String(Int(($0 * 1000).rounded())) }, at, createdBy])
            guard let id = rows.int(0, "id"), let made = try one(db, id: id) else { return .noStream }
            try db.execute("SELECT pg_notify($1, $2)", [channel, String(id)])
            return .created(made)
        }
    }

    /// A stream's cards, newest first (nil when there is no such stream); `session` narrows them
    /// to one show.
    public static func list(_ db: PostgresConnection, tenant: String, stream: String, session: Int64? = nil, limit: Int = 100) throws -> [Highlight]? {
        let exists = try db.execute("SELECT 1 FROM streams s JOIN tenants t ON t.id = s.tenant_id WHERE t.slug = $1 AND s.slug = $2", [tenant, stream])
        guard !exists.isEmpty else { return nil }
        let rows = try db.execute(
            "SELECT \(columns) \(from) WHERE t.slug = $1 AND s.slug = $2 AND ($3::bigint IS NULL OR h.session_id = $3::bigint) ORDER BY h.starts_at DESC, h.id DESC LIMIT $4",
            [tenant, stream, session.map(String.init), String(max(1, min(limit, 1000)))])
        return (0..<rows.count).map { highlight(rows, $0) }
    }

    /// Cards with an id above `afterID`, oldest first: what a packager has not seen yet, plus
    /// those the database took in the last 10 s again (an insert with a lower id can commit
    /// after a higher one was read; the reader drops repeats). Its first call (`afterID` nil)
    /// takes those of the last `recent` seconds.
    public static func since(_ db: PostgresConnection, afterID: Int64?, recent: Double = 600, limit: Int = 5000) throws -> [Highlight] {
        let rows = try db.execute(
            """
            SELECT \(columns) \(from)
            WHERE ($1::bigint IS NOT NULL AND (h.id > $1::bigint OR h.created_at > now() - interval '10 seconds'))
               OR ($1::bigint IS NULL AND h.created_at > now() - make_interval(secs => $2::double precision))
            ORDER BY h.id LIMIT $3
            """, [afterID.map(String.init), String(recent), String(limit)])
        return (0..<rows.count).map { highlight(rows, $0) }
    }

    /// A stream's cards that show within `start` and `end` (seconds since 1970), oldest first,
    /// at most 10,000: a recording's. A card that started before `start` and still showed then
    /// is one (the latest card without a duration is taken as showing until the next).
    public static func within(_ db: PostgresConnection, tenant: String, stream: String, start: Double, end: Double) throws -> [Highlight] {
        let rows = try db.execute(
            """
            SELECT \(columns) \(Self.from) WHERE t.slug = $1 AND s.slug = $2 AND h.starts_at < to_timestamp($4::double precision)
              AND (h.starts_at >= to_timestamp($3::double precision)
                   OR (h.duration_ms IS NOT NULL AND h.starts_at + make_interval(secs => h.duration_ms / 1000.0) > to_timestamp($3::double precision))
                   OR h.id = (SELECT p.id FROM highlights p WHERE p.stream_id = h.stream_id AND p.duration_ms IS NULL
                              AND p.starts_at < to_timestamp($3::double precision)
                              AND p.session_id = (SELECT x.id FROM sessions x WHERE x.stream_id = h.stream_id AND x.started_at <= to_timestamp($3::double precision)
                                                  ORDER BY x.started_at DESC LIMIT 1)
                              ORDER BY p.starts_at DESC, p.id DESC LIMIT 1))
            ORDER BY h.starts_at, h.id LIMIT 10000
            """, [tenant, stream, String(format: "%.3f", start), String(format: "%.3f", end)])
        return (0..<rows.count).map { highlight(rows, $0) }
    }

    static func one(_ db: PostgresConnection, id: Int64) throws -> Highlight? {
        let rows = try db.execute("SELECT \(columns) \(from) WHERE h.id = $1", [String(id)])
        return rows.isEmpty ? nil : highlight(rows, 0)
    }

    private static let from = "FROM highlights h JOIN streams s ON s.id = h.stream_id JOIN tenants t ON t.id = s.tenant_id"
    private static let columns = """
        h.id, t.slug AS tenant, s.slug AS stream, h.session_id, h.product_id, h.title, h.price, h.currency, h.image_url, h.link, h.duration_ms,
        \(SQLTime.utc("h.starts_at")) AS start_date, extract(epoch FROM h.starts_at) AS start_seconds
        """

    private static func highlight(_ rows: PostgresRows, _ i: Int) -> Highlight {
        Highlight(
            id: rows.int(i, "id") ?? 0, tenant: rows.value(i, "tenant") ?? "", stream: rows.value(i, "stream") ?? "", session: rows.int(i, "session_id") ?? 0,
            productId: rows.value(i, "product_id") ?? "", title: rows.value(i, "title") ?? "", price: rows.value(i, "price"), currency: rows.value(i, "currency"),
            imageUrl: rows.value(i, "image_url"), link: rows.value(i, "link"), durationSeconds: rows.int(i, "duration_ms").map { Double($0) / 1000 },
            startDate: rows.value(i, "start_date") ?? "", startSeconds: rows.value(i, "start_seconds").flatMap(Double.init) ?? 0)
    }
}
