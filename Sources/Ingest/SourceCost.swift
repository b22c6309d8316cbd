/// What one live stream costs a transcoder worker, in slots: a worker's `--slots` counts
/// 1080p30 sources through the ladder, and a source costs its pixel rate against that (fair share,
/// issue 23): 1080p60 takes 2 slots, 720p30 0.44, 480p30 0.2. Pure.
///
/// - Below ``minimum`` a source still costs that much (decoding, audio, the rungs' fixed work),
///   so a 2-slot worker takes at most 8 streams.
/// - Until the frame rate is known (declared in onMetaData, or measured over the first 2 s of
///   video) it is taken as ``assumedFrameRate``; the cost is weighed again once it is.
/// - A stream whose size is not known yet (no video announced) costs one slot, as before weighting.
public enum SourceCost {
    public static let referencePixelRate = 1920.0 * 1080 * 30
    public static let minimum = 0.25
    public static let assumedFrameRate = 30.0
    public static let unknown = 1.0

    public static func slots(width: Int, height: Int, frameRate: Double?) -> Double {
        guard width > 0, height > 0 else { return unknown }
        let rate = Double(width) * Double(height) * (frameRate.flatMap { $0 > 0 ? $0 : nil } ?? assumedFrameRate)
        return max(minimum, (rate / referencePixelRate * 1000).rounded() / 1000)
    }
}
