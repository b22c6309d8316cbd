/// The frame rate of a publish measured from its video timestamps, for publishers whose
/// metadata declares none (Larix's `onMetaData` has no `framerate`). Pure.
///
/// Measured once, over the first `span` milliseconds of video: the typical gap between frames
/// is the median one, and the rate is one over the mean of the gaps within half to twice it,
/// so a pause (an app sent to the background) or repeated timestamps (a clamped step back)
/// do not skew it. Rounded to 0.01; outside `plausible` it is not reported.
public struct FrameRateEstimator: Sendable {
    /// How much video is measured before the estimate is given.
    public static let span: Int64 = 2000
    /// Gaps needed for an estimate; a publish that pauses early measures on until it has them.
    public static let minimumGaps = 10
    /// Frames after which it stops trying.
    public static let maximumFrames = 600
    public static let plausible: ClosedRange<Double> = 1...240
    private var first: Int64?
    private var last: Int64 = 0
    private var gaps: [Int64] = []
    private var done = false

    public init() {}

    /// Takes one video frame's decode timestamp (milliseconds); returns the estimate once, when
    /// `span` of video has been seen, and nil before and after.
    public mutating func frame(dts: Int64) -> Double? {
        guard !done else { return nil }
        guard let first else {
            self.first = dts
            last = dts
            return nil
        }
        gaps.append(dts - last)
        last = dts
        if gaps.count >= Self.maximumFrames { done = true }
        guard dts - first >= Self.span, gaps.count >= Self.minimumGaps else { return nil }
        let median = gaps.sorted()[gaps.count / 2]
        let typical = gaps.filter { $0 > 0 && $0 * 2 >= median && $0 <= median * 2 }
        guard median > 0, typical.count >= Self.minimumGaps else { return nil }
        done = true
        let fps = (1000 / (Double(typical.reduce(0, +)) / Double(typical.count)) * 100).rounded() / 100
        return Self.plausible.contains(fps) ? fps : nil
    }

    /// The publisher declared its rate: nothing is measured.
    public mutating func declared() { done = true }
}
