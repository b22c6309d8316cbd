#!/usr/bin/env python3
"""Which rendition does a shopper's hls.js keep? (issue 18: hls.js's low-latency bandwidth
estimate comes from parts that arrive at the encoder's pace, so it may never climb.) Starts an
ffmpeg publisher (testsrc2 at SIZE, 30 fps, x264 ultrafast zerolatency, 2 s GOP, AAC), then, in
one run on that show, two players in turn for MINUTES each, each in a fresh headless Chromium
over loopback (a network far faster than the top rung):
- stock hls.js: the same hls.js (the packager's /assets/hls.js) on a bare page of another origin
  with `{lowLatencyMode: true}` and nothing else, what a developer would otherwise write;
- Storecast's player page with hls.js (its rung probes, `storecastProbeRungs`).
Every second it reads hls.js's level, its bandwidth estimate and its latency. Prints JSON per
player: the share of time on each rendition (by height), the level switches, the estimate's
p50/p95, stalls and fatal errors; and the two top-rung shares side by side.
ABR_DOWNLINK_KBPS=N throttles each browser's network to N kbit/s (Chromium's own throttling).
ABR_WITHOUT_PROBES=1 adds a third player: Storecast's page with its rung probes stopped (their
timer cleared as soon as the page has made it, and again every second, so no probe is sent), to
tell what the probes do from what the rest of the page does.
ABR_START_HEIGHT=H puts every player on the rendition of height H first (hls.js's nextLevel, a
switch at the next part), lets its estimate settle there for 10 s and then hands the choice back
to hls.js, before the MINUTES are counted: where hls.js starts is otherwise its own first guess.

  bench/hlsjs_abr.py PAGE_URL RTMP_URL MINUTES [SIZE]

Needs chromium and chromium-driver (apt) and ffmpeg. Fails (exit 1) when a player never plays
or hls.js is not the player.
"""
import http.server
import json
import os
import sys
import threading
import time

from llhls_probe import Publisher, pct
from webdriver import call, evaluate, new_session, start_driver


STOCK_PAGE = """<!doctype html><html><body><video id="player" muted autoplay playsinline></video>
<script>window.storecastPageErrors = []; window.addEventListener('error', e => window.storecastPageErrors.push(String(e.message)));</script>
<script src="ORIGIN/assets/hls.js"></script><script>
(() => {  // hls.js's bundle declares globals of its own (v, e, t ...)
  const video = document.getElementById('player'), hls = new Hls({ lowLatencyMode: true });
  window.storecastHls = hls;
  hls.loadSource("ORIGIN/live/TENANT/STREAM/master.m3u8"); hls.attachMedia(video);
  window.storecastStalls = []; let since = null;
  video.addEventListener('waiting', () => { since = performance.now(); });
  video.addEventListener('playing', () => { if (since !== null) window.storecastStalls.push((performance.now() - since) / 1000); since = null; });
  window.storecastErrors = 0; hls.on(Hls.Events.ERROR, (e, d) => { if (d.fatal) window.storecastErrors++; });
})();
</script></body></html>"""


STOP_PROBES = """const h = window.storecastHls;
    if (h && h.storecastProbeTimer) { clearInterval(h.storecastProbeTimer); h.storecastProbeTimer = null; }"""
WITHOUT_PROBES = os.environ.get("ABR_WITHOUT_PROBES") == "1"
START_HEIGHT = int(os.environ.get("ABR_START_HEIGHT", "0"))


def watch(page, minutes, downlink, label, probes=True):
    """One player for MINUTES: its levels, estimates and stalls, as a dict."""
    driver, base = start_driver()
    session = None
    try:
        session = new_session(base)
        if downlink:
            # Chromium's own network throttling (DevTools), on everything the page loads.
            call(base, "POST", f"/session/{session}/chromium/network_conditions",
                 {"network_conditions": {"offline": False, "latency": 20, "download_throughput": downlink * 1000 // 8, "upload_throughput": downlink * 1000 // 8}})
        call(base, "POST", f"/session/{session}/url", {"url": page})
        playing = "return (document.getElementById('player') || {}).currentTime > 1"
        deadline = time.time() + 40
        while time.time() < deadline and not evaluate(base, session, playing):
            if not probes:
                evaluate(base, session, STOP_PROBES)
            time.sleep(0.5)
        if not evaluate(base, session, playing):
            seen = evaluate(base, session, """const v = document.getElementById('player'), h = window.storecastHls;
                return [typeof Hls, v ? v.readyState : -1, v ? v.paused : null, h ? h.levels.length : -1, window.storecastErrors || 0, window.storecastPageErrors || []]""")
            sys.exit(f"hlsjs_abr: {label} never played (is the stack up, and hls.js given to the packager?): Hls, readyState, paused, levels, errors {seen}")
        ladder = evaluate(base, session, "const h = window.storecastHls; return h ? h.levels.map(l => [l.height, l.bitrate]) : null")
        if not ladder:
            sys.exit(f"hlsjs_abr: {label} plays without hls.js (window.storecastHls is missing): no figure")
        if START_HEIGHT:
            levels = [h for h, _ in ladder]  # hls.js's level index → height
            if START_HEIGHT not in levels:
                sys.exit(f"hlsjs_abr: no rendition of height {START_HEIGHT} in {levels}: no figure")
            evaluate(base, session, f"window.storecastHls.nextLevel = {levels.index(START_HEIGHT)}; return true")
            on_it = "const h = window.storecastHls, l = h && h.levels[h.currentLevel]; return l ? l.height : 0"
            deadline = time.time() + 20
            while time.time() < deadline and evaluate(base, session, on_it) != START_HEIGHT:
                time.sleep(0.5)
            if evaluate(base, session, on_it) != START_HEIGHT:
                sys.exit(f"hlsjs_abr: {label} did not take {START_HEIGHT}p when told to: no figure")
            time.sleep(10)
            evaluate(base, session, "window.storecastHls.nextLevel = -1; return true")
        samples, end = [], time.time() + minutes * 60
        while time.time() < end:
            if not probes:
                evaluate(base, session, STOP_PROBES)
            time.sleep(1)
            s = evaluate(base, session, """
                const h = window.storecastHls; if (!h || h.currentLevel < 0 || !h.levels[h.currentLevel]) return null;
                return [h.levels[h.currentLevel].height, h.bandwidthEstimate, h.latency, h.storecastProbes || 0]""")
            if s:
                samples.append(s)
            if samples and len(samples) % int(os.environ.get("ABR_EVERY", "30")) == 0:
                print(f"hlsjs_abr: {label}, {len(samples)} s, on {samples[-1][0]}p, estimate {samples[-1][1] / 1e6:.2f} Mbit/s", file=sys.stderr, flush=True)
        state = evaluate(base, session, "return [window.storecastStalls || [], window.storecastErrors || 0, window.storecastRecoveries || 0, window.storecastRestarts || 0]")
    finally:
        try:
            call(base, "DELETE", f"/session/{session}")  # the browser goes too, not only its driver
        except Exception:
            pass
        driver.terminate()
    if not samples:
        sys.exit(f"hlsjs_abr: {label}: hls.js never reported a level: no figure")
    heights = sorted({h for h, _ in ladder}, reverse=True)
    estimates = [s[1] / 1e6 for s in samples if s[1]]
    second_half = samples[len(samples) // 2:]
    return {
        "player": label, "ladder": [[h, round(b / 1e6, 2)] for h, b in ladder],
        "share_of_time": {f"{h}p": round(sum(1 for s in samples if s[0] == h) / len(samples), 3) for h in heights},
        "top_rung_share_second_half": round(sum(1 for s in second_half if s[0] == heights[0]) / len(second_half), 3),
        "switches": sum(1 for a, b in zip(samples, samples[1:]) if a[0] != b[0]),
        "first_level": f"{samples[0][0]}p", "last_level": f"{samples[-1][0]}p",
        "estimate_mbps_p50": round(pct(estimates, 50), 2) if estimates else None,
        "estimate_mbps_p95": round(pct(estimates, 95), 2) if estimates else None,
        "latency_p50_s": pct([s[2] for s in samples if s[2] is not None], 50), "probes": samples[-1][3],
        "stalls": len(state[0]), "stall_seconds": round(sum(state[0]), 2), "fatal_errors": state[1],
        "recoveries": state[2], "restarts": state[3], "samples": len(samples)}


def main():
    page, rtmp, minutes = sys.argv[1], sys.argv[2], float(sys.argv[3])
    size = sys.argv[4] if len(sys.argv) > 4 else "1280x720"
    downlink = int(os.environ.get("ABR_DOWNLINK_KBPS", "0"))
    origin = "/".join(page.split("/")[:3])
    tenant, stream = page.split("?")[0].rstrip("/").split("/")[-2:]
    stock = STOCK_PAGE.replace("ORIGIN", origin).replace("TENANT", tenant).replace("STREAM", stream)
    players = 3 if WITHOUT_PROBES else 2
    # Each player may take up to 40 s to start (and 30 s more with ABR_START_HEIGHT), after the
    # publisher's first 6 s.
    publisher = Publisher(rtmp, int(players * (minutes * 60 + 75)) + 60, size=size)
    try:
        time.sleep(6)
        # The bare page from another origin, as a shop's own site would serve it.
        body = stock.encode()

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ours = page + ("&" if "?" in page else "?") + "player=hls.js"
        results = [watch(f"http://127.0.0.1:{server.server_address[1]}/stock.html", minutes, downlink, "stock hls.js"),
                   watch(ours, minutes, downlink, "Storecast's page")]
        if WITHOUT_PROBES:
            results.append(watch(ours, minutes, downlink, "Storecast's page, probes stopped", probes=False))
            if results[-1]["probes"]:
                sys.exit(f"hlsjs_abr: the page sent {results[-1]['probes']} probes with its probes stopped: no figure")
    finally:
        publisher.proc.terminate()
        publisher.proc.wait()
    top = [r["share_of_time"][f"{r['ladder'][-1][0]}p"] if r["ladder"] else None for r in results]
    print(json.dumps({"minutes_each": minutes, "source": size, "downlink_kbps": downlink or None,
                      "link_kbps": int(os.environ.get("ABR_LINK_KBPS", "0")) or None,
                      "start_height": START_HEIGHT or None, "players": results,
                      "top_rung_share": {r["player"]: t for r, t in zip(results, top)}}))


if __name__ == "__main__":
    main()
