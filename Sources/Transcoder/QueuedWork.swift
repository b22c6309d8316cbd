import StorecastWire

/// A message waiting at a worker, with when it arrived (seconds on the worker's monotonic clock).
struct QueuedMessage: Sendable {
    let message: WireMessage
    let arrived: Double
}

/// The catch-up skip over a stream's queued input: video before the newest queued keyframe of
/// `videoTracks` goes; audio, announces and ends stay in order (audio is cheap to pass on, and
/// the seller keeps talking while the picture jumps forward). Nothing goes without a keyframe to
/// resume from, since a P-frame without its references would only decode to garbage. Pure.
enum CatchUpSkip {
    /// What stays, and how many units were dropped (0: no keyframe queued, nothing changed).
    static func apply(to queued: [QueuedMessage], videoTracks: Set<UInt8>) -> (kept: [QueuedMessage], dropped: Int) {
        func isVideo(_ m: QueuedMessage) -> AccessUnit? {
            if case .accessUnit(let u) = m.message, videoTracks.contains(u.trackID) { u } else { nil }
        }
        guard let resume = queued.lastIndex(where: { isVideo($0)?.isKeyframe == true }) else { return (queued, 0) }
        var kept: [QueuedMessage] = []
        kept.reserveCapacity(queued.count)
        var dropped = 0
        for (i, m) in queued.enumerated() {
            if i < resume, isVideo(m) != nil { dropped += 1 } else { kept.append(m) }
        }
        return (kept, dropped)
    }
}
