/// The bitrate a publisher sends (its media, audio and video, without RTMP's framing), measured
/// over `window` of stream time, for the session's live status. Pure.
///
/// Stream time, not arrival time: a publisher that stalls and then bursts to catch up sent the
/// same bits for the same media, and one that cuts its encoder's bitrate (×0.75 on a congested
/// network) shows it within a window. A jump in the timestamps (back more than a second, or a
/// gap longer than the window: a stall, a reconnect, a wrap) starts a new window instead of
/// reporting one stretched over the jump.
public struct SourceBitrateMeter: Sendable {
    /// Milliseconds of stream time one figure covers.
    public static let window: Int64 = 5000
    /// How far timestamps may step back (audio and video interleave) before it counts as a jump.
    public static let reorderTolerance: Int64 = 1000
    private var start: Int64?
    private var latest: Int64 = 0
    private var bytes = 0

    public init() {}

    /// Takes one access unit: its size and decode time (milliseconds). Returns bits per second
    /// once a window is complete, nil otherwise.
    public mutating func unit(bytes count: Int, dts: Int64) -> Int? {
        guard let start, dts >= latest - Self.reorderTolerance, dts - latest <= Self.window else {
            begin(at: dts, bytes: count)
            return nil
        }
        latest = max(latest, dts)
        let span = latest - start
        guard span >= Self.window else {
            bytes += count
            return nil
        }
        let bitrate = Int((Double(bytes) * 8 * 1000 / Double(span)).rounded())
        begin(at: latest, bytes: count)
        return bitrate
    }

    private mutating func begin(at dts: Int64, bytes count: Int) {
        start = dts
        latest = dts
        bytes = count
    }
}
