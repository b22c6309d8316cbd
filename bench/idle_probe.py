#!/usr/bin/env python3
"""What a player and a health check see for SECONDS: /healthz every 0.5 s (latency, failures),
and an LL-HLS player on one rendition: a blocking reload on the preload hint, then a GET of each
new part (latency). A stall is a gap of more than 1 s between new parts (parts are ~0.33 s).
Prints one JSON line.
  bench/idle_probe.py BASE_URL MEDIA_PLAYLIST_URL SECONDS
"""
import json, re, sys, threading, time, urllib.request, urllib.error

base, media, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
end = time.time() + seconds
hint = re.compile(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s')
parts_re = re.compile(r'#EXT-X-PART:[^\n]*URI="(part-\d+\.\d+\.m4s)')
health, health_fail, part_latency, part_fail, arrivals = [], 0, [], 0, []

def get(url, timeout=10):
    t = time.time()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        body = r.read()
    return time.time() - t, body

def healthz():
    global health_fail
    while time.time() < end:
        try: health.append(get(base + "/healthz", 5)[0])
        except Exception: health_fail += 1
        time.sleep(0.5)

def player():
    global part_fail
    directory = media.rsplit("/", 1)[0]
    seen = set()
    text = ""
    while time.time() < end and not text:   # a server that does not answer: failures, not a crash
        try: text = get(media, 12)[1].decode()
        except Exception: part_fail += 1; time.sleep(0.5)
    for p in parts_re.findall(text): seen.add(p)
    while time.time() < end:
        m = hint.search(text)
        url = media + (f"?_HLS_msn={m.group(1)}&_HLS_part={m.group(2)}" if m else "")
        try:
            _, body = get(url, 12)
            text = body.decode()
        except Exception:
            part_fail += 1; time.sleep(0.2); continue
        for p in parts_re.findall(text):
            if p in seen: continue
            seen.add(p)
            arrivals.append(time.time())
            try: part_latency.append(get(f"{directory}/{p}")[0])
            except Exception: part_fail += 1

threads = [threading.Thread(target=healthz), threading.Thread(target=player)]
for t in threads: t.start()
for t in threads: t.join()
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")
gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
print(json.dumps({"healthz_ok": len(health), "healthz_failed": health_fail, "healthz_p99_ms": round(pct(health, 0.99) * 1000, 1),
                  "parts": len(part_latency), "part_failed": part_fail, "part_p50_ms": round(pct(part_latency, 0.5) * 1000, 1),
                  "part_p99_ms": round(pct(part_latency, 0.99) * 1000, 1), "stalls_over_1s": sum(1 for g in gaps if g > 1),
                  "longest_gap_s": round(max(gaps) if gaps else float("nan"), 2)}))
