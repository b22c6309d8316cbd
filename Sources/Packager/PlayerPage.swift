/// Which player the page uses where the browser has both: its own HLS (Safari's does LL-HLS;
/// Chromium's ignores parts and starts three segments back) or hls.js in low-latency mode.
/// `?player=native`, `?player=hls.js` or `?player=auto` on the page overrides it.
public enum PlayerPreference: String, Sendable, CaseIterable {
    /// hls.js wherever the browser has Media Source Extensions and is not Safari; Safari keeps
    /// its own LL-HLS player (the default).
    case auto
    case native
    case hlsJS = "hls.js"
}

/// The player page: native HLS where the browser has it, hls.js (from a configurable URL)
/// elsewhere. Served by the packager so the page and the playlists share an origin.
enum PlayerPage {
    /// `eventsURL` is the stream's Server-Sent Events at the control API (with the page's
    /// playback token): while the show has not started, the page waits on its `stream.live`
    /// instead of polling the playlist. Without it, or where the events cannot be reached, the
    /// page polls every 0.5 s.
    static func html(title: String, playlistURL: String, hlsJSURL: String?, prefer: PlayerPreference = .auto, eventsURL: String? = nil) -> String {
        let hls = hlsJSURL.map { "<script src=\"\(escape($0))\"></script>" } ?? ""
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(escape(title)) · Storecast</title>
        <style>body{margin:0;background:#111;color:#eee;font:14px system-ui,sans-serif}
        video{width:100%;max-height:90vh;background:#000;display:block}
        #status{padding:8px 12px;opacity:.8}
        #stage{position:relative}
        #card{position:absolute;left:12px;bottom:12px;display:flex;gap:10px;align-items:center;max-width:80%;padding:8px 12px 8px 8px;
          border-radius:12px;background:rgba(255,255,255,.92);color:#111;box-shadow:0 4px 16px rgba(0,0,0,.4)}
        #card[hidden]{display:none}
        #card img{width:56px;height:56px;object-fit:cover;border-radius:8px;background:#ddd}
        #card .title{font-weight:600}#card a{color:#0a58ca}</style>
        \(hls)
        </head><body>
        <div id="stage"><video id="player" controls autoplay muted playsinline></video>
        <div id="card" hidden><img alt=""><div><div class="title"></div><div class="price"></div><a target="_blank" rel="noopener">Shop now</a></div></div></div>
        <div id="status">Loading \(escape(title))…</div>
        <script>
        const src = \(jsString(playlistURL));
        const video = document.getElementById('player');
        const status = document.getElementById('status');
        function say(t) { status.textContent = t; }
        // Stalls, for the page's own status and for tests: each 'waiting' until the next 'playing'.
        window.storecastStalls = [];
        let waitingSince = null;
        // Startup: milliseconds from opening the page to the first frame on screen.
        const firstFrame = (t) => { if (window.storecastFirstFrame === undefined) window.storecastFirstFrame = t; };
        if ('requestVideoFrameCallback' in video) video.requestVideoFrameCallback((now) => firstFrame(now));
        else video.addEventListener('playing', () => firstFrame(performance.now()), { once: true });
        video.addEventListener('playing', () => {
          if (waitingSince !== null) window.storecastStalls.push((performance.now() - waitingSince) / 1000);
          waitingSince = null;
          say('Live');
        });
        video.addEventListener('waiting', () => { if (video.currentTime > 0) waitingSince = performance.now(); say('Buffering…'); });
        // Product cards (issue 18): the origin writes each as an EXT-X-DATERANGE of CLASS
        // com.storecast.highlight; hls.js (enableDateRangeMetadataCues) and Safari turn it into
        // metadata cues, one per X- attribute, all with the range's id. Every video frame shows
        // the newest card whose range holds that frame, so the card comes with the frame it
        // belongs to, not at the next timeupdate. Each card shown is recorded with the frame's
        // program date-time (hls.js) against the range's START-DATE, for tests and benchmarks.
        const cardBox = document.getElementById('card');
        window.storecastCards = [];
        let cardShown = null;
        \(cardAtScript)
        \(liveCatchUpScript)
        \(liveWatchdogScript)
        \(rungProbeScript)
        function showCard(c, mediaTime) {
          cardShown = c;
          if (!c) { cardBox.hidden = true; return; }
          cardBox.querySelector('.title').textContent = c['X-TITLE'];
          cardBox.querySelector('.price').textContent = c['X-PRICE'] ? c['X-PRICE'] + ' ' + (c['X-CURRENCY'] || '') : '';
          const img = cardBox.querySelector('img');
          if (/^https?:\\/\\//i.test(c['X-IMAGE-URL'] || '')) { img.src = c['X-IMAGE-URL']; img.hidden = false; } else img.hidden = true;
          const link = cardBox.querySelector('a');
          if (/^https?:\\/\\//i.test(c['X-LINK'] || '')) { link.href = c['X-LINK']; link.hidden = false; } else link.hidden = true;
          cardBox.hidden = false;
          // The frame's program date-time, as hls.js maps media time: its fragment's plus the offset
          // into it. A player near the live edge plays the segment still being written, listed
          // only as parts after the last whole segment, which it follows: from that one's date.
          const details = window.storecastHls && window.storecastHls.latestLevelDetails;
          const range = details && details.dateRanges && details.dateRanges[c.id];
          const whole = details ? details.fragments : [], last = whole[whole.length - 1];
          const frag = whole.find(f => f.start <= mediaTime && mediaTime < f.start + f.duration) || (last && mediaTime >= last.start + last.duration ? last : undefined);
          window.storecastCards.push({ id: c.id, title: c['X-TITLE'], mediaTime, shownAt: Date.now(),
            framePDT: frag && frag.programDateTime ? frag.programDateTime + (mediaTime - frag.start) * 1000 : null,
            startDate: range && range.startDate ? range.startDate.getTime() : null });
        }
        function onFrame(now, meta) {
          const c = storecastCardAt(video, meta.mediaTime);
          if ((c && c.id) !== (cardShown && cardShown.id)) showCard(c, meta.mediaTime);
          video.requestVideoFrameCallback(onFrame);
        }
        if ('requestVideoFrameCallback' in video) video.requestVideoFrameCallback(onFrame);
        else video.addEventListener('timeupdate', () => { const c = storecastCardAt(video, video.currentTime); if ((c && c.id) !== (cardShown && cardShown.id)) showCard(c, video.currentTime); });
        // Wait until the origin has the stream: 404 before it is announced; once announced the
        // origin holds master.m3u8 until every rendition has a whole segment. A page opened before
        // the show fetches the playlist once, then waits on the stream's events (stream.live, or
        // a state that is already playable) and fetches it again then; a 10 s poll covers an
        // event lost on the way. Where the events cannot be opened it polls every 0.5 s.
        const eventsURL = \(eventsURL.map(jsString) ?? "null");
        window.storecastWait = { via: 'polling', playlistFetches: 0, liveEvent: null };
        async function fetchPlaylist() {
          window.storecastWait.playlistFetches++;
          try { const r = await fetch(src, { cache: 'no-store' }); if (r.ok) return await r.text(); } catch (e) {}
          return null;
        }
        function waitOnEvents() {
          return new Promise(resolve => {
            window.storecastWait.via = 'events';
            const events = new EventSource(eventsURL);
            let done = false, fetching = false;
            const finish = (text) => { if (done) return; done = true; events.close(); clearInterval(slow); resolve(text); };
            const tryNow = async () => {
              if (done || fetching) return;
              fetching = true;
              const text = await fetchPlaylist();
              fetching = false;
              if (text !== null) finish(text);
            };
            events.addEventListener('state', (e) => { try { if (JSON.parse(e.data).playable) tryNow(); } catch (x) {} });
            events.addEventListener('stream.live', () => { window.storecastWait.liveEvent = performance.now(); tryNow(); });
            events.addEventListener('stream.connected', () => say('The seller is connecting…'));
            events.addEventListener('stream.ended', () => say('The show has ended.'));
            events.addEventListener('error', () => {
              if (events.readyState === EventSource.CLOSED) { window.storecastWait.via = 'polling'; finish(null); }
            });
            const slow = setInterval(tryNow, 10000);
          });
        }
        async function waitForStream() {
          let text = await fetchPlaylist();
          if (text !== null) return text;
          say('Waiting for the stream to start…');
          if (eventsURL && window.EventSource) {
            text = await waitOnEvents();
            if (text !== null) return text;
          }
          while (true) {
            await new Promise(r => setTimeout(r, 500));
            text = await fetchPlaylist();
            if (text !== null) return text;
          }
        }
        // Chromium's native HLS (any browser whose user agent says Chrome/) ignores LL-HLS parts
        // and starts a live stream at the third whole segment from the end. If it has fetched
        // every listed segment before it starts playing, it treats the start as resuming a paused
        // live stream: it drops what it buffered, reloads the playlist and fails
        // (DEMUXER_ERROR_COULD_NOT_PARSE) unless a newer segment is listed. A show's playlists
        // are that short for its first GOPs (and after a restart, since the last
        // EXT-X-DISCONTINUITY), so there it waits until every listed media playlist has three whole
        // segments (polled every 0.5 s, for at most 10 s; a playlist that cannot be fetched is not
        // waited for). Other native players (Safari's LL-HLS) start at once.
        // Whole segments since the last EXT-X-DISCONTINUITY (all of them without one).
        function timelineSegments(playlist) {
          return playlist.split(/#EXT-X-DISCONTINUITY\\r?\\n/).pop().split('#EXTINF').length - 1;
        }
        window.storecastTimelineSegments = timelineSegments;  // for the browser tests
        async function waitForChromiumSegments(master) {
          if (!/Chrome\\//.test(navigator.userAgent)) return;
          // At most 10 s (a show that ends sooner, a playlist that fails), then it starts anyway.
          for (let round = 0; round < 20; round++) {
            const uris = master.split(/\\r?\\n/).map(l => l.trim()).filter(l => l && !l.startsWith('#'))
              .concat([...master.matchAll(/URI="([^"]+)"/g)].map(m => m[1]))
              .map(u => new URL(u, new URL(src, location.href)).href);
            const texts = await Promise.all(uris.map(u => fetch(u, { cache: 'no-store' }).then(r => r.ok ? r.text() : null).catch(() => null)));
            // Segments of the current timeline: after a show restarted on the same stream the
            // playlist keeps the last show's segments before an EXT-X-DISCONTINUITY, and Chromium
            // starts (and failed) within the new one.
            if (texts.every(t => t === null || timelineSegments(t) >= 3)) return;
            say('Starting…');
            await new Promise(r => setTimeout(r, 500));
            // Renditions come and go while a show starts (a rung shed under load): read it again.
            master = await fetch(src, { cache: 'no-store' }).then(r => r.ok ? r.text() : master).catch(() => master);
          }
        }
        // Native playback, started over after an error, so a page opened before the seller goes
        // live still plays.
        async function startNative() {
          await waitForChromiumSegments(await waitForStream());
          video.src = src;
          video.play().catch(() => say('Press play to start'));
        }
        video.addEventListener('error', () => {
          say('Playback error: ' + (video.error && video.error.message || 'unknown') + '; retrying');
          window.storecastErrors = (window.storecastErrors || 0) + 1;
          if (window.storecastPlayer === 'native') setTimeout(startNative, 2000);
        });
        // The operator's preference (--player), or ?player= on the page: native HLS (Safari,
        // iOS, Chromium with HLS) or hls.js in low-latency mode; each one is the fallback of the
        // other. auto (the default): hls.js wherever Media Source Extensions exist and the browser
        // is not Safari, whose own player does LL-HLS; Chromium's native HLS plays 6-8 s behind.
        const prefer = new URLSearchParams(location.search).get('player') || \(jsString(prefer.rawValue));
        const native = video.canPlayType('application/vnd.apple.mpegurl') !== '';
        const hlsJS = window.Hls && window.Hls.isSupported();
        const safari = \(safariTest);
        const wantHlsJS = prefer === 'hls.js' || (prefer === 'auto' && !safari);
        if (native && !(wantHlsJS && hlsJS)) {
          window.storecastPlayer = 'native';
          startNative();
        } else if (hlsJS) {
          window.storecastPlayer = 'hls.js';
          window.storecastErrorDetails = [];
          window.storecastRecoveries = 0;
          let hls = null, catchUp = null;
          // Low-latency mode, held at its target latency (storecastCatchUp); retries, fatal
          // errors and stuck or starved players as every shopper's player (LiveWatchdog).
          function startHlsJS() {
            hls = storecastNewLiveHls({}, (d) => {
              window.storecastErrors = (window.storecastErrors || 0) + 1;
              window.storecastErrorDetails.push(d.details);
              if (d.type === Hls.ErrorTypes.MEDIA_ERROR) say('Recovering…');
              else if (d.type === Hls.ErrorTypes.NETWORK_ERROR) say('Reconnecting…');
              else say('Playback error: ' + d.details);
            });
            hls.loadSource(src);
            hls.attachMedia(video);
            clearInterval(catchUp);
            catchUp = storecastCatchUp(hls, video);
            window.storecastHls = hls;
            video.play().catch(() => say('Press play to start'));
          }
          storecastWatchdog(video, () => hls, () => { storecastDestroy(hls); startHlsJS(); }, (kind) => {
            window.storecastRecoveries++;
            if (kind === 'restart') window.storecastRestarts = (window.storecastRestarts || 0) + 1;
            if (kind !== 'buffered') say('Catching up with the show…');
          });
          waitForStream().then(startHlsJS);
        } else {
          window.storecastPlayer = 'native-fallback';
          startNative();
        }
        </script>
        </body></html>
        """
    }

    /// Whether the browser is Safari (whose own player does LL-HLS), as a JavaScript expression.
    static let safariTest = "/^((?!chrome|android).)*safari/i.test(navigator.userAgent)"

    /// The product card a video shows at `mediaTime`: of the metadata cues hls.js (and Safari)
    /// make from EXT-X-DATERANGE, one per X- attribute with the range's id, the newest range
    /// whose cues hold that time. Shared by the player and feed pages.
    static let cardAtScript = """
        function storecastCardAt(video, mediaTime) {
          let best = null;
          for (const track of video.textTracks) {
            if (track.kind !== 'metadata' || !track.cues) continue;
            const byId = {};
            for (const cue of track.cues) {
              const v = cue.value;
              if (!v || typeof v.key !== 'string' || !cue.id.startsWith('highlight-') || cue.startTime > mediaTime || mediaTime >= cue.endTime) continue;
              (byId[cue.id] = byId[cue.id] || { id: cue.id, start: cue.startTime })[v.key] = String(v.data);
            }
            for (const c of Object.values(byId)) if (c['X-TITLE'] && (!best || c.start > best.start)) best = c;
          }
          return best;
        }
        """

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
