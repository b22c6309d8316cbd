/// When the transcoder takes a preview still of the source and how big it is: the first frame at
/// or after every `interval` of stream time (so a stream that moves to another worker keeps its
/// rhythm), scaled so its short side is at most ``maximumShortSide`` with the aspect ratio kept.
/// The stories feed shows it blurred while the next stream loads. Pure.
public struct ThumbnailSchedule: Sendable {
    public static let maximumShortSide = 360

    private var grid: KeyframeCadence?

    /// - Parameters:
    ///   - interval: seconds of stream time between stills; 0 or less turns them off.
    ///   - timescale: ticks per second of the pts passed to ``isDue(pts:)``.
    public init(interval: Double, timescale: Int64) {
        grid = interval > 0 ? KeyframeCadence(gopDuration: interval, timescale: timescale) : nil
    }

    public mutating func isDue(pts: Int64) -> Bool {
        grid?.isKeyframe(pts: pts) ?? false
    }

    /// The stories feed's placeholder: 16x9, or 9x16 for an upright source; the page stretches
    /// and blurs it, so its aspect need not be the source's.
    public static func placeholderSize(sourceWidth: Int, sourceHeight: Int) -> (width: Int, height: Int) {
        sourceHeight > sourceWidth ? (9, 16) : (16, 9)
    }

    /// The placeholder's JPEG quantiser scale: coarse, since it is shown blurred (most of its
    /// bytes are the JPEG's tables anyway).
    public static let placeholderQuality = 12

    public static func size(sourceWidth: Int, sourceHeight: Int) -> (width: Int, height: Int) {
        let short = min(sourceWidth, sourceHeight)
        guard short > 0 else { return (0, 0) }
        let scale = Double(min(short, maximumShortSide)) / Double(short)
        let even = { (v: Double) in max(2, Int((v / 2).rounded()) * 2) }
        return (even(Double(sourceWidth) * scale), even(Double(sourceHeight) * scale))
    }
}
