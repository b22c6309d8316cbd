import StorecastRuntime

/// How a restarted packager continues a package it served before it went down, from the cursors
/// it wrote (`PackageCursorStore`): the same generation, so the media playlist URLs players hold
/// stay valid; each rendition's numbering a margin past the last segment written down, so no
/// immutable URL ever names other bytes (the cursor is written about once a second, so a
/// segment may have finished, and the next one's parts been served, after the last write);
/// the first new segment after a discontinuity, on the next discontinuity sequence. Pure.
struct PackageResumption: Sendable, Equatable {
    /// Sequence numbers skipped past the last recorded segment: one that finished after the
    /// cursor was written, the one whose parts were being served, and one to spare.
    static let sequenceMargin = 3

    let generation: String
    let cursors: [String: PackageCursor]

    /// The resumptions for each stream key; where a stream's cursors name two generations (two
    /// packages written moments apart), the one with the most recent segment numbers wins.
    static func byStream(_ cursors: [PackageCursor]) -> [String: PackageResumption] {
        Dictionary(grouping: cursors, by: \.streamKey).mapValues { list in
            let generation = list.max { ($0.lastSequence, $0.generation) < ($1.lastSequence, $1.generation) }!.generation
            let same = list.filter { $0.generation == generation }
            return PackageResumption(generation: generation, cursors: Dictionary(same.map { ($0.rendition, $0) }, uniquingKeysWith: { a, b in a.lastSequence >= b.lastSequence ? a : b }))
        }
    }

    /// Where `rendition` starts again (nil: it had no cursor; it starts after what is listed).
    func firstSequence(_ rendition: String) -> Int? { cursors[rendition].map { $0.lastSequence + Self.sequenceMargin } }

    /// The discontinuity sequence the resumed rendition's playlist starts from.
    func discontinuitySequence(_ rendition: String) -> Int? { cursors[rendition]?.discontinuitySequence }
}
