#!/usr/bin/env python3
"""Follows every rendition of a live stream as LL-HLS players do (bench/topology.sh): reads the
multivariant playlist, then keeps a blocking reload on each media playlist's preload hint, and
records when each new part is listed (wall clock). At the end it reads MARKS, lines of
`name start end` (wall-clock seconds, the faults the script caused), and prints JSON: per fault,
the longest time each rendition went without a new part inside that window, and whether any
rendition got an ENDLIST.
  bench/rendition_watch.py MASTER_URL SECONDS MARKS_FILE
"""
import json, re, sys, threading, time, urllib.error, urllib.request

master_url, seconds, marks_file = sys.argv[1], float(sys.argv[2]), sys.argv[3]
hint = re.compile(r'#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s')
deadline = time.time() + seconds

def get(url, timeout=12):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as e:
        return e.code, ""
    except Exception:
        return 0, ""

master = ""
while time.time() < deadline:
    status, master = get(master_url)
    if status == 200 and "#EXT-X-STREAM-INF" in master: break
    time.sleep(0.5)
if "#EXT-X-STREAM-INF" not in master:
    sys.exit(f"rendition_watch: no multivariant playlist at {master_url}")
base = master_url.rsplit("/", 1)[0]
uris = [l for l in master.splitlines() if l and not l.startswith("#") and l.endswith(".m3u8")]
uris += re.findall(r'#EXT-X-MEDIA:[^\n]*URI="([^"]+)"', master)
arrivals = {u: [] for u in uris}
endlist = {u: False for u in uris}
failures = {u: 0 for u in uris}

def follow(uri):
    url = f"{base}/{uri}"
    status, text = get(url)
    last = None
    while time.time() < deadline:
        if "#EXT-X-ENDLIST" in text:
            endlist[uri] = True
            return
        m = hint.search(text)
        if not m:
            time.sleep(0.1)
            status, text = get(url)
            continue
        h = (int(m.group(1)), int(m.group(2)))
        if last is not None and h != last: arrivals[uri].append(time.time())
        last = h
        status, text = get(f"{url}?_HLS_msn={h[0]}&_HLS_part={h[1]}")
        if status != 200:
            failures[uri] += 1
            time.sleep(0.1)
            status, text = get(url)

threads = [threading.Thread(target=follow, args=(u,), daemon=True) for u in uris]
for t in threads: t.start()
for t in threads: t.join(max(0, deadline - time.time()) + 15)
marks = [l.split() for l in open(marks_file).read().splitlines() if l.strip()]
result = {"renditions": uris, "endlist": [u for u in uris if endlist[u]], "failed_requests": failures, "faults": {}}
for name, start, end in marks:
    start, end = float(start), float(end)
    result["faults"][name] = {}
    for u in uris:
        points = [start] + [t for t in arrivals[u] if start <= t <= end] + [end]
        result["faults"][name][u.split("/")[-2]] = round(max(b - a for a, b in zip(points, points[1:])), 2)
print(json.dumps(result, indent=1))
