import HLS
import StorecastRuntime

/// The product cards a packager puts in its streams' playlists (issue 18), by stream key, as
/// EXT-X-DATERANGE tags. Pure: fed the cards read from PostgreSQL (``HighlightStore/since``),
/// it keeps each stream's recent ones; the shell gives them to the stream's package.
struct HighlightBook: Sendable {
    /// The CLASS of a card's date range.
    static let dateRangeClass = "com.storecast.highlight"
    /// Cards kept per stream (5 a second over a 20 s live window).
    static let perStream = 100
    /// Cards older than this are let go (the DVR keeps them in the database, not the playlist).
    static let horizon: Double = 600

    private(set) var byKey: [String: [DateRange]] = [:]
    /// The newest card id read, where the next read continues.
    private(set) var lastID: Int64?

    /// Takes cards read from the database; returns the keys whose cards changed.
    mutating func add(_ highlights: [HighlightStore.Highlight]) -> Set<String> {
        var changed: Set<String> = []
        for h in highlights {
            lastID = max(lastID ?? h.id, h.id)
            let key = PackageStore.key(tenant: h.tenant, stream: h.stream)
            var ranges = byKey[key, default: []]
            guard !ranges.contains(where: { $0.id == Self.id(h.id) }) else { continue }
            ranges.append(Self.dateRange(h))
            ranges.sort { ($0.startDate, $0.id) < ($1.startDate, $1.id) }
            byKey[key] = Array(ranges.suffix(Self.perStream))
            changed.insert(key)
        }
        return changed
    }

    /// Lets go of cards that started more than `horizon` before `now` (seconds since 1970),
    /// keeping each stream's latest, which may still be showing.
    mutating func prune(now: Double) {
        for (key, ranges) in byKey {
            let kept = ranges.enumerated().filter { $0.offset == ranges.count - 1 || $0.element.startDate >= now - Self.horizon }.map(\.element)
            byKey[key] = kept.isEmpty ? nil : kept
        }
    }

    static func id(_ highlight: Int64) -> String { "highlight-\(highlight)" }

    static func dateRange(_ h: HighlightStore.Highlight) -> DateRange {
        let fields: [(String, String?)] = [("X-PRODUCT-ID", h.productId), ("X-TITLE", h.title), ("X-PRICE", h.price), ("X-CURRENCY", h.currency),
                                          ("X-IMAGE-URL", h.imageUrl), ("X-LINK", h.link)]
        return DateRange(id: id(h.id), classValue: dateRangeClass, startDate: h.startSeconds, duration: h.durationSeconds,
                         attributes: fields.compactMap { name, value in value.map { DateRange.Attribute(name: name, value: $0) } })
    }
}
