import StorecastWire

/// The latest group of pictures of one stream: its announce and every unit since the last video
/// keyframe, so a worker that joins or takes over starts decoding at once (ZeroMQ guide's Clone
/// pattern: snapshot first, then live updates).
public struct GOPCache: Sendable {
    /// A GOP longer than this is cut (a publisher that never sends keyframes must not grow us).
    public static let maximumUnits = 2_000
    public static let maximumBytes = 32 * 1024 * 1024
    /// A stream without video has no keyframes to start from: its last this many milliseconds
    /// of audio are kept instead.
    public static let audioOnlyMilliseconds: Int64 = 2_000

    public private(set) var announce: StreamAnnounce? {
        didSet { audioOnly = announce.map { !$0.tracks.contains { $0.kind == .video } } ?? false }
    }
    /// The announced stream has no video (kept with the announce, not worked out per unit).
    private var audioOnly = false
    public private(set) var units: [AccessUnit] = []
    private var bytes = 0

    public init() {}

    public mutating func record(_ message: WireMessage) {
        switch message {
        case .streamAnnounce(let a):
            announce = a
        case .accessUnit(let u):
            if u.trackID == StreamAssembler.videoTrack, u.isKeyframe {
                units.removeAll(keepingCapacity: true)
                bytes = 0
            } else if audioOnly {
                // Audio only: a sliding window instead of a GOP.
                let keepFrom = units.firstIndex { $0.dts > u.dts - Self.audioOnlyMilliseconds } ?? units.count
                if keepFrom > 0 {
                    bytes -= units[..<keepFrom].reduce(0) { $0 + $1.data.count }
                    units.removeFirst(keepFrom)
                }
            }
            // Until the first keyframe nothing is decodable; keep audio only.
            if units.isEmpty, u.trackID == StreamAssembler.videoTrack, !u.isKeyframe { return }
            if units.count >= Self.maximumUnits || bytes + u.data.count > Self.maximumBytes { return }
            units.append(u)
            bytes += u.data.count
        default:
            break
        }
    }

    /// The announce went to a worker: a later consumer gets it without the discontinuity flag
    /// (the reconnect it marks is already behind the stream; replayed again it would make the
    /// packager cut a second discontinuity instead of splicing).
    public mutating func announceDelivered() {
        announce?.discontinuity = false
    }

    /// Where a consumer starting from the snapshot catches up with what a previous one may
    /// already have delivered: the latest presentation time among its video units (ingest ms).
    public var replayEnd: Int64? {
        units.lazy.filter { $0.trackID == StreamAssembler.videoTrack }.map { $0.dts + Int64($0.compositionOffset) }.max()
    }

    /// Messages that bring a new consumer up to the live edge.
    public var snapshot: [WireMessage] {
        guard let announce else { return [] }
        return [.streamAnnounce(announce)] + units.map { .accessUnit($0) }
    }
}
