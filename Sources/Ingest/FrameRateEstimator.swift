/// The frame rate of a publish measured from its video timestamps, for publishers whose
/// metadata declares none (Larix's `onMetaData` has no `framerate`). Pure.
///
/// Measured once, over the first `span` milliseconds of video: frames counted / time between
/// the first and the last, rounded to 0.01. Timestamps are the session's normalised decode
/// timeline (monotonic), so corrections upstream cannot make it negative.
public struct FrameRateEstimator: Sendable {
    /// How much video is measured before the estimate is given.
    public static let span: Int64 = 2000
    private var first: Int64?
    private var frames = 0
    private var done = false

    public init() {}

    /// Takes one video frame's decode timestamp (milliseconds); returns the estimate once, when
    /// `span` of video has been seen, and nil before and after.
    public mutating func frame(dts: Int64) -> Double? {
        guard !done else { return nil }
        guard let first else {
            self.first = dts
            frames = 1
            return nil
        }
        frames += 1
        let elapsed = dts - first
        guard elapsed >= Self.span else { return nil }
        done = true
        return (Double(frames - 1) * 1000 / Double(elapsed) * 100).rounded() / 100
    }

    /// The publisher declared its rate: nothing is measured.
    public mutating func declared() { done = true }
}
