extension PlayerPage {
    /// What lets a shopper's hls.js climb the ladder (issue 18), shared by the player page and
    /// every player of the feed: `storecastNewLiveHls` starts it for each instance.
    ///
    /// In low-latency mode hls.js measures the network from parts it asked for before they were
    /// finished (blocking preload hints): their bytes come as the encoder writes them, so what it
    /// measures is a few times the current rendition's bit rate, whatever the network can do
    /// (video-dev/hls.js#3563). To switch up it wants 1/0.7 of the next rendition's bit rate. The
    /// field ladder's steps are 2 to 3 times apart, so hls.js stayed on 480p of a 720p show for
    /// good on a network a hundred times faster (measured: `bench/hlsjs_abr.sh`, 0 % of the time
    /// on 720p in 3 minutes, its estimate held at 2.96 Mbit/s by 480p's parts).
    ///
    /// So, every 6 s while a video plays below the top rendition under hls.js's automatic choice,
    /// `storecastProbeRungs` fetches the newest finished part of the rendition above (it comes
    /// whole, at the network's pace; about 60 KB for 720p's 0.2 s), times its transfer (Resource
    /// Timing's response time where the origin lets it be read, else the whole fetch, which only
    /// reads slower) and gives hls.js that throughput with two seconds' weight: about what the
    /// paced parts of the 6 s between probes weigh. hls.js then decides as it always does; a slow
    /// network measures slow, and nothing switches. On the top rendition, or paused (the feed's
    /// preloaded next show), or with a level the shopper chose, it costs nothing. Each probe is
    /// counted (`hls.storecastProbes`). `storecastDestroy` stops the timer and aborts a probe in
    /// flight, so a player swiped away makes no request of its own.
    ///
    /// A probe that measures less than hls.js would need to switch up (`storecastProbePasses`: the
    /// rendition's bit rate at hls.js's `abrBandWidthUpFactor`, 0.7) makes the next one wait
    /// longer (`storecastProbeInterval`: 6 s while they pass, then 12, 24, 48 and at most 60 s),
    /// kept for each rendition probed until a probe of it passes, so a player that drops a level
    /// and comes back does not start over. On a real 2 Mbit/s link (`ABR_LINK_KBPS=2000
    /// bench/hlsjs_abr.sh`, 720p at 2.33 Mbit/s above a 480p player) a probe every 6 s, its 60 KB
    /// taking a quarter of a second of the whole link, stalled the player once or twice in 2
    /// minutes and held it 0.84 s behind, against no stall and 0.66 s with the probes stopped.
    static let rungProbeScript = """
        function storecastProbeInterval(failures) {
          return Math.min(60000, 6000 * Math.pow(2, Math.max(0, failures)));
        }
        function storecastProbePasses(bitsPerSecond, bitrate, upFactor) {
          return bitsPerSecond * (upFactor || 0.7) >= bitrate;
        }
        function storecastLastFinishedPart(playlist) {
          const parts = playlist.split('\\n').filter(line => line.startsWith('#EXT-X-PART:'));
          const last = parts.length ? parts[parts.length - 1].match(/URI="([^"]+)"/) : null;
          return last ? last[1] : null;
        }
        function storecastProbeRungs(hls) {
          let busy = false;
          const backoff = {};  // the rendition probed (its level) → failed probes in a row, and when the next is due
          hls.storecastProbeTimer = setInterval(async () => {
            if (hls.storecastDestroyed) return;
            const video = hls.media, levels = hls.levels || [], level = hls.currentLevel;
            const estimator = hls.abrController && hls.abrController.bwEstimator;
            if (busy || !video || video.paused || !hls.autoLevelEnabled || level < 0 || level + 1 >= levels.length
                || !estimator || typeof estimator.sample !== 'function') return;
            const rung = backoff[level + 1] || (backoff[level + 1] = { failures: 0, nextAt: 0 });
            const now = performance.now();
            if (now < rung.nextAt) return;
            const above = levels[level + 1];
            const playlistURL = above.uri || (above.url && above.url[0]);
            if (!playlistURL) return;
            busy = true;
            const abort = hls.storecastProbeAbort = new AbortController();
            try {
              const playlist = await (await fetch(playlistURL, { cache: 'no-store', signal: abort.signal })).text();
              const uri = storecastLastFinishedPart(playlist);
              if (!uri || hls.storecastDestroyed) return;
              const url = new URL(uri, playlistURL).href;
              const started = performance.now();
              const response = await fetch(url, { signal: abort.signal });
              if (!response.ok) return;
              const bytes = (await response.arrayBuffer()).byteLength;
              const timing = performance.getEntriesByName(url).pop();
              const ms = timing && timing.responseStart > 0 ? timing.responseEnd - timing.responseStart : performance.now() - started;
              if (hls.storecastDestroyed || bytes < 1000) return;
              const bytesPerSecond = bytes * 1000 / Math.max(ms, 1);
              estimator.sample(2000, bytesPerSecond * 2);
              hls.storecastProbes = (hls.storecastProbes || 0) + 1;
              rung.failures = storecastProbePasses(bytesPerSecond * 8, above.bitrate, hls.config && hls.config.abrBandWidthUpFactor) ? 0 : rung.failures + 1;
              // Less a second, so the 6 s timer's next tick finds it due.
              rung.nextAt = now + storecastProbeInterval(rung.failures) - 1000;
            } catch (e) {
            } finally { busy = false; }
          }, 6000);
        }
        """
}
