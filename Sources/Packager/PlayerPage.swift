/// The player page: native HLS where the browser has it, hls.js (from a configurable URL)
/// elsewhere. Served by the packager so the page and the playlists share an origin.
enum PlayerPage {
    static func html(title: String, playlistURL: String, hlsJSURL: String?) -> String {
        let hls = hlsJSURL.map { "<script src=\"\(escape($0))\"></script>" } ?? ""
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Storecast</title>
        <style>body{margin:0;background:#111;color:#eee;font:14px system-ui,sans-serif}
        video{width:100%;max-height:90vh;background:#000;display:block}
        #status{padding:8px 12px;opacity:.8}</style>
        \(hls)
        </head><body>
        <video id="player" controls autoplay muted playsinline></video>
        <div id="status">Loading \(escape(title))…</div>
        <script>
        const src = \(jsString(playlistURL));
        const video = document.getElementById('player');
        const status = document.getElementById('status');
        function say(t) { status.textContent = t; }
        video.addEventListener('playing', () => say('Live'));
        video.addEventListener('waiting', () => say('Buffering…'));
        // Native playback: wait until the origin has the stream (404 before the first segments),
        // and start over after an error, so a page opened before the seller goes live still plays.
        async function startNative() {
          while (true) {
            try { const r = await fetch(src, { cache: 'no-store' }); if (r.ok) break; } catch (e) {}
            say('Waiting for the stream to start…');
            await new Promise(r => setTimeout(r, 1000));
          }
          video.src = src;
          video.play().catch(() => say('Press play to start'));
        }
        video.addEventListener('error', () => {
          say('Playback error: ' + (video.error && video.error.message || 'unknown') + '; retrying');
          window.storecastErrors = (window.storecastErrors || 0) + 1;
          if (window.storecastPlayer === 'native') setTimeout(startNative, 2000);
        });
        if (video.canPlayType('application/vnd.apple.mpegurl') && !(window.Hls && window.Hls.isSupported())) {
          window.storecastPlayer = 'native';
          startNative();
        } else if (window.Hls && window.Hls.isSupported()) {
          const hls = new Hls({ lowLatencyMode: true });
          hls.loadSource(src);
          hls.attachMedia(video);
          hls.on(Hls.Events.ERROR, (e, d) => { if (d.fatal) say('Playback error: ' + d.details); });
          window.storecastPlayer = 'hls.js';
          window.storecastHls = hls;
          video.play().catch(() => say('Press play to start'));
        } else {
          window.storecastPlayer = 'native-fallback';
          startNative();
        }
        </script>
        </body></html>
        """
    }

    static func index(streams: [(key: String, live: Bool)]) -> String {
        let items = streams.map { s in
            "<li><a href=\"/play/\(escape(s.key))\">\(escape(s.key))</a> \(s.live ? "● live" : "ended")</li>"
        }.joined()
        return "<!doctype html><html><head><meta charset=\"utf-8\"><title>Storecast</title></head><body><h1>Storecast streams</h1><ul>\(items.isEmpty ? "<li>No streams yet. Publish one over RTMP.</li>" : items)</ul></body></html>"
    }

    static func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }

    static func jsString(_ s: String) -> String {
        "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "<", with: "\\u003c") + "\""
    }
}
