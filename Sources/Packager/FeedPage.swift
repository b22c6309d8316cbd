/// The shoppers' stories feed page (`/feed/TENANT`, issue 18): the tenant's live shows one above
/// the other, swiped like stories (touch, wheel, or the arrow keys).
///
/// - Each show paints its blurred placeholder at once (inline in the feed), then its preview
///   still, then video.
/// - At most two players are alive: the show on screen, playing, and the next one, preloaded
///   (playlist, init segments and its first part or so fetched, paused, and kept within a second
///   of the live edge while it waits). The next show's preload starts once the show on screen
///   shows its first frame, so a show started cold has the link to itself. A show swiped away
///   has its player destroyed, and its requests stop.
/// - The feed is read again every 5 s (it is cacheable for 5 s): ended shows drop out without a
///   reload, and new ones join at the end.
/// - Each player rides out faults as the player page's does (``PlayerPage/liveWatchdogScript``):
///   loads retried, fatal errors recovered, a stuck or starved player moved on or started again.
/// - A show's product card (image, title, price, a link) comes with the frame it belongs to,
///   from the date-range cues (``PlayerPage/cardAtScript``); before its video plays, the card
///   the feed lists.
/// - For tests and benchmarks the page records each swipe's time from the swipe to the next
///   show's first frame (`requestVideoFrameCallback`), each card shown with the frame's media
///   time and the cue's start, the most players ever alive, and the players started again; it
///   also lends them its card lookup (`storecastFeed.cardAt(video, mediaTime)`).
enum FeedPage {
    static func html(tenant: String, feedURL: String, hlsJSURL: String?) -> String {
        let hls = hlsJSURL.map { "<script src=\"\(PlayerPage.escape($0))\"></script>" } ?? ""
        return """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
        <title>\(PlayerPage.escape(tenant)) · live</title>
        <style>html,body{margin:0;height:100%;overflow:hidden;background:#000;color:#fff;font:15px system-ui,sans-serif;touch-action:none}
        .slide{position:absolute;inset:0;transition:transform .25s ease-out;overflow:hidden}
        .slide img,.slide video{position:absolute;inset:0;width:100%;height:100%;object-fit:cover}
        .slide .blur{filter:blur(18px);transform:scale(1.15)}
        .slide .meta{position:absolute;left:14px;right:14px;bottom:18px;text-shadow:0 1px 3px #000}
        .slide .meta b{display:block;font-size:17px}.slide .viewers{opacity:.85}
        .slide .card{position:absolute;left:14px;bottom:80px;display:flex;gap:10px;align-items:center;max-width:80%;padding:8px 12px 8px 8px;
          border-radius:12px;background:rgba(255,255,255,.92);color:#111}
        .slide .card img{position:static;width:48px;height:48px;border-radius:8px;object-fit:cover;background:#ddd}
        .slide .card .title{font-weight:600}.slide .card a{color:#0a58ca}.slide .card [hidden]{display:none}
        #empty{position:absolute;inset:0;display:flex;align-items:center;justify-content:center;opacity:.8}#empty[hidden]{display:none}</style>
        \(hls)
        </head><body>
        <div id="feed"></div><div id="empty" hidden>No live shows right now.</div>
        <script>
        (() => {
        const feedURL = \(PlayerPage.jsString(feedURL));
        const feedBox = document.getElementById('feed'), empty = document.getElementById('empty');
        const useHlsJS = !!(window.Hls && Hls.isSupported()) && !\(PlayerPage.safariTest);
        \(PlayerPage.cardAtScript)
        \(PlayerPage.liveCatchUpScript)
        \(PlayerPage.liveWatchdogScript)
        \(PlayerPage.rungProbeScript)
        let shows = [], index = 0;
        const slides = new Map();   // stream -> {el, show}
        const players = new Map();  // stream -> {video, hls}
        window.storecastFeed = { swipes: [], cards: [], maxPlayers: 0, destroyed: [], recoveries: 0, errors: 0, shows: () => shows.map(s => s.stream), players: () => [...players.keys()],
          hlsOf: (stream) => players.has(stream) ? players.get(stream).hls : null, videoOf: (stream) => players.has(stream) ? players.get(stream).video : null,
          cardAt: storecastCardAt };

        function slideFor(show) {
          let s = slides.get(show.stream);
          if (!s) {
            const el = document.createElement('div');
            el.className = 'slide';
            el.dataset.stream = show.stream;
            el.innerHTML = '<img class="blur" alt=""><img class="preview" alt="" hidden><div class="meta"><b></b><span class="seller"></span> · <span class="viewers"></span></div>';
            const preview = el.querySelector('.preview');
            preview.onload = () => { preview.hidden = false; };
            feedBox.appendChild(el);
            s = { el, show };
            slides.set(show.stream, s);
            if (show.placeholder) el.querySelector('.blur').src = show.placeholder;
            preview.src = show.previewUrl;
          }
          s.show = show;
          s.el.querySelector('b').textContent = show.title || show.stream;
          s.el.querySelector('.seller').textContent = show.seller.name;
          s.el.querySelector('.viewers').textContent = show.viewers + ' watching';
          // Until its video plays, the show's current card as the feed has it.
          const h = show.highlight;
          if (!players.has(show.stream)) setCard(s.el, h ? { id: 'highlight-' + h.id, 'X-TITLE': h.title, 'X-PRICE': h.price, 'X-CURRENCY': h.currency, 'X-IMAGE-URL': h.imageUrl, 'X-LINK': h.link } : null);
          return s;
        }

        // A product card as the player page shows it: its image, title, price and a link to the
        // product (http and https only: a card's fields come from a tenant's API call).
        function setCard(el, c) {
          let card = el.querySelector('.card');
          if (!c) { if (card) card.remove(); return; }
          if (!card) {
            card = document.createElement('div'); card.className = 'card';
            card.innerHTML = '<img alt=""><div><div class="title"></div><div class="price"></div><a target="_blank" rel="noopener">Shop now</a></div>';
            el.appendChild(card);
          }
          card.dataset.card = c.id || '';
          card.querySelector('.title').textContent = c['X-TITLE'] || '';
          card.querySelector('.price').textContent = c['X-PRICE'] ? c['X-PRICE'] + ' ' + (c['X-CURRENCY'] || '') : '';
          const img = card.querySelector('img'), link = card.querySelector('a');
          if (/^https?:\\/\\//i.test(c['X-IMAGE-URL'] || '')) { img.src = c['X-IMAGE-URL']; img.hidden = false; } else { img.removeAttribute('src'); img.hidden = true; }
          if (/^https?:\\/\\//i.test(c['X-LINK'] || '')) { link.href = c['X-LINK']; link.hidden = false; } else { link.removeAttribute('href'); link.hidden = true; }
        }

        // While a show plays, its card comes from the date-range cues, on the frame it belongs to.
        function followCards(p) {
          let shown = null;
          const onFrame = (now, meta) => {
            if (players.get(p.stream) !== p) return;  // destroyed, or replaced by a new player
            const c = storecastCardAt(p.video, meta.mediaTime);
            if ((c && c.id) !== (shown && shown.id)) {
              shown = c; setCard(slides.get(p.stream).el, c);
              if (c) window.storecastFeed.cards.push({ stream: p.stream, id: c.id, start: c.start, mediaTime: meta.mediaTime });
            }
            p.video.requestVideoFrameCallback(onFrame);
          };
          if ('requestVideoFrameCallback' in p.video) p.video.requestVideoFrameCallback(onFrame);
        }

        // Preloading: about a part ahead, not more (the buffer grows once it plays). Each player
        // rides out faults as the player page's does (LiveWatchdog): retries, fatal errors
        // recovered, and a stuck or starved player moved on or given a new hls.js.
        function attachHls(p, url, play) {
          const hls = storecastNewLiveHls({ maxBufferLength: play ? 4 : 1, maxMaxBufferLength: play ? 30 : 1, backBufferLength: 4 },
                                          () => { window.storecastFeed.errors++; });
          hls.loadSource(url);
          hls.attachMedia(p.video);
          p.hls = hls;
          clearInterval(p.catchUp);
          p.catchUp = storecastCatchUp(hls, p.video);
        }
        function watch(p, url) {
          return storecastWatchdog(p.video, () => p.hls, () => {
            if (players.get(p.stream) !== p) return;
            storecastDestroy(p.hls);
            attachHls(p, url, p.playing);
            if (p.playing) p.video.play().catch(() => {});
          }, () => { window.storecastFeed.recoveries++; });
        }

        // A preloaded show waits paused at the live edge, not where it was preloaded: once it is
        // more than 1 s behind hls.js's live sync position, it is moved there (hls.js fetches the
        // media there, about a second of it). Else a show preloaded 10 s before the swipe would
        // start 10 s behind and take 20 s of faster playback to catch up. (Stopped when it plays.)
        function keepAtLiveEdge(p) {
          return setInterval(() => {
            const live = p.hls && p.hls.liveSyncPosition;
            if (typeof live === 'number' && live - p.video.currentTime > 1) p.video.currentTime = live;
          }, 500);
        }

        function startPlayer(show, play) {
          let p = players.get(show.stream);
          if (!p) {
            const video = document.createElement('video');
            video.muted = true; video.playsInline = true; video.preload = 'auto';
            video.style.opacity = '0';
            slides.get(show.stream).el.insertBefore(video, slides.get(show.stream).el.querySelector('.meta'));
            p = { video, hls: null, stream: show.stream, catchUp: null, watch: null, fresh: null, playing: false, shown: false, onShown: null };
            if (useHlsJS) { attachHls(p, show.playbackUrl, play); p.watch = watch(p, show.playbackUrl); if (!play) p.fresh = keepAtLiveEdge(p); } else video.src = show.playbackUrl;
            players.set(show.stream, p);
            followCards(p);
            window.storecastFeed.maxPlayers = Math.max(window.storecastFeed.maxPlayers, players.size);
          }
          if (play) {
            p.playing = true;
            clearInterval(p.fresh);
            if (p.hls) { p.hls.config.maxBufferLength = 4; p.hls.config.maxMaxBufferLength = 30; }
            const shown = () => { p.video.style.opacity = '1'; p.shown = true; if (p.onShown) p.onShown(); };
            if ('requestVideoFrameCallback' in p.video) p.video.requestVideoFrameCallback(shown); else p.video.addEventListener('playing', shown, { once: true });
            p.video.play().catch(() => {});
          }
          return p;
        }

        function stopPlayer(stream) {
          const p = players.get(stream);
          if (!p) return;
          players.delete(stream);
          clearInterval(p.catchUp);
          clearInterval(p.watch);
          clearInterval(p.fresh);
          if (p.hls) storecastDestroy(p.hls);
          p.video.removeAttribute('src'); p.video.load(); p.video.remove();
          window.storecastFeed.destroyed.push({ stream, at: performance.now() });
        }

        function layout() {
          empty.hidden = shows.length > 0;
          shows.forEach((show, i) => { slideFor(show).el.style.transform = 'translateY(' + ((i - index) * 100) + '%)'; });
          for (const [stream, s] of slides) if (!shows.some(x => x.stream === stream)) { stopPlayer(stream); s.el.remove(); slides.delete(stream); }
          // At most two players: the show on screen and the next; every other one goes first.
          const keep = shows.slice(index, index + 2).map(s => s.stream);
          for (const stream of [...players.keys()]) if (!keep.includes(stream)) stopPlayer(stream);
          const current = shows[index] ? startPlayer(shows[index], true) : null;
          const next = shows[index + 1];
          if (next) {
            // A show swiped back into the next slot was playing: it is swiped away like any other
            // (destroyed, its requests stop) and preloaded again, from its live edge.
            if (players.has(next.stream) && players.get(next.stream).playing) stopPlayer(next.stream);
            if (!current || current.shown || players.has(next.stream)) startPlayer(next, false);
            else preloadOnceShown(current);
          }
        }

        // The next show is preloaded once the show on screen has shown its first frame (or after
        // 1.5 s, if it shows none), not beside its start: a show started cold (swiped back to, or
        // the first) then has the connection and the device to itself for its first frame.
        let preloadTimer = null;
        function preloadOnceShown(current) {
          clearTimeout(preloadTimer);
          const preload = () => {
            clearTimeout(preloadTimer); current.onShown = null;
            if (players.get(current.stream) !== current || !shows[index] || shows[index].stream !== current.stream) return;
            if (shows[index + 1]) startPlayer(shows[index + 1], false);
          };
          current.onShown = () => setTimeout(preload, 0);  // after the frame's other callbacks
          preloadTimer = setTimeout(preload, 1500);
        }

        function go(step) {
          const to = index + step;
          if (to < 0 || to >= shows.length) return;
          const from = shows[index].stream, next = shows[to];
          const t0 = performance.now();
          index = to;
          layout();
          const p = players.get(next.stream);
          // With how far behind the live edge that first frame is: the playlist's edge, aged
          // since it was loaded, less the frame's media time (hls.js's own latency is cached).
          const record = (now, meta) => {
            const d = p.hls && p.hls.latestLevelDetails, at = meta ? meta.mediaTime : p.video.currentTime;
            window.storecastFeed.swipes.push({ from, to: next.stream, at: t0, ms: performance.now() - t0, behind: d ? d.edge + d.age - at : null });
          };
          if (p && 'requestVideoFrameCallback' in p.video) p.video.requestVideoFrameCallback(record);
          else if (p) p.video.addEventListener('playing', () => record(), { once: true });
        }
        window.storecastFeed.go = go;

        async function refresh() {
          try {
            const r = await fetch(feedURL);
            if (!r.ok) return;
            const list = (await r.json()).shows;
            const current = shows[index] && shows[index].stream;
            // Shows on screen or passed keep their place; ended ones drop out; new ones join at the end.
            const kept = shows.filter(s => list.some(x => x.stream === s.stream)).map(s => list.find(x => x.stream === s.stream));
            const added = list.filter(x => !kept.some(s => s.stream === x.stream));
            shows = kept.concat(added);
            const at = shows.findIndex(s => s.stream === current);
            index = at >= 0 ? at : Math.min(index, Math.max(0, shows.length - 1));
            layout();
          } catch (e) {}
        }

        let touchY = null;
        addEventListener('touchstart', e => { touchY = e.touches[0].clientY; }, { passive: true });
        addEventListener('touchend', e => {
          if (touchY === null) return;
          const dy = e.changedTouches[0].clientY - touchY; touchY = null;
          if (Math.abs(dy) > 40) go(dy < 0 ? 1 : -1);
        });
        let wheelAt = 0;
        addEventListener('wheel', e => { if (Math.abs(e.deltaY) > 20 && performance.now() - wheelAt > 400) { wheelAt = performance.now(); go(e.deltaY > 0 ? 1 : -1); } });
        addEventListener('keydown', e => {
          if (e.key === 'ArrowDown' || e.key === 'j' || e.key === 'PageDown') go(1);
          if (e.key === 'ArrowUp' || e.key === 'k' || e.key === 'PageUp') go(-1);
        });
        refresh();
        setInterval(refresh, 5000);
        })();
        </script>
        </body></html>
        """
    }
}
