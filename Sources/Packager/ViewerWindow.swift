/// Concurrent viewers of one stream: distinct viewer sessions seen within a sliding window.
/// A session is whatever identifies one player (see `ViewerAccounting.session`). Pure.
public struct ViewerWindow: Sendable, Equatable {
    public private(set) var lastSeen: [String: Double] = [:]

    public init() {}

    /// Sessions remembered per stream; past it new ones are not counted (memory stays bounded
    /// whatever session ids clients make up).
    public static let maximumSessions = 200_000

    public mutating func saw(_ session: String, at seconds: Double) {
        if lastSeen[session] == nil, lastSeen.count >= Self.maximumSessions { return }
        lastSeen[session] = max(lastSeen[session] ?? seconds, seconds)
    }

    /// Sessions seen within `window` seconds before `now`; older ones are forgotten.
    public mutating func count(now: Double, window: Double) -> Int {
        lastSeen = lastSeen.filter { now - $0.value <= window }
        return lastSeen.count
    }
}
