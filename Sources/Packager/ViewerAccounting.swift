import Foundation
import Metrics
import Synchronization

/// Viewers and egress per stream, reported as metrics (and from there to the collector):
/// `storecast_packager_viewers{stream}` is the number of distinct viewer sessions that fetched
/// anything of the stream in the last `window` seconds; `storecast_packager_egress_bytes_total{stream}`
/// counts the bytes served. A session is the `X-Playback-Session-Id` header when the player
/// sends one (AVPlayer does), otherwise the client address and User-Agent.
public final class ViewerAccounting: Sendable {
    public static let window = 30.0

    /// Per stream: its viewer window and its egress counter (made once, not per request).
    private let streams = Mutex<[String: (window: ViewerWindow, egress: Counter)]>([:])
    private let now: @Sendable () -> Double

    public init(now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.now = now
    }

    /// A player's own session id counts only with its address (a client making up ids counts
    /// once per id still, but cannot take another address's session).
    public static func session(playbackSessionID: String?, address: String?, userAgent: String?) -> String {
        if let id = playbackSessionID, !id.isEmpty { return "id:\(address ?? "?")|" + id.prefix(128) }
        return "ua:\(address ?? "?")|\(userAgent?.prefix(256) ?? "")"
    }

    /// Counts the session and `bytes`; returns the stream's egress counter for bytes that go out
    /// later (a streamed answer).
    @discardableResult
    public func served(stream: String, session: String, bytes: Int) -> Counter {
        let t = now()
        let egress = streams.withLock { all -> Counter in
            if all[stream] == nil {  // the counter is made once per stream, not per request
                all[stream] = (ViewerWindow(), Counter(label: "storecast_packager_egress_bytes_total", dimensions: [("stream", stream)]))
            }
            all[stream]!.window.saw(session, at: t)
            return all[stream]!.egress
        }
        if bytes > 0 { egress.increment(by: bytes) }
        return egress
    }

    /// Updates the viewer gauges; streams without viewers for a window report 0 once, then drop out.
    @discardableResult
    public func report() -> [String: Int] {
        let t = now()
        let counts = streams.withLock { all -> [String: Int] in
            var out: [String: Int] = [:]
            for key in all.keys {
                let n = all[key]!.window.count(now: t, window: Self.window)
                out[key] = n
                if n == 0 { all[key] = nil }
            }
            return out
        }
        for (stream, n) in counts { Gauge(label: "storecast_packager_viewers", dimensions: [("stream", stream)]).record(n) }
        return counts
    }
}
