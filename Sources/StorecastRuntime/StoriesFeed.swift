import Foundation
import PostgresClient

/// A tenant's stories feed (issue 18): its live shows in the order it set (pinned first, then by
/// viewers or by start time), each with what a shopper's first paint needs. Calls block: use them
/// on the database thread (`PostgresExecutor.run`).
public enum StoriesFeed {
    public static let maximumEntries = 50

    public struct Seller: Sendable, Codable, Equatable {
        public var tenant: String
        public var name: String
    }

    public struct Entry: Sendable, Codable, Equatable {
        public var stream: String
        public var title: String
        public var seller: Seller
        public var pinned: Bool
        public var startedAt: String
        public var viewers: Int
        /// The multivariant playlist (with a playback token for a private show).
        public var playbackUrl: String
        /// The latest preview still (JPEG), refreshed every few seconds.
        public var previewUrl: String
        /// The packager's player page of the show.
        public var pageUrl: String
        /// A 16x9 blurred JPEG of the picture as a data URL, for the first paint; nil until the
        /// first one is made.
        public var placeholder: String?
        /// The product card showing now, if any.
        public var highlight: HighlightStore.Highlight?
    }

    /// A live show as read, before its URLs are made.
    public struct Show: Sendable, Equatable {
        public var entry: Entry
        /// The base URL of the packager that serves it (nil: none registered).
        public var origin: String?
        public var isPrivate: Bool
        /// The tenant's playback secret, to sign a private show's URLs.
        public var secret: String
    }

    /// The tenant's live shows (public ones only unless `includePrivate`), in its order; nil
    /// when there is no such tenant. URLs are made by the caller (``entries(_:playbackBase:token:)``).
    public static func shows(_ db: PostgresConnection, tenant: String, includePrivate: Bool, order: String? = nil, limit: Int = maximumEntries) throws -> (order: String, shows: [Show])? {
        let found = try db.execute("SELECT name, feed_order FROM tenants WHERE slug = $1", [tenant])
        guard let name = found.value(0, "name") else { return nil }
        let order = order ?? found.value(0, "feed_order") ?? "viewers"
        let rows = try db.execute(
            """
            SELECT s.slug, s.title, s.feed_pinned, s.visibility, s.placeholder, CASE WHEN $2::boolean THEN t.playback_secret END AS playback_secret, n.public_url,
                   \(SQLTime.utc("x.started_at")) AS started_at,
                   \(StreamDirectory.viewersOfSession) AS viewers,
                   h.id AS h_id, h.session_id, h.product_id, h.title AS h_title, h.price, h.currency, h.image_url, h.link, h.duration_ms,
                   \(SQLTime.utc("h.starts_at")) AS h_start, extract(epoch FROM h.starts_at) AS h_seconds
            FROM streams s JOIN tenants t ON t.id = s.tenant_id
            JOIN LATERAL (SELECT * FROM sessions x WHERE x.stream_id = s.id AND x.ended_at IS NULL ORDER BY x.id DESC LIMIT 1) x ON true
            LEFT JOIN nodes n ON n.id = s.origin_node AND n.last_seen > now() - make_interval(secs => $3::int)
            LEFT JOIN LATERAL (SELECT * FROM highlights h WHERE h.session_id = x.id AND h.starts_at <= now()
                               AND (h.duration_ms IS NULL OR h.starts_at + make_interval(secs => h.duration_ms / 1000.0) > now())
                               ORDER BY h.starts_at DESC, h.id DESC LIMIT 1) h ON true
            WHERE t.slug = $1 AND s.status = 'live' AND ($2::boolean OR s.visibility = 'public')
            ORDER BY s.feed_pinned DESC,
                     CASE WHEN $4 = 'viewers' THEN \(StreamDirectory.viewersOfSession) END DESC NULLS LAST,
                     x.started_at DESC, s.id
            LIMIT $5
            """, [tenant, includePrivate ? "true" : "false", String(NodeRegistry.liveSeconds), order, String(max(1, min(limit, maximumEntries)))])
        let shows = (0..<rows.count).map { i -> Show in
            let card = rows.int(i, "h_id").map { id in
                HighlightStore.Highlight(
                    id: id, tenant: tenant, stream: rows.value(i, "slug") ?? "", session: rows.int(i, "session_id") ?? 0, productId: rows.value(i, "product_id") ?? "",
                    title: rows.value(i, "h_title") ?? "", price: rows.value(i, "price"), currency: rows.value(i, "currency"), imageUrl: rows.value(i, "image_url"),
                    link: rows.value(i, "link"), durationSeconds: rows.int(i, "duration_ms").map { Double($0) / 1000 },
                    startDate: rows.value(i, "h_start") ?? "", startSeconds: rows.value(i, "h_seconds").flatMap(Double.init) ?? 0)
            }
            let entry = Entry(stream: rows.value(i, "slug") ?? "", title: rows.value(i, "title") ?? "", seller: Seller(tenant: tenant, name: name),
                              pinned: rows.value(i, "feed_pinned") == "t", startedAt: rows.value(i, "started_at") ?? "", viewers: Int(rows.int(i, "viewers") ?? 0),
                              playbackUrl: "", previewUrl: "", pageUrl: "", placeholder: rows.value(i, "placeholder"), highlight: card)
            return Show(entry: entry, origin: rows.value(i, "public_url"), isPrivate: rows.value(i, "visibility") == "private", secret: rows.value(i, "playback_secret") ?? "")
        }
        return (order, shows)
    }

    /// The entries with their URLs: under the show's packager (else `playbackBase`), a private
    /// show's signed by `token` (tenant, stream, secret → token).
    public static func entries(_ shows: [Show], playbackBase: String, token: (String, Show) -> String?) -> [Entry] {
        shows.map { show in
            var e = show.entry
            let base = "\(show.origin ?? playbackBase)/live/\(e.seller.tenant)/\(e.stream)"
            let query = show.isPrivate ? token(e.stream, show).map { "?token=\($0)" } ?? "" : ""
            e.playbackUrl = "\(base)/master.m3u8\(query)"
            e.previewUrl = "\(base)/thumbnail.jpg\(query)"
            e.pageUrl = "\(show.origin ?? playbackBase)/play/\(e.seller.tenant)/\(e.stream)\(query)"
            return e
        }
    }

    /// Sets the tenant's feed order; false when there is no such tenant.
    public static func setOrder(_ db: PostgresConnection, tenant: String, order: String) throws -> Bool {
        try db.execute("UPDATE tenants SET feed_order = $2 WHERE slug = $1", [tenant, order]).affected > 0
    }

    /// A live stream's placeholder (a data URL), written by its packager.
    public static func setPlaceholder(_ db: PostgresConnection, tenant: String, stream: String, dataURL: String) throws {
        try db.execute("UPDATE streams s SET placeholder = $3 FROM tenants t WHERE t.id = s.tenant_id AND t.slug = $1 AND s.slug = $2",
                       [tenant, stream, dataURL])
    }
}
