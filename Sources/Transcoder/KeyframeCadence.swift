/// Decides which source frames become IDR frames in every rendition: the first frame at or after
/// each multiple of the GOP duration on the stream timeline. Because the decision is made once
/// per source frame and applied to all rungs, keyframes align across the ladder.
public struct KeyframeCadence: Sendable {
    public let gopTicks: Int64
    private var lastIndex: Int64?

    /// - Parameters:
    ///   - gopDuration: seconds between keyframes (1 or 2 in the field).
    ///   - timescale: ticks per second of the timestamps passed in.
    public init(gopDuration: Double, timescale: Int64) {
        gopTicks = max(1, Int64(gopDuration * Double(timescale)))
    }

    public mutating func isKeyframe(pts: Int64) -> Bool {
        let index = pts >= 0 ? pts / gopTicks : (pts - gopTicks + 1) / gopTicks
        if let last = lastIndex, index <= last { return false }
        lastIndex = index
        return true
    }

    /// Forgets the cadence (after a timeline discontinuity) so the next frame is a keyframe.
    public mutating func reset() { lastIndex = nil }
}
