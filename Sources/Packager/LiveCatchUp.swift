extension PlayerPage {
    /// Holds a playing low-latency hls.js player near its target latency (PART-HOLD-BACK). hls.js
    /// speeds up by itself only with more than 1 s buffered ahead, which a player 1 s behind live
    /// never has, so it settled about 0.4 s past its target (0.99 s against 0.6 s over 10
    /// minutes), and every frame reached the shopper that much later. The page takes over the
    /// rate (hls.js's own is turned off with `maxLiveSyncPlaybackRate: 1`, or the two would
    /// fight). `storecastCatchUpRate` decides: more than 0.1 s behind the target with more than
    /// 0.3 s buffered ahead, up to 1.5x (faster the further behind); otherwise 1x, so a short
    /// buffer is never spent. `storecastCatchUp` applies it every 250 ms and returns the timer.
    /// Shared by the player and feed pages, with ``liveWatchdogScript``.
    ///
    /// `storecastLowLatency` is the hls.js configuration both pages start from. Each stall makes
    /// hls.js add `liveSyncOnStallIncrease` to its target latency for the rest of the session
    /// (1 s by default, up to a target duration). One 0.3 s stall at startup on a busy device
    /// then keeps a shopper 1.6 s behind for the whole show (seen in CI, on a loaded machine);
    /// the pages add 0.2 s a stall, so a player that keeps stalling still backs off, by a target
    /// duration at most.
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
        """
}
