import StorecastRuntime

/// How a restarted packager continues a package it served before it went down, from the cursors
/// it wrote (`PackageCursorStore`): the same generation, so the media playlist URLs players hold
/// stay valid; each rendition's numbering a margin past the last segment written down, so no
/// immutable URL ever names other bytes (the cursor is written about once a second, so a
/// segment may have finished, and the next one's parts been served, after the last write);
/// the first new segment after a discontinuity, on the next discontinuity sequence, and init
/// segments after the last version served; the hole between the last segment written down and
/// the first new one listed as gap segments (``ResumedGap``). Pure.
struct PackageResumption: Sendable, Equatable {
    /// Sequence numbers skipped past the last recorded segment: one that finished after the
    /// cursor was written, the one whose parts were being served, and one to spare; plus one
    /// for every second the cursor is older than that (writes queue behind other database jobs,
    /// and fail while the database is down: segments are at least about a second long).
    static let sequenceMargin = 3
    /// Cursors older than this at start belong to shows long over; resumptions not claimed
    /// within it after start are dropped.
    static let claimWithinSeconds: Int64 = 300

    let generation: String
    let cursors: [String: PackageCursor]

    /// The resumptions for each stream key; where a stream's cursors name two generations (an
    /// old show's and a new one's), the one written last wins.
    static func byStream(_ cursors: [PackageCursor]) -> [String: PackageResumption] {
        Dictionary(grouping: cursors, by: \.streamKey).mapValues { list in
            let generation = list.min { ($0.age, $1.generation) < ($1.age, $0.generation) }!.generation
            let same = list.filter { $0.generation == generation }
            return PackageResumption(generation: generation, cursors: Dictionary(same.map { ($0.rendition, $0) }, uniquingKeysWith: { a, b in a.lastSequence >= b.lastSequence ? a : b }))
        }
    }

    /// Where `rendition` starts again (nil: it had no cursor; it starts after what is listed),
    /// announced at `wallClock` (seconds since 1970) with segments of `targetDuration`. Where
    /// the cursor knows where its last segment ended, the numbers skipped also leave room for the
    /// hole to be listed as gap segments no longer than the target (``gap(_:)``): what has gone
    /// by since, the next keyframe's wait, and a margin (unless it is too long to list).
    func firstSequence(_ rendition: String, wallClock: Double, targetDuration: Double) -> Int? {
        guard let c = cursors[rendition] else { return nil }
        let margin = Self.sequenceMargin + max(0, Int((c.age - 2).rounded(.up)))
        guard let end = c.lastEnd, targetDuration > 0, wallClock - end <= ResumedGap.longestListed else { return c.lastSequence + margin }
        let hole = max(0, wallClock - end) + 2 * targetDuration + 2
        return c.lastSequence + max(margin, 1 + Int((hole / targetDuration).rounded(.up)))
    }

    /// The media `rendition` lost in the restart, to list as gap segments before its first new
    /// one (nil: its cursor does not know where its last segment ended).
    func gap(_ rendition: String) -> ResumedGap? {
        cursors[rendition].flatMap { c in c.lastEnd.map { ResumedGap(afterSequence: c.lastSequence, from: $0) } }
    }

    /// The init segment version the resumed rendition starts at (after every one served).
    func initVersion(_ rendition: String) -> Int? { cursors[rendition].map { $0.initVersion + 1 } }

    /// Where the package's stream time sat on the wall clock: the resumed package keeps it, so
    /// PROGRAM-DATE-TIME runs on without a jump (the cursor written last that knows it).
    var clockAnchor: ClockAnchor? {
        cursors.values.filter { $0.clockOffset != nil }.min { $0.age < $1.age }?.clockOffset.map { ClockAnchor(wallSeconds: $0, streamSeconds: 0) }
    }

    /// The discontinuity sequence the resumed rendition's playlist starts from.
    func discontinuitySequence(_ rendition: String) -> Int? { cursors[rendition]?.discontinuitySequence }
}
