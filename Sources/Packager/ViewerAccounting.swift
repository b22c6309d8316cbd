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

    public static func session(playbackSessionID: String?, address: String?, userAgent: String?) -> String {
        if let id = playbackSessionID, !id.isEmpty { return "id:" + id.prefix(128) }
        return "ua:\(address ?? "?")|\(userAgent?.prefix(256) ?? "")"
    }

    public func served(stream: String, session: String, bytes: Int) {
        let t = now()
        let egress = streams.withLock { all -> Counter in
            let egress = Self.egress(stream, in: &all)
            all[stream]!.window.saw(session, at: t)
            return egress
        }
        if bytes > 0 { egress.increment(by: bytes) }
    }

    /// Bytes of a streamed answer, counted as they go out (its session was counted when it began).
    public func sent(stream: String, bytes: Int) {
        guard bytes > 0 else { return }
        streams.withLock { Self.egress(stream, in: &$0) }.increment(by: bytes)
    }

    /// The stream's egress counter, its entry made on first use.
    private static func egress(_ stream: String, in all: inout [String: (window: ViewerWindow, egress: Counter)]) -> Counter {
        if all[stream] == nil {
            all[stream] = (ViewerWindow(), Counter(label: "storecast_packager_egress_bytes_total", dimensions: [("stream", stream)]))
        }
        return all[stream]!.egress
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
