#!/usr/bin/env python3
"""Startup for a shopper who is already waiting when the show starts: open the player page in a
fresh headless Chromium, then start an ffmpeg publisher (testsrc2 854x480 30 fps, x264
ultrafast zerolatency, 2 s GOP, AAC), and measure from the publisher's launch to the page's first
frame on screen (performance.timeOrigin + window.storecastFirstFrame, both wall clock), and
from when the publisher sent media time 0 (ffmpeg's -progress, as bench/llhls_probe.py does:
the earliest wall clock - media time), which leaves out ffmpeg's own start-up. Then,
8 s later, the media errors the page saw (window.storecastErrors), its stalls, and hls.js's
latency and target latency. Repeats RUNS times per player, each
with a fresh stream key from KEYS_FILE (one key a line; a stream that just ended needs a moment),
and prints JSON with p50/max per player.

  bench/show_start.py PAGE_URL RTMP_PREFIX KEYS_FILE [RUNS] [PLAYERS]
      e.g. http://127.0.0.1:18080/play/demo/demo-show rtmp://127.0.0.1:11935/live/ keys.txt 3 native,hls.js

Each run needs its own stream, so PAGE_URL's stream must be the one the key publishes: the
script replaces the page's last path part with the stream named on the key's line as
"KEY STREAM". Needs chromium and chromium-driver (apt) and ffmpeg.
"""
import json, sys, time
from llhls_probe import Publisher
from webdriver import call, evaluate, new_session, start_driver

def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None

def main():
    page, prefix, keys_file = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    players = (sys.argv[5] if len(sys.argv) > 5 else "native,hls.js").split(",")
    keys = [line.split() for line in open(keys_file) if line.strip()]
    if len(keys) < runs * len(players):
        sys.exit(f"need {runs * len(players)} stream keys in {keys_file}, got {len(keys)}")
    driver, base = start_driver()
    try:
        result = {}
        for player in players:
            times, from_first_frame, errors, stalls, latencies, failures = [], [], [], [], [], 0
            for _ in range(runs):
                key, stream = keys.pop(0)
                session = new_session(base)
                url = page.rsplit("/", 1)[0] + "/" + stream + "?player=" + player
                call(base, "POST", f"/session/{session}/url", {"url": url})
                time.sleep(2)  # the page is open and waiting for the show
                publisher = Publisher(prefix + key, 25)
                got, deadline = None, time.time() + 20
                while got is None and time.time() < deadline:
                    v = evaluate(base, session, "return [window.storecastFirstFrame === undefined ? -1 : performance.timeOrigin + window.storecastFirstFrame, window.storecastPlayer || '', window.storecastErrors || 0]")
                    if v[0] > 0 and v[1] == player: got = v[0] / 1000
                    else: time.sleep(0.05)
                time.sleep(8)  # how it plays after such a start: stalls, and hls.js's latency and target
                after = evaluate(base, session, "const h = window.storecastHls; return [window.storecastErrors || 0, window.storecastStalls || [], h ? h.latency : null, h ? h.targetLatency : null]")
                errors.append(after[0])
                stalls.append([round(x, 2) for x in after[1]])
                if after[2] is not None: latencies.append((round(after[2], 2), after[3]))
                call(base, "DELETE", f"/session/{session}")
                publisher.proc.terminate()
                publisher.proc.wait()
                if got is None or publisher.t0 is None: failures += 1
                else:
                    times.append(round(got - publisher.launched, 3))
                    from_first_frame.append(round(got - publisher.t0, 3))
                time.sleep(3)
            result[player] = {"runs": runs, "failures": failures, "media_errors": errors, "stalls_s": stalls,
                              "hlsjs_latency_and_target_8s_later": latencies,
                              "launch_to_first_frame": times, "launch_p50": pct(times, 50),
                              "media_time_0_to_first_frame": from_first_frame, "p50": pct(from_first_frame, 50),
                              "max": max(from_first_frame) if from_first_frame else None}
        print(json.dumps(result))
    finally:
        driver.terminate()

if __name__ == "__main__":
    main()
