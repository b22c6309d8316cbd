#!/usr/bin/env python3
"""Does hls.js hold a part target for minutes without stalls? (issue 18: make 0.2 s parts the
default only if so.) Starts an ffmpeg publisher (testsrc2 854x480 30 fps, x264 ultrafast
zerolatency, 2 s GOP, AAC) for MINUTES, opens the player page with hls.js in a fresh headless
Chromium, and every 10 s reads the page's stalls (window.storecastStalls: each 'waiting' until
the next 'playing'), its fatal errors and recoveries, and hls.js's latency and target latency.
Prints JSON: stalls (count, total seconds, the longest), latency p50/p95/max, errors, and
glass-to-glass: the publisher draws each frame's number in its top rows (FRAME_NUMBER_BARS), the
page reads it from every 15th frame on screen (requestVideoFrameCallback, the frame's expected
display time), and glass-to-glass is that display time minus when the publisher sent the frame
(its -progress clock: media time 0 plus the frame's number / 30). Camera and screen are not in it.

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
        publisher = Publisher(rtmp, int(minutes * 60) + 30, frame_numbers=True)
        deadline = time.time() + 30
        while time.time() < deadline and not evaluate(base, session, "return (document.getElementById('player') || {}).currentTime > 1"):
            time.sleep(0.5)
        if not evaluate(base, session, "return (document.getElementById('player') || {}).currentTime > 1"):
            sys.exit("hlsjs_soak: the page never played (is the stack up, and hls.js given to the packager?)")
        # Every 15th frame on screen: [display time (ms since the epoch), the source frame's number].
        evaluate(base, session, """
            const video = document.getElementById('player'); window.storecastShown = [];
            const canvas = document.createElement('canvas'); const ctx = canvas.getContext('2d', { willReadFrequently: true });
            let count = 0;
            const onFrame = (now, meta) => {
              if (count++ % 15 === 0 && video.videoWidth) {
                const w = video.videoWidth, h = Math.max(2, Math.round(16 * video.videoHeight / 480));
                canvas.width = w; canvas.height = h;
                ctx.drawImage(video, 0, 0, w, h, 0, 0, w, h);
                const row = ctx.getImageData(0, Math.round(h / 2), w, 1).data;
                let n = 0;
                for (let i = 0; i < 16; i++) { const x = Math.round((i * 48 + 24) * w / 854); if (row[4 * x] > 128) n += 2 ** i; }
                window.storecastShown.push([performance.timeOrigin + meta.expectedDisplayTime, n]);
              }
              video.requestVideoFrameCallback(onFrame);
            };
            video.requestVideoFrameCallback(onFrame);
            return true""")
        latencies, end = [], time.time() + minutes * 60
        while time.time() < end:
            time.sleep(10)
            lat = evaluate(base, session, "const h = window.storecastHls; return h ? [h.latency, h.targetLatency] : null")
            if lat and lat[0] is not None: latencies.append(lat)
            print(f"hlsjs_soak: {int(minutes * 60 - (end - time.time()))} s, latency {lat}", file=sys.stderr, flush=True)
        state = evaluate(base, session, "return [window.storecastStalls || [], window.storecastErrors || 0, window.storecastErrorDetails || [], window.storecastRecoveries || 0, window.storecastPlayer || '']")
        stalls = [round(s, 2) for s in state[0]]
        values = [l[0] for l in latencies]
        shown = evaluate(base, session, "return window.storecastShown || []")
        if not shown or publisher.t0 is None:
            sys.exit("hlsjs_soak: no frame number was read from the page (or the publisher's clock is missing): no glass-to-glass figure")
        glass = [at / 1000 - (publisher.t0 + n / 30) for at, n in shown]
        # A frame number misread (compression blurring a block's edge) shows as a jump of seconds
        # from its neighbours: counted, and left out.
        plausible = [g for g in glass if 0 < g < 30]
        print(json.dumps({"minutes": minutes, "player": state[4], "stalls": len(stalls), "stall_seconds": round(sum(stalls), 2),
                          "longest_stall_s": max(stalls) if stalls else 0, "fatal_errors": state[1], "error_details": state[2],
                          "recoveries": state[3], "latency_p50_s": pct(values, 50), "latency_p95_s": pct(values, 95),
                          "latency_max_s": max(values) if values else None, "target_latency_s": latencies[-1][1] if latencies else None,
                          "samples": len(values), "glass_to_glass_p50_s": pct(plausible, 50), "glass_to_glass_p95_s": pct(plausible, 95),
                          "glass_to_glass_max_s": max(plausible) if plausible else None, "glass_to_glass_frames": len(plausible),
                          "frame_numbers_misread": len(glass) - len(plausible)}))
    finally:
        if publisher:
            publisher.proc.terminate()
            publisher.proc.wait()
        driver.terminate()

if __name__ == "__main__":
    main()
