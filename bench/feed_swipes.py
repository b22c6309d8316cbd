#!/usr/bin/env python3
"""A shopper swiping through the stories feed, many times: the feed page (FEED_URL) in headless
Chromium with hls.js, three live shows, and ROUNDS rounds of a swipe down (to the show the page
preloaded) then a swipe back up (to the show swiped away a moment before, whose player was
destroyed: the page keeps two players, the one on screen and the next). Each swipe is a keydown
event, as a desktop shopper makes it, and is measured by the page itself: from the swipe to the
next show's first frame (requestVideoFrameCallback), and how far behind the live edge that
frame is. Then the show is watched for WATCH seconds: its stalls (a `waiting` once it has
played), hls.js's latency, and the bytes a second the page fetched for it and for the show
waiting preloaded in the next slot (what preloading costs a shopper's data plan). Prints JSON with each swipe and the p50/max per kind.

  bench/feed_swipes.py FEED_URL [ROUNDS] [WATCH]

With TRACE=1 it also prints, for each swipe, the shown show's requests from the swipe to its
first frame (the page's resource timing: name, start and end in ms after the swipe).
Needs chromium and chromium-driver (apt), and a feed with at least two live shows.
"""
import json, os, sys, time
from webdriver import call, evaluate, new_session, start_driver

def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None

WATCH_JS = """
const f = window.storecastFeed, s = f.shows()[arguments[0]], v = f.videoOf(s);
if (!v) return null;
if (v.storecastStalls === undefined) {
  v.storecastStalls = 0; v.storecastPlayed = false;
  v.addEventListener('playing', () => { v.storecastPlayed = true; });
  v.addEventListener('waiting', () => { if (v.storecastPlayed && !v.paused) v.storecastStalls++; });
}
const h = f.hlsOf(s);
const level = h && h.levels ? h.levels[h.currentLevel] : null;
return [s, v.storecastStalls, h ? h.latency : null, v.currentTime, level ? level.height : null];
"""

PROBE_JS = """
const f = window.storecastFeed, s = f.shows()[arguments[0]], v = f.videoOf(s), h = f.hlsOf(s);
if (!v) return null;
const b = []; for (let i = 0; i < v.buffered.length; i++) b.push([+v.buffered.start(i).toFixed(2), +v.buffered.end(i).toFixed(2)]);
return [s, +v.currentTime.toFixed(2), v.readyState, b, h && h.liveSyncPosition ? +h.liveSyncPosition.toFixed(2) : null, h ? Math.round(performance.now() - h.storecastLastAppend) : null];
"""

TRACE = os.environ.get("TRACE") == "1"

def main():
    url = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    watch = float(sys.argv[3]) if len(sys.argv) > 3 else 6
    driver, base = start_driver()
    session = None
    try:
        session = new_session(base)
        call(base, "POST", f"/session/{session}/url", {"url": url})
        evaluate(base, session, "performance.setResourceTimingBufferSize(1000000); return true")
        deadline = time.time() + 30
        while time.time() < deadline:
            state = evaluate(base, session, "const f = window.storecastFeed; return f ? [f.shows().length, f.players().length, window.Hls ? 1 : 0] : [0, 0, 0]")
            if state[0] >= 2 and state[1] == 2: break
            time.sleep(0.2)
        else:
            sys.exit(f"the feed at {url} did not list two live shows with two players within 30 s: {state}")
        if not state[2]: sys.exit("the feed page has no hls.js (start the packager with --hlsjs-file)")
        time.sleep(3)  # the first show plays, the next one is preloaded
        swipes = []
        for r in range(rounds):
            for key, kind, index in (("ArrowDown", "preloaded", 1), ("ArrowUp", "back, not preloaded", 0)):
                before = len(evaluate(base, session, "return window.storecastFeed.swipes"))
                if TRACE:  # the show about to be swiped to, as it waits: [time, readyState, buffered, live sync, last append ms ago]
                    print(f"before {key}: " + json.dumps(evaluate(base, session, PROBE_JS.replace("arguments[0]", str(index)))), file=sys.stderr)
                t0 = evaluate(base, session, f"const t = performance.now(); dispatchEvent(new KeyboardEvent('keydown', {{ key: '{key}' }})); return t")
                evaluate(base, session, WATCH_JS.replace("arguments[0]", str(index)))
                t, seen = time.time(), None
                while time.time() - t < 10:
                    got = evaluate(base, session, "return window.storecastFeed.swipes")
                    if len(got) > before: seen = got[-1]; break
                    time.sleep(0.05)
                if seen is None: sys.exit(f"round {r}: no first frame within 10 s of the swipe {key}")
                first = evaluate(base, session, WATCH_JS.replace("arguments[0]", str(index)))
                if TRACE:  # the target show's requests from the swipe to its first frame (resource timing)
                    trace = evaluate(base, session, f"return performance.getEntriesByType('resource').filter(e => e.startTime >= {t0} && e.name.includes('/' + {json.dumps(seen['to'])} + '/'))"
                                     f".map(e => [e.name.split('/').slice(-2).join('/'), Math.round(e.startTime - {t0}), Math.round(e.responseEnd - {t0})])")
                    print(f"{kind} to {seen['to']}: first frame at {round(seen['ms'])} ms; requests [name, start, end]: " +
                          json.dumps([t for t in trace if t[1] <= seen['ms'] + 50]), file=sys.stderr)
                w0 = evaluate(base, session, "return performance.now()")
                latencies, end = [], time.time() + watch
                while time.time() < end:
                    time.sleep(0.5)
                    v = evaluate(base, session, WATCH_JS.replace("arguments[0]", str(index)))
                    if v and v[2] is not None: latencies.append(v[2])
                last = evaluate(base, session, WATCH_JS.replace("arguments[0]", str(index)))
                # Bytes a second over the watch, of the show on screen and of the one waiting in the
                # next slot (resource timing: every request the page made for each, headers included).
                rates = evaluate(base, session, f"""
                  const f = window.storecastFeed, shows = f.shows(), w0 = {w0}, w1 = performance.now();
                  const rate = (s, kind) => s ? performance.getEntriesByType('resource').filter(e => e.startTime >= w0 && e.startTime < w1 && e.name.includes('/' + s + '/') && e.name.includes(kind))
                    .reduce((n, e) => n + (e.transferSize || e.encodedBodySize), 0) / ((w1 - w0) / 1000) : null;
                  return [rate(shows[{index}], ''), rate(shows[{index} + 1], ''), rate(shows[{index} + 1], '.m3u8')];""")
                swipes.append({"kind": kind, "to": seen["to"], "ms": round(seen["ms"]), "behind_s": round(seen["behind"], 2) if seen.get("behind") is not None else None,
                               "stalls": (last[1] - first[1]) if first and last else None,
                               "latency_p50_s": round(pct(latencies, 50), 2) if latencies else None,
                               "advanced_s": round(last[3] - first[3], 2) if first and last else None,
                               "height_at_first_frame": first[4] if first else None, "height_after": last[4] if last else None,
                               "playing_kbit_s": round(rates[0] * 8 / 1000) if rates[0] is not None else None,
                               "waiting_kbit_s": round(rates[1] * 8 / 1000) if rates[1] is not None else None,
                               "waiting_playlists_kbit_s": round(rates[2] * 8 / 1000) if rates[2] is not None else None})
                print(json.dumps(swipes[-1]), file=sys.stderr)
        summary = {}
        for kind in ("preloaded", "back, not preloaded"):
            ms = [s["ms"] for s in swipes if s["kind"] == kind]
            behind = [s["behind_s"] for s in swipes if s["kind"] == kind and s["behind_s"] is not None]
            summary[kind] = {"swipes": len(ms), "first_frame_ms_p50": pct(ms, 50), "first_frame_ms_max": max(ms),
                             "under_500_ms": sum(1 for m in ms if m <= 500), "behind_s_p50": pct(behind, 50), "behind_s_max": max(behind) if behind else None,
                             "swipes_with_stalls": sum(1 for s in swipes if s["kind"] == kind and s["stalls"]),
                             "stalls": sum(s["stalls"] or 0 for s in swipes if s["kind"] == kind),
                             "playing_kbit_s_p50": pct([s["playing_kbit_s"] for s in swipes if s["kind"] == kind and s["playing_kbit_s"] is not None], 50),
                             "next_waiting_kbit_s_p50": pct([s["waiting_kbit_s"] for s in swipes if s["kind"] == kind and s["waiting_kbit_s"] is not None], 50),
                             "of_which_playlists_kbit_s_p50": pct([s["waiting_playlists_kbit_s"] for s in swipes if s["kind"] == kind and s["waiting_playlists_kbit_s"] is not None], 50)}
        maxPlayers = evaluate(base, session, "return window.storecastFeed.maxPlayers")
        if maxPlayers > 2: sys.exit(f"the page ran {maxPlayers} players at once")
        print(json.dumps({"rounds": rounds, "watch_s": watch, "summary": summary, "swipes": swipes}))
    finally:
        if session:  # the browser goes with its session (terminating chromedriver alone leaves it running)
            try: call(base, "DELETE", f"/session/{session}")
            except Exception: pass
        driver.terminate()

if __name__ == "__main__":
    main()
