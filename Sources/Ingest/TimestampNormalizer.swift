/// Turns RTMP's 32-bit millisecond timestamps into one monotonic 64-bit timeline per session:
/// 32-bit wrap is unwrapped, backward steps and wild jumps are bridged, and each correction is
/// counted so operators can see misbehaving encoders.
public struct TimestampNormalizer: Sendable {
    /// A forward step larger than this is a publisher clock jump, not elapsed time.
    public static let maximumForwardJumpMilliseconds: Int64 = 10_000
    /// A track whose own clock steps back by more than this, while the session's clock steps
    /// back too, is a publisher clock reset, not audio and video interleaved out of order (which
    /// may differ by more than a second on some relays and cameras, and then never steps back
    /// within one track). Held at the last time instead, every frame until the clock caught up
    /// would carry one timestamp: seconds of video the encoders must drop, and a frozen picture.
    public static let maximumBackwardStepMilliseconds: Int64 = 1_000

    public enum Correction: Sendable, Equatable { case none, wrapped, backwards, jumped }

    private var lastRaw: UInt32?
    private var lastOut: Int64 = 0
    private var lastPerTrack: [UInt8: Int64] = [:]
    private var lastRawPerTrack: [UInt8: UInt32] = [:]

    public init() {}

    /// Maps a wire timestamp for `track` to the session timeline.
    public mutating func normalize(_ raw: UInt32, track: UInt8) -> (Int64, Correction) {
        var correction = Correction.none
        var out: Int64
        if let last = lastRaw {
            let delta = Int64(Int32(bitPattern: raw &- last))
            if raw < last, delta > 0 { correction = .wrapped }
            if delta > Self.maximumForwardJumpMilliseconds {
                correction = .jumped
                out = lastOut + 1
            } else if delta < -Self.maximumForwardJumpMilliseconds
                        || (delta < -Self.maximumBackwardStepMilliseconds
                            && lastRawPerTrack[track].map { Int64(Int32(bitPattern: raw &- $0)) < -Self.maximumBackwardStepMilliseconds } == true) {
                correction = .jumped
                out = lastOut + 1
            } else {
                out = lastOut + delta
            }
        } else {
            out = 0
        }
        lastRaw = raw
        lastRawPerTrack[track] = raw
        lastOut = out
        // Within one track decode order must never go backwards.
        if let prev = lastPerTrack[track], out < prev {
            if correction == .none { correction = .backwards }
            out = prev
        }
        lastPerTrack[track] = out
        return (out, correction)
    }
}
