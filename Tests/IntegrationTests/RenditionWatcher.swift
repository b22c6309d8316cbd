import Foundation

/// Follows every rendition of a live stream as LL-HLS players do: reads the multivariant
/// playlist, then, for each media playlist it lists (video rungs and audio), keeps a blocking
/// reload waiting for the part its preload hint names. Records when each new part appeared and
/// whether an `#EXT-X-ENDLIST` came, so a fault test can tell how long each rendition went
/// without a new part, judged from the player's side (not the transcoder's output).
final class RenditionWatcher: @unchecked Sendable {
    struct Timeline: Sendable {
        /// Seconds since the watcher started at which a new part was listed.
        var arrivals: [Double] = []
        var endlist = false
        var failures = 0
    }

    private let lock = NSLock()
    private var timelines: [String: Timeline] = [:]
    private var stopped = false
    private let started = ContinuousClock.now
    /// The rendition playlists' URIs from the multivariant playlist, as served.
    let renditions: [String]

    private var now: Double { (ContinuousClock.now - started) / .seconds(1) }

    /// Starts watching every rendition `masterURL` lists (waits for the multivariant playlist).
    init(masterURL: String) async throws {
        var master = ""
        _ = await StorecastStack.eventually(timeout: .seconds(30)) {
            master = await TestEnvironment.httpText(masterURL)
            return master.contains("#EXT-X-STREAM-INF")
        }
        let uris = master.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.hasSuffix(".m3u8") }.map(String.init)
            + master.matches(of: /#EXT-X-MEDIA:[^\n]*URI="([^"]+)"/).map { String($0.1) }
        guard !uris.isEmpty else { throw TestEnvironment.Failure(description: "no renditions in the multivariant playlist:\n\(master)") }
        renditions = uris
        let base = String(masterURL[..<(masterURL.lastIndex(of: "/") ?? masterURL.endIndex)])
        for uri in uris {
            timelines[uri] = Timeline()
            let url = base + "/" + uri
            Task { await self.follow(uri, url: url) }
        }
    }

    private func record(_ uri: String, _ change: (inout Timeline) -> Void) {
        lock.lock()
        change(&timelines[uri, default: Timeline()])
        lock.unlock()
    }

    static func hint(_ playlist: String) -> (msn: Int, part: Int)? {
        playlist.firstMatch(of: /#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s/).map { (Int($0.1)!, Int($0.2)!) }
    }

    private func follow(_ uri: String, url: String) async {
        var playlist = await TestEnvironment.httpText(url)
        var lastHint = Self.hint(playlist)
        // Stopped by a flag, never by cancelling the task: cancelling a request in flight
        // crashes FoundationNetworking on Linux ("a task that is not in the registry").
        while !isStopped {
            if playlist.contains("#EXT-X-ENDLIST") {
                record(uri) { $0.endlist = true }
                return
            }
            guard let hint = Self.hint(playlist) else {
                try? await Task.sleep(for: .milliseconds(100))
                playlist = await TestEnvironment.httpText(url)
                continue
            }
            if let last = lastHint, hint != last {
                let at = now
                record(uri) { $0.arrivals.append(at) }
            }
            lastHint = hint
            guard let r = await TestEnvironment.httpExchange("\(url)?_HLS_msn=\(hint.msn)&_HLS_part=\(hint.part)", timeout: 12), r.status == 200 else {
                // A blocking reload that timed out (503) or failed: a plain reload, as players do.
                record(uri) { $0.failures += 1 }
                try? await Task.sleep(for: .milliseconds(100))
                playlist = await TestEnvironment.httpText(url)
                continue
            }
            playlist = String(decoding: r.body, as: UTF8.self)
        }
    }

    /// Seconds since the watcher started (to mark faults on its timeline).
    var elapsed: Double { now }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    /// Whether every rendition has listed parts steadily (no gap over `gap` seconds) for the
    /// last `seconds`, all after `since`: a fault test waits for this after the fault ends
    /// (with `since` past the backlog's burst, so the stretch is at live pace), instead of a
    /// fixed time, and then judges the whole timeline.
    func everyRenditionAdvances(since: Double, for seconds: Double, gap: Double = 1.5) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let end = now
        guard end - seconds >= since else { return false }
        return timelines.values.allSatisfy { t in
            t.arrivals.contains { $0 > since } && Self.longestGap(t.arrivals, in: (end - seconds)...end) <= gap
        }
    }

    /// Stops following (each rendition after its request in flight) and returns each
    /// rendition's timeline.
    func stop() -> [String: Timeline] {
        lock.lock()
        defer { lock.unlock() }
        stopped = true
        return timelines
    }

    /// The longest time without a new part in `window`, counting from its start to the first
    /// part and from the last part to its end (a rendition that stopped has a gap to the end).
    static func longestGap(_ arrivals: [Double], in window: ClosedRange<Double>) -> Double {
        let inside = arrivals.filter { window.contains($0) }
        let points = [window.lowerBound] + inside + [window.upperBound]
        return zip(points, points.dropFirst()).map { $1 - $0 }.max() ?? (window.upperBound - window.lowerBound)
    }
}
