/// The media a restarted packager never had: from where the last segment it wrote down ends to
/// where its own first segment begins (the units the stopped packager read but never served,
/// the time it was away, and the wait for the next keyframe). Listed as `EXT-X-GAP` segments
/// under the numbers in between, on the old timeline (before the resumed segment's
/// discontinuity), so a player standing at the hole knows the media there will never come and
/// steps over it, where it would otherwise wait for good. Pure.
struct ResumedGap: Sendable, Equatable {
    /// A longer hole is not listed: no player still waits at it (its own retries gave up long
    /// before), and its numbers would be many.
    static let longestListed = 30.0

    /// The last sequence number written down before the restart; the gap takes the ones after it.
    let afterSequence: Int
    /// Where the lost media begins on the package's clock, seconds since 1970.
    let from: Double

    /// The gap's segments before the resumed rendition's first new segment, `first`, which
    /// begins at `start` (seconds since 1970): every number in between, sharing the lost time
    /// evenly, each with its program date-time. None when nothing was lost, no number is free,
    /// or the hole is longer than ``longestListed``.
    func segments(before first: Int, startingAt start: Double, initVersion: Int) -> [PackagedSegment] {
        let count = first - afterSequence - 1
        let lost = start - from
        guard count > 0, lost >= 0.001, lost <= Self.longestListed else { return [] }
        let each = lost / Double(count)
        return (0..<count).map { i in
            var s = PackagedSegment(sequence: afterSequence + 1 + i, duration: each, bytes: [], discontinuity: false, sampleCount: 0)
            s.programDateTime = from + Double(i) * each
            s.initVersion = initVersion
            s.gap = true
            return s
        }
    }
}
