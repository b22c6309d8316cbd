/// How a page recovers a player whose hls.js was wedged on purpose (its part and segment
/// requests never sent, its playlists going on): the video's position sampled every 250 ms for
/// at most `limit`, the longest time it stood still, and when it moved again after the page
/// counted a recovery. Shared by the player page's and the feed's tests.
struct WedgeRecovery {
    /// One sample: the video's position, the page's recovery count, and what a failure prints.
    struct Sample {
        var time: Double
        var recoveries: Int
        var shown: [Any]
    }

    var frozeFor = Duration.zero
    /// Since the wedge; nil when the video did not move on after a recovery within the limit.
    var resumedAfter: Duration?
    var samples: [[Any]] = []

    /// `from`: the video's position when the wedge began; `sample`: nil when the page could not
    /// be read.
    static func watch(from: Double?, recoveriesBefore: Int, limit: Duration = .seconds(15), sample: () async throws -> Sample?) async throws -> WedgeRecovery {
        var recovery = WedgeRecovery()
        let wedgedAt = ContinuousClock.now
        var lastTime = from, stuckSince: ContinuousClock.Instant?
        while ContinuousClock.now - wedgedAt < limit {
            try await Task.sleep(for: .milliseconds(250))
            guard let s = try await sample() else { continue }
            recovery.samples.append(s.shown)
            if s.time == lastTime { stuckSince = stuckSince ?? .now } else if let since = stuckSince {
                recovery.frozeFor = max(recovery.frozeFor, .now - since)
                stuckSince = nil
                if s.recoveries > recoveriesBefore { recovery.resumedAfter = .now - wedgedAt; break }
            }
            lastTime = s.time
        }
        return recovery
    }
}
