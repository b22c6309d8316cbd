/// Decides which source frames become IDR frames in every rendition: the first frame at or after
/// each multiple of the GOP duration on the stream timeline. Because the decision is made once
/// per source frame and applied to all rungs, keyframes align across the ladder.
///
/// **Replay.** A worker that takes a stream over starts from ingest's GOP snapshot, whose frames
/// the previous worker may already have delivered; the packager continues the rendition at the
/// first keyframe after what it published, holding the last frame until then. Up to
/// `replayUntil`, a keyframe comes at least every `replaySpacing` seconds, and the first frame
/// after it is one (the previous worker may have delivered up to the snapshot's last frame), so
/// that freeze is at most that long (and fits in any LL-HLS part) instead of up to a GOP.
///
/// **Fast start.** With `fastStart`, the first frame at least that long after the first keyframe
/// is a keyframe too, unless another keyframe came sooner, so the packager can close a short
/// first segment and a shopper waiting for the show starts about a GOP sooner.
public struct KeyframeCadence: Sendable {
    public static let replaySpacing = 0.1

    public let gopTicks: Int64
    private let replaySpacingTicks: Int64
    private var fastStartTicks: Int64?
    private var firstKeyframe: Int64?
    private var lastIndex: Int64?
    private var lastKeyframe: Int64?
    /// Frames up to this time (same timescale) replay what may already have been delivered.
    public var replayUntil: Int64?

    /// - Parameters:
    ///   - gopDuration: seconds between keyframes (1 or 2 in the field).
    ///   - timescale: ticks per second of the timestamps passed in.
    ///   - fastStart: seconds after the first keyframe to the one extra keyframe (nil: none).
    public init(gopDuration: Double, timescale: Int64, fastStart: Double? = nil) {
        gopTicks = max(1, Int64(gopDuration * Double(timescale)))
        replaySpacingTicks = max(1, Int64(Self.replaySpacing * Double(timescale)))
        fastStartTicks = fastStart.map { max(1, Int64($0 * Double(timescale))) }
    }

    public mutating func isKeyframe(pts: Int64) -> Bool {
        let index = pts >= 0 ? pts / gopTicks : (pts - gopTicks + 1) / gopTicks
        var keyframe = lastIndex.map { index > $0 } ?? true
        if keyframe { lastIndex = index }
        if let first = firstKeyframe, let fast = fastStartTicks, pts - first >= fast { keyframe = true }
        if let until = replayUntil {
            if pts > until {
                replayUntil = nil
                keyframe = true
            } else if let last = lastKeyframe, pts - last >= replaySpacingTicks {
                keyframe = true
            }
        }
        if keyframe {
            lastKeyframe = pts
            // Any keyframe after the first ends the fast start (it was that one, or came sooner).
            if firstKeyframe == nil { firstKeyframe = pts } else { fastStartTicks = nil }
        }
        return keyframe
    }

    /// Forgets the cadence (after a timeline discontinuity) so the next frame is a keyframe.
    public mutating func reset() { lastIndex = nil }
}
