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

    /// A card as kept: its show (publish session) and its date range.
    struct Card: Sendable, Equatable {
        var session: Int64
        var range: DateRange
    }

    private(set) var byKey: [String: [Card]] = [:]
    /// The newest card id read, where the next read continues.
    private(set) var lastID: Int64?

    /// Takes cards read from the database (repeats are dropped); returns the keys whose cards changed.
    @discardableResult
    mutating func add(_ highlights: [HighlightStore.Highlight]) -> Set<String> {
        var changed: Set<String> = []
        for h in highlights {
            lastID = max(lastID ?? h.id, h.id)
            let key = PackageStore.key(tenant: h.tenant, stream: h.stream)
            var cards = byKey[key, default: []]
            guard !cards.contains(where: { $0.range.id == Self.id(h.id) }) else { continue }
            cards.append(Card(session: h.session, range: Self.dateRange(h)))
            cards.sort { ($0.range.startDate, $0.range.id) < ($1.range.startDate, $1.range.id) }
            byKey[key] = Array(cards.suffix(Self.perStream))
            changed.insert(key)
        }
        return changed
    }

    /// The date ranges of a stream's show (`session`), oldest first: a card of an earlier show
    /// on the same stream never reaches the next one's playlists.
    func ranges(_ key: String, session: Int64) -> [DateRange] {
        (byKey[key] ?? []).filter { $0.session == session }.map(\.range)
    }

    /// Lets go of cards that started more than `horizon` before `now` (seconds since 1970),
    /// keeping the latest of each stream in `live` (it may still be showing); a stream no
    /// longer live here keeps none of them.
    mutating func prune(now: Double, live: Set<String>) {
        for (key, cards) in byKey {
            let kept = cards.enumerated().filter { ($0.offset == cards.count - 1 && live.contains(key)) || $0.element.range.startDate >= now - Self.horizon }.map(\.element)
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
