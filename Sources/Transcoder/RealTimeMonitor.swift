/// Is a stream's transcoding keeping up with real time? Compares the stream time of the frames
/// done with the wall time spent since a reference point. A stream more than ``shedAfter``
/// seconds behind sheds its top rung (then the next, …), at most once per ``holdOff``: queuing
/// without bound would only make every viewer later. Pure: times are parameters.
public struct RealTimeMonitor: Sendable {
    public static let shedAfter = 1.5
    public static let holdOff = 5.0

    private var origin: (wall: Double, stream: Double)?
    private var lastShed: Double?
    /// Seconds behind real time at the last observation (0 when keeping up).
    public private(set) var lag = 0.0

    public init() {}

    /// Records that frames up to `streamTime` are done at `wall` (both in seconds); true means
    /// shed a rung now.
    public mutating func observe(wall: Double, streamTime: Double) -> Bool {
        guard let o = origin else {
            origin = (wall, streamTime)
            return false
        }
        let behind = (wall - o.wall) - (streamTime - o.stream)
        if behind < 0 {
            // Ahead (a GOP-cache burst at start, a timeline jump): measure from here on.
            origin = (wall, streamTime)
            lag = 0
            return false
        }
        lag = behind
        guard behind > Self.shedAfter, wall - (lastShed ?? -.infinity) >= Self.holdOff else { return false }
        lastShed = wall
        origin = (wall, streamTime)  // the lag already built up is not held against the smaller ladder
        return true
    }
}
