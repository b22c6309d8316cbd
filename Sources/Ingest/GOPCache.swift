import StorecastWire

/// The latest group of pictures of one stream: its announce and every unit since the last video
/// keyframe, so a worker that joins or takes over starts decoding at once (ZeroMQ guide's Clone
/// pattern: snapshot first, then live updates).
public struct GOPCache: Sendable {
    /// A GOP longer than this is cut (a publisher that never sends keyframes must not grow us).
    public static let maximumUnits = 2_000
    public static let maximumBytes = 32 * 1024 * 1024

    public private(set) var announce: StreamAnnounce?
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

    /// Messages that bring a new consumer up to the live edge.
    public var snapshot: [WireMessage] {
        guard let announce else { return [] }
        return [.streamAnnounce(announce)] + units.map { .accessUnit($0) }
    }
}
