#!/usr/bin/env python3
"""Does hls.js hold a part target for minutes without stalls? (issue 18: make 0.2 s parts the
default only if so.) Starts an ffmpeg publisher (testsrc2 854x480 30 fps, x264 ultrafast
zerolatency, 2 s GOP, AAC) for MINUTES, opens the player page with hls.js in a fresh headless
Chromium, and every 10 s reads the page's stalls (window.storecastStalls: each 'waiting' until
the next 'playing'), its fatal errors and recoveries, and hls.js's latency and target latency.
Prints JSON: stalls (count, total seconds, the longest), latency p50/p95/max, errors.

  bench/hlsjs_soak.py PAGE_URL RTMP_URL MINUTES

Needs chromium and chromium-driver (apt) and ffmpeg. Fails (exit 1) when the page never plays.
"""
import json, sys, time
from llhls_probe import Publisher, pct
from webdriver import call, evaluate, new_session, start_driver

def main():
    page, rtmp, minutes = sys.argv[1], sys.argv[2], float(sys.argv[3])
    driver, base = start_driver()
    publisher = None
    try:
        session = new_session(base)
        call(base, "POST", f"/session/{session}/url", {"url": page + ("&" if "?" in page else "?") + "player=hls.js"})
        publisher = Publisher(rtmp, int(minutes * 60) + 30)
        deadline = time.time() + 30
        while time.time() < deadline and not evaluate(base, session, "return (document.getElementById('player') || {}).currentTime > 1"):
            time.sleep(0.5)
        if not evaluate(base, session, "return (document.getElementById('player') || {}).currentTime > 1"):
            sys.exit("hlsjs_soak: the page never played (is the stack up, and hls.js given to the packager?)")
        latencies, end = [], time.time() + minutes * 60
        while time.time() < end:
            time.sleep(10)
            lat = evaluate(base, session, "const h = window.storecastHls; return h ? [h.latency, h.targetLatency] : null")
            if lat and lat[0] is not None: latencies.append(lat)
            print(f"hlsjs_soak: {int(minutes * 60 - (end - time.time()))} s, latency {lat}", file=sys.stderr, flush=True)
        state = evaluate(base, session, "return [window.storecastStalls || [], window.storecastErrors || 0, window.storecastErrorDetails || [], window.storecastRecoveries || 0, window.storecastPlayer || '']")
        stalls = [round(s, 2) for s in state[0]]
        values = [l[0] for l in latencies]
        print(json.dumps({"minutes": minutes, "player": state[4], "stalls": len(stalls), "stall_seconds": round(sum(stalls), 2),
                          "longest_stall_s": max(stalls) if stalls else 0, "fatal_errors": state[1], "error_details": state[2],
                          "recoveries": state[3], "latency_p50_s": pct(values, 50), "latency_p95_s": pct(values, 95),
                          "latency_max_s": max(values) if values else None, "target_latency_s": latencies[-1][1] if latencies else None,
                          "samples": len(values)}))
    finally:
        if publisher:
            publisher.proc.terminate()
            publisher.proc.wait()
        driver.terminate()

if __name__ == "__main__":
    main()
