#!/usr/bin/env python3
"""Where Chromium's native HLS plays a live LL-HLS stream: open the player page with
?player=native in headless Chromium, read the browser's network log (chromedriver performance
log) and report which segments it fetched first against the live edge when the page opened, and
how far behind the edge it plays after SECONDS.

  bench/chromium_native_hls.py ORIGIN TENANT/STREAM RENDITION [SECONDS]

The latency estimate: (stream time of the edge's end) - (stream time of the first segment the
player appended + its currentTime), from the playlist's EXTINF durations. Chromium's native
HLS plays in MSE sequence mode, so currentTime counts from the first segment it appended.
Needs chromium and chromium-driver (apt).
"""
import json, re, sys, time, urllib.request
from webdriver import call, evaluate, new_session, start_driver

def segments(url):
    """[(sequence, start seconds from sequence 1, duration)] of a media playlist."""
    text = urllib.request.urlopen(url).read().decode()
    first = int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", text).group(1))
    return [(int(n), float(d)) for d, n in re.findall(r"#EXTINF:([\d.]+),\nseg-(\d+)\.m4s", text)], first

def main():
    origin, stream, rendition = sys.argv[1], sys.argv[2], sys.argv[3]
    seconds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    playlist = f"{origin}/live/{stream}/{rendition}/index.m3u8"
    driver, base = start_driver()
    try:
        sid = new_session(base, performance_log=True)
        opened, _ = segments(playlist)
        call(base, "POST", f"/session/{sid}/url", {"url": f"{origin}/play/{stream}?player=native"})
        time.sleep(seconds)
        state = evaluate(base, sid, "const v = document.getElementById('player'); return [v.currentTime, window.storecastPlayer || '']")
        now, _ = segments(playlist)
        fetched = []
        for entry in call(base, "POST", f"/session/{sid}/se/log", {"type": "performance"})["value"]:
            m = json.loads(entry["message"])["message"]
            if m.get("method") == "Network.requestWillBeSent":
                hit = re.search(rf"/{rendition}/seg-(\d+)\.m4s", m["params"]["request"]["url"])
                if hit: fetched.append(int(hit.group(1)))
        call(base, "DELETE", f"/session/{sid}")
        # Segment start times on the stream timeline, from every duration seen.
        durations = dict(opened + now)
        def start(n): return sum(d for s, d in durations.items() if s < n)
        appended = [n for n in fetched if n != min(durations)] or fetched  # Chromium also fetches the first listed one to probe the container
        first = appended[0]
        edge_end = start(now[-1][0]) + now[-1][1]
        print(json.dumps({"player": state[1], "edge_when_opened": opened[-1][0], "segments_fetched_first": fetched[:6],
                          "first_played_segment": first, "segments_behind_at_join": opened[-1][0] - first + 1,
                          "current_time": state[0], "behind_edge_seconds": round(edge_end - (start(first) + state[0]), 2)}))
    finally:
        driver.terminate()

if __name__ == "__main__":
    main()
