extension PlayerPage {
    /// Holds a playing low-latency hls.js player near its target latency (PART-HOLD-BACK). hls.js
    /// speeds up by itself only with more than 1 s buffered ahead, which a player 1 s behind live
    /// never has, so it settled about 0.4 s past its target (0.99 s against 0.6 s over 10
    /// minutes), and every frame reached the shopper that much later. The page takes over the
    /// rate (hls.js's own is turned off with `maxLiveSyncPlaybackRate: 1`, or the two would
    /// fight). `storecastCatchUpRate` decides: more than 0.1 s behind the target with more than
    /// 0.3 s buffered ahead, up to 1.5x (faster the further behind); otherwise 1x, so a short
    /// buffer is never spent. `storecastCatchUp` applies it every 250 ms and returns the timer.
    /// Shared by the player and feed pages.
    ///
    /// `storecastLowLatency` is the hls.js configuration both pages start from. Each stall makes
    /// hls.js add `liveSyncOnStallIncrease` to its target latency for the rest of the session
    /// (1 s by default, up to a target duration). One 0.3 s stall at startup on a busy device
    /// then keeps a shopper 1.6 s behind for the whole show (seen in CI, on a loaded machine);
    /// the pages add 0.2 s a stall, so a player that keeps stalling still backs off, by a target
    /// duration at most.
    ///
    /// `storecastStarved` tells a player that has starved: less than 0.5 s buffered ahead of its
    /// video (a stuck video can stand 0.1 s short of its buffer's end) and nothing appended for
    /// 2 s (the player page says when hls.js does that).
    /// `storecastRestartWhenStarved` is the feed's watch on a playing player: starved 1.5 s
    /// while the live edge is 1.5 s or more ahead (not the seller's own silence: then the edge waits
    /// too), it calls `restart` once and stops.
    static let liveCatchUpScript = """
        const storecastLowLatency = { lowLatencyMode: true, maxLiveSyncPlaybackRate: 1, liveSyncOnStallIncrease: 0.2 };
        function storecastCatchUpRate(latency, target, ahead) {
          const behind = target === null || target === undefined ? 0 : latency - target;
          return behind > 0.1 && ahead > 0.3 ? Math.min(1.5, 1 + behind / 2) : 1;
        }
        function storecastCatchUp(hls, video) {
          return setInterval(() => {
            if (!hls.media || video.paused || video.readyState < 3) return;
            let ahead = 0;
            const b = video.buffered;
            for (let i = 0; i < b.length; i++) {
              if (b.start(i) <= video.currentTime + 0.05 && b.end(i) > video.currentTime) ahead = b.end(i) - video.currentTime;
            }
            const rate = storecastCatchUpRate(hls.latency, hls.targetLatency, ahead);
            if (Math.abs(video.playbackRate - rate) > 0.01) video.playbackRate = rate;
          }, 250);
        }
        function storecastStarved(video, lastAppend, now) {
          const t = video.currentTime, b = video.buffered;
          for (let i = 0; i < b.length; i++) if (b.start(i) <= t + 0.05 && b.end(i) - t >= 0.5) return false;
          return now - lastAppend > 2000;
        }
        function storecastRestartWhenStarved(hls, video, restart) {
          let lastAppend = performance.now(), lastTime = -1, since = null;
          hls.on(Hls.Events.BUFFER_APPENDED, () => { lastAppend = performance.now(); });
          const timer = setInterval(() => {
            const details = hls.latestLevelDetails;
            const behind = details ? details.edge - video.currentTime : 0;
            if (video.paused || video.currentTime === 0 || video.currentTime !== lastTime || behind < 1.5 || !storecastStarved(video, lastAppend, performance.now())) {
              lastTime = video.currentTime; since = null; return;
            }
            since = since || performance.now();
            if (performance.now() - since >= 1500) { clearInterval(timer); restart(); }
          }, 500);
          return timer;
        }
        """
}
