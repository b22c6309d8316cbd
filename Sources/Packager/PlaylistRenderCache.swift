import Metrics
import Synchronization

/// Media playlists as rendered, by stream version: the players reloading a playlist at the
/// same live edge (every blocked request wakes on the same new part) share one rendering and
/// its ETag instead of each rendering and hashing it — a 2 h DVR playlist is 3,600 segments.
/// Keyed by everything a rendering depends on besides the package: rendition, token, skip.
final class PlaylistRenderCache: Sendable {
    struct Rendered: Sendable {
        let bytes: [UInt8]
        let etag: String
        /// The same playlist in gzip, made once with the rendering (``PlaylistEncoding``), with an
        /// ETag of its own: it is another representation (RFC 9110 8.8.3). Nil when gzip would
        /// not make it smaller.
        let gzipped: (bytes: [UInt8], etag: String)?

        init(_ text: String) {
            let bytes = Array(text.utf8), etag = ETag.of(bytes)
            (self.bytes, self.etag) = (bytes, etag)
            gzipped = PlaylistEncoding.gzip(bytes).map { ($0, String(etag.dropLast()) + "-gzip\"") }
        }

        /// What it weighs in the cache.
        var size: Int { bytes.count + (gzipped?.bytes.count ?? 0) }
    }

    private struct State {
        var entries: [String: (version: UInt64, rendered: Rendered)] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())
    /// Above this many bytes of playlists the cache starts over (stale entries of ended streams
    /// and expired tokens go with it).
    let capacityBytes: Int
    private let renders = Counter(label: "storecast_packager_playlist_renders_total")
    private let reuses = Counter(label: "storecast_packager_playlist_render_reuses_total")

    init(capacityBytes: Int = 64 << 20) {
        self.capacityBytes = capacityBytes
    }

    /// The playlist `key` names at the stream's `version`; `render` runs only if no earlier
    /// request rendered that version.
    func playlist(_ key: String, version: UInt64, render: () -> String) -> Rendered {
        if let entry = state.withLock({ $0.entries[key] }), entry.version == version {
            reuses.increment()
            return entry.rendered
        }
        renders.increment()
        let rendered = Rendered(render())
        state.withLock { s in
            if let old = s.entries[key] {
                guard old.version < version else { return }  // a newer one is already here
                s.bytes -= old.rendered.size
            }
            if s.bytes + rendered.size > capacityBytes {
                s.entries.removeAll(keepingCapacity: true)
                s.bytes = 0
            }
            s.entries[key] = (version, rendered)
            s.bytes += rendered.size
        }
        return rendered
    }

    var count: Int { state.withLock { $0.entries.count } }
}
