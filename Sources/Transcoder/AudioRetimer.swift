/// Moves AAC frames from ingest's millisecond timeline onto the sample-rate timeline that the
/// packager writes, snapping to exact 1024-sample steps so rounding never accumulates.
public struct AudioRetimer: Sendable {
    public static let samplesPerFrame: Int64 = 1024
    public let sampleRate: Int64
    private var next: Int64?

    public init(sampleRate: Int) { self.sampleRate = Int64(max(1, sampleRate)) }

    public mutating func retime(milliseconds: Int64) -> Int64 {
        let computed = milliseconds * sampleRate / 1000
        let out: Int64
        if let expected = next, abs(computed - expected) < Self.samplesPerFrame / 2 {
            out = expected
        } else {
            out = computed
        }
        next = out + Self.samplesPerFrame
        return out
    }
}
