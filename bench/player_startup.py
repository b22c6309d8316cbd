#!/usr/bin/env python3
"""Startup as a shopper sees it: open the player page of a live stream in headless Chromium and
read when its first frame was on screen (the page's window.storecastFirstFrame, milliseconds
after opening it, from requestVideoFrameCallback). Repeats RUNS times per player with a fresh
page each time; prints JSON with p50/p95/max per player.

  bench/player_startup.py PAGE_URL [RUNS] [PLAYERS]     PLAYERS: native,hls.js (default both)

Drives chromedriver over the W3C WebDriver HTTP API (no Selenium). Needs chromium and
chromium-driver (apt).
"""
import json, sys, time
from webdriver import call, evaluate, new_session, start_driver

def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None

def main():
    page = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    players = (sys.argv[3] if len(sys.argv) > 3 else "native,hls.js").split(",")
    driver, base = start_driver()
    try:
        result = {}
        for player in players:
            times, failures = [], 0
            for _ in range(runs):
                # A fresh browser per run: nothing cached, like a shopper's first view of this show.
                session = new_session(base)
                url = page + "?player=" + player
                call(base, "POST", f"/session/{session}/url", {"url": url})
                got, deadline = None, time.time() + 15
                while got is None and time.time() < deadline:
                    v = evaluate(base, session, "return [window.storecastFirstFrame === undefined ? -1 : window.storecastFirstFrame, window.storecastPlayer || '']")
                    if v[0] > 0 and v[1] == player: got = v[0]
                    else: time.sleep(0.05)
                call(base, "DELETE", f"/session/{session}")
                if got is None: failures += 1
                else: times.append(got / 1000)
            result[player] = {"runs": runs, "failures": failures, "first_frame_p50": pct(times, 50), "first_frame_p95": pct(times, 95), "first_frame_max": max(times) if times else None}
        print(json.dumps(result))
    finally:
        driver.terminate()

if __name__ == "__main__":
    main()
