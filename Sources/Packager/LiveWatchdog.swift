extension PlayerPage {
    /// What keeps a shopper's hls.js player going through faults, shared by the player page and
    /// every player of the feed (issues 15 and 18). Before, only the player page had it: a show
    /// in the feed froze for good when its origin restarted (hls.js gave up reloading its
    /// playlist after its default retries and nothing started it again).
    ///
    /// `storecastNewLiveHls(config, onFatal)` makes the hls.js instance:
    /// - low latency (`storecastLowLatency`), then the caller's `config`;
    /// - a playlist, part or segment that fails is tried again for about 15 s (250 ms doubling to
    ///   1 s; hls.js gives up after 1-3 s by default) before the error is fatal. hls.js retries
    ///   only 5xx and timeouts by default; a refused or reset connection (the origin restarting)
    ///   it takes as a missing alternate and marks the segment a gap;
    /// - a fatal error is then recovered: network errors load again after 1 s, media errors
    ///   reset the decoder (`onFatal` sees each first, to count and say it);
    /// - when it last appended media, for the watchdog (`storecastLastAppend`);
    /// - the probes that let it climb the ladder (``rungProbeScript``).
    /// `storecastDestroy(hls)` ends one, so its pending recoveries do nothing.
    ///
    /// `storecastWatchdog(video, current, restart, recovered)` watches a playing video every
    /// 500 ms, whatever instance `current()` returns. A live show whose media has a hole (an
    /// origin restarted and lost a moment of it) can leave hls.js waiting at the hole for good
    /// while the playlists go on. Without progress, with the live edge 1.5 s or more ahead (not
    /// the seller's own silence: then the edge waits too), it jumps to media buffered past the
    /// hole, else to hls.js's live position; stuck again within 15 s, it calls `restart` (a new
    /// hls.js). It waits 1 s where the playlist no longer lists the moment the video stands at,
    /// or lists it as a gap (that media is gone for good: a restarted origin lists what it lost
    /// as EXT-X-GAP segments, which hls.js mostly steps over by itself but can circle, trying one
    /// rendition after another), 4 s otherwise (hls.js recovers a publisher's reconnect by
    /// itself). A video that reports enough data (readyState 3 or 4) and still does not move
    /// counts too.
    ///
    /// A starved player (`storecastStarved`: less than 0.5 s buffered ahead of its video, which a
    /// stuck video can stand 0.1 s short of, and nothing appended for 2 s) stuck 1.5 s is started
    /// again at once. Seen under CPU load (2 of 10 starts): hls.js switched down a rendition about
    /// 2 s in, loaded the new rendition's segment from its start, behind the video, appended a
    /// part or none, and then loaded nothing more for about 10 s, with no request open
    /// (docs/reliability.md). Jumping to the live position cannot cure that (the same hls.js waits
    /// on); a new hls.js can. At a hole the playlist proves (gone), the jump still comes first:
    /// there hls.js is not stuck, only waiting at the hole. `recovered(kind)` is told each cure
    /// (`buffered`, `live` or `restart`).
    static let liveWatchdogScript = """
        const storecastRetry = { maxNumRetry: 16, retryDelayMs: 250, maxRetryDelayMs: 1000,
          shouldRetry: (config, count, timeout, response, retry) => retry || (count < config.maxNumRetry && (!response || response.code === 0)) };
        function storecastLoadPolicy(ttfb, load, timeouts) {
          return { default: { maxTimeToFirstByteMs: ttfb, maxLoadTimeMs: load,
            timeoutRetry: { maxNumRetry: timeouts, retryDelayMs: 0, maxRetryDelayMs: 0 }, errorRetry: storecastRetry } };
        }
        function storecastNewLiveHls(config, onFatal) {
          const hls = new Hls({ ...storecastLowLatency, manifestLoadPolicy: storecastLoadPolicy(10000, 20000, 2),
            playlistLoadPolicy: storecastLoadPolicy(10000, 20000, 2), fragLoadPolicy: storecastLoadPolicy(10000, 120000, 4), ...config });
          hls.storecastLastAppend = performance.now();
          storecastProbeRungs(hls);
          hls.on(Hls.Events.BUFFER_APPENDED, () => { hls.storecastLastAppend = performance.now(); });
          hls.on(Hls.Events.ERROR, (e, d) => {
            if (!d.fatal || hls.storecastDestroyed) return;
            onFatal(d);
            if (d.type === Hls.ErrorTypes.MEDIA_ERROR) hls.recoverMediaError();
            else if (d.type === Hls.ErrorTypes.NETWORK_ERROR) setTimeout(() => { if (!hls.storecastDestroyed) hls.startLoad(); }, 1000);
          });
          return hls;
        }
        function storecastDestroy(hls) {
          hls.storecastDestroyed = true;
          clearInterval(hls.storecastProbeTimer);
          if (hls.storecastProbeAbort) hls.storecastProbeAbort.abort();
          hls.destroy();
        }
        function storecastStarved(video, lastAppend, now) {
          const t = video.currentTime, b = video.buffered;
          for (let i = 0; i < b.length; i++) if (b.start(i) <= t + 0.05 && b.end(i) - t >= 0.5) return false;
          return now - lastAppend > 2000;
        }
        function storecastWatchdog(video, current, restart, recovered) {
          let lastTime = -1, stuckSince = null, lastJump = -Infinity;
          return setInterval(() => {
            const hls = current();
            const details = hls && hls.latestLevelDetails;
            const behind = details ? details.edge - video.currentTime : 0;
            if (!hls || video.paused || video.currentTime === 0 || video.currentTime !== lastTime || behind < 1.5) {
              lastTime = video.currentTime; stuckSince = null; return;
            }
            stuckSince = stuckSince || performance.now();
            const next = video.currentTime + 0.1, b = video.buffered;
            const starved = storecastStarved(video, hls.storecastLastAppend, performance.now());
            const at = details.fragments.find(f => f.start <= next && next < f.start + f.duration);
            const gone = details.fragments.length > 0 && (details.fragments[0].start > next || (at !== undefined && at.gap === true));
            if (performance.now() - stuckSince < (gone ? 1000 : starved ? 1500 : 4000)) return;
            stuckSince = null;
            for (let i = 0; i < b.length; i++) {
              if (b.start(i) > video.currentTime && b.start(i) - video.currentTime < 10) { recovered('buffered'); video.currentTime = b.start(i) + 0.05; return; }
            }
            if (!starved || gone) {
              const live = hls.liveSyncPosition;
              if (performance.now() - lastJump > 15000 && live && live > video.currentTime + 1) {
                lastJump = performance.now();
                recovered('live');
                video.currentTime = live;
                return;
              }
            }
            recovered('restart');
            restart();
          }, 500);
        }
        """
}
