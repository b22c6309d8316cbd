#!/usr/bin/env python3
"""Latency probe for bench/llhls_latency.sh: publishes with ffmpeg, watches an HLS origin, prints JSON.

Clock reference: ffmpeg publishes in real time (-re) and reports how much media it has written
(-progress, every 50 ms). The earliest (wall clock - media time) over the run is when media time
zero left the publisher; a frame at media time t reached ingest at about t0 + t (loopback).

  storecast mode: each rendition's preload-hinted part is requested as soon as it is hinted,
  as a player does; the origin streams it chunk by chunk. When its first CMAF chunk has
  arrived, the part's first frame is at the player ("first_chunk"); when the response ends the
  part is complete ("first_frame"/"last_frame" = fetchable, as a player that waits for whole
  parts sees it). Sample times come from the chunks' own tfdt/trun.
  nginx mode: the playlist is polled every 20 ms; a segment is fetchable when it is listed.
"""
import argparse, http.client, json, re, struct, subprocess, sys, threading, time, urllib.parse, urllib.request

def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.read()

def boxes(data, start=0, end=None):
    end = len(data) if end is None else end
    i = start
    while i + 8 <= end:
        size, kind = struct.unpack(">I4s", data[i:i + 8])
        if size < 8: break
        yield kind.decode("latin1"), i + 8, i + size
        i += size

def find(data, path, start=0, end=None):
    kind, rest = path[0], path[1:]
    for k, s, e in boxes(data, start, end):
        if k == kind:
            return (s, e) if not rest else find(data, rest, s, e)
    return None

def timescale(init):
    s, _ = find(init, ["moov", "trak", "mdia", "mdhd"])
    version = init[s]
    return struct.unpack(">I", init[s + 12:s + 16] if version == 0 else init[s + 20:s + 24])[0]

def chunk_times(part, start=0, end=None):
    """(first decode time, end decode time, sample count, moof bytes) of one moof+mdat."""
    s, _ = find(part, ["moof", "traf", "tfdt"], start, end)
    base = struct.unpack(">Q", part[s + 4:s + 12])[0] if part[s] == 1 else struct.unpack(">I", part[s + 4:s + 8])[0]
    s, _ = find(part, ["moof", "traf", "trun"], start, end)
    flags = int.from_bytes(part[s + 1:s + 4], "big")
    count = struct.unpack(">I", part[s + 4:s + 8])[0]
    i = s + 8 + (4 if flags & 1 else 0) + (4 if flags & 4 else 0)
    per = 4 * sum(1 for bit in (0x100, 0x200, 0x400, 0x800) if flags & bit)
    total = 0
    for n in range(count):
        total += struct.unpack(">I", part[i + n * per:i + n * per + 4])[0] if flags & 0x100 else 0
    moof = next((e - s + 8 for k, s, e in boxes(part, start, end) if k == "moof"), 0)
    return base, base + total, count, moof

def chunks(part):
    """Complete moof+mdat pairs at the start of `part`: [(start, end)]."""
    out, pending = [], None
    for kind, s, e in boxes(part):
        if e > len(part): break
        if kind == "moof": pending = s - 8
        elif kind == "mdat" and pending is not None: out.append((pending, e)); pending = None
    return out

def part_times(part):
    """(first decode time, end decode time, sample count) of a part of one or more chunks, and the
    bytes its extra chunks cost: every moof beyond the first, less the sample entries it holds."""
    times = [chunk_times(part, s, e) for s, e in chunks(part)]
    extra = sum(moof + 8 - 16 * count for _, _, count, moof in times[1:])
    return times[0][0], times[-1][1], sum(t[2] for t in times), extra

# The frame number, drawn as 16 bits in the frame's top 16 rows (bit i: the 48-pixel block i,
# white for 1), so a player can read which source frame it shows (bench/hlsjs_soak.py).
FRAME_NUMBER_BARS = ["-filter_complex", "[0:v]format=yuv420p,split[m][s];[s]crop=768:16:0:0,"
                     "geq=lum='if(mod(floor(N/pow(2,floor(X/48))),2),235,16)':cb=128:cr=128[bar];[m][bar]overlay=0:0[v]",
                     "-map", "[v]", "-map", "1:a"]

class Publisher:
    def __init__(self, url, seconds, frame_numbers=False, size="854x480"):
        self.t0 = None
        self.launched = time.time()
        self.proc = subprocess.Popen([
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-re",
            "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100"]
            + (FRAME_NUMBER_BARS if frame_numbers else []) + [
            "-t", str(seconds), "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "60",
            "-c:a", "aac", "-b:a", "96k", "-progress", "pipe:1", "-stats_period", "0.05", "-f", "flv", url],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            m = re.match(r"out_time_us=(\d+)", line)
            if m and int(m.group(1)) > 0:
                t0 = time.time() - int(m.group(1)) / 1e6
                self.t0 = t0 if self.t0 is None else min(self.t0, t0)

def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else None

def storecast_rendition(base, name, deadline, publisher, out):
    url = f"{base}/{name}/index.m3u8"
    init = None
    while init is None and time.time() < deadline:
        try: init = get(f"{base}/{name}/init.mp4")[1]
        except Exception: time.sleep(0.05)
    scale = timescale(init)
    text = get(url)[1].decode()
    origin = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(origin.hostname, origin.port, timeout=10)
    while time.time() < deadline:
        hint = re.search(r'PRELOAD-HINT:TYPE=PART,URI="part-(\d+)\.(\d+)\.m4s', text)
        if not hint: time.sleep(0.1); text = get(url)[1].decode(); continue
        msn, idx = hint.group(1), hint.group(2)
        try:
            conn.request("GET", f"{origin.path}/{name}/part-{msn}.{idx}.m4s")
            r = conn.getresponse()
            part, first_chunk = b"", None
            while True:
                data = r.read1(65536)
                if not data: break
                part += data
                if first_chunk is None and chunks(part): first_chunk = time.time()
            fetchable = time.time()
            streamed = r.getheader("Transfer-Encoding") == "chunked"
            # The next hint: the part just read is listed now, so this returns at once.
            text = get(f"{url}?_HLS_msn={msn}&_HLS_part={idx}")[1].decode()
        except Exception:
            conn.close(); conn = http.client.HTTPConnection(origin.hostname, origin.port, timeout=10)
            text = get(url)[1].decode(); continue
        if r.status != 200 or publisher.t0 is None or not chunks(part): continue
        first, end, count, extra = part_times(part)
        frame = (end - first) / count
        out.append({"first": fetchable - (publisher.t0 + first / scale), "last": fetchable - (publisher.t0 + (end - frame) / scale),
                    "first_chunk": first_chunk - (publisher.t0 + first / scale), "streamed": streamed,
                    "overhead": extra / len(part), "duration": (end - first) / scale, "start": first / scale})

def new_viewer(base, rendition):
    """A fresh player: master, media playlist, init and the newest INDEPENDENT part, timed."""
    t = time.time()
    get(f"{base}/master.m3u8")
    text = get(f"{base}/{rendition}/index.m3u8")[1].decode()
    get(f"{base}/{rendition}/init.mp4")
    parts = re.findall(r'#EXT-X-PART:[^\n]*URI="(part-\d+\.\d+\.m4s)",INDEPENDENT=YES', text)
    get(f"{base}/{rendition}/{parts[-1]}")
    return time.time() - t

def nginx_segments(playlist_url, deadline, publisher, out):
    starts, seen, t_first = {}, set(), None
    while time.time() < deadline:
        try: text = get(playlist_url)[1].decode()
        except Exception: time.sleep(0.02); continue
        now = time.time()
        seq = int(re.search(r"#EXT-X-MEDIA-SEQUENCE:(\d+)", text).group(1))
        for i, d in enumerate(re.findall(r"#EXTINF:([\d.]+)", text)):
            n = seq + i
            if n not in starts: starts[n] = starts.get(n - 1, (0, 0))[0] + starts.get(n - 1, (0, 0))[1], float(d)
            if n not in seen and publisher.t0 is not None:
                seen.add(n)
                t_first = t_first or now
                s, dur = starts[n]
                out.append({"first": now - (publisher.t0 + s), "last": now - (publisher.t0 + s + dur - 1 / 30), "duration": dur, "start": s})
        time.sleep(0.02)
    return t_first

def main():
    a = argparse.ArgumentParser()
    a.add_argument("--mode", choices=["storecast", "nginx"], required=True)
    a.add_argument("--publish", required=True)
    a.add_argument("--base", required=True, help="storecast: .../live/<tenant>/<stream>; nginx: the playlist URL")
    a.add_argument("--renditions", default="source,360p")
    a.add_argument("--seconds", type=int, default=120)
    args = a.parse_args()
    pub = Publisher(args.publish, args.seconds + 15)
    deadline = time.time() + args.seconds + 8
    result = {"mode": args.mode}
    while pub.t0 is None and time.time() < pub.launched + 10: time.sleep(0.01)
    if args.mode == "storecast":
        ready = first_part = None
        probe = args.renditions.split(",")[-1]
        def wait_master():
            # The origin holds master.m3u8 of a starting stream until it is ready (404 before the
            # stream is announced), so this polls only until the stream exists.
            nonlocal ready
            while time.time() < deadline and ready is None:
                try:
                    if get(f"{args.base}/master.m3u8")[0] == 200: ready = time.time()
                except Exception: time.sleep(0.02)
        master_thread = threading.Thread(target=wait_master, daemon=True)
        master_thread.start()
        while time.time() < deadline and first_part is None:
            try:
                if "#EXT-X-PART:" in get(f"{args.base}/{probe}/index.m3u8")[1].decode(): first_part = time.time()
            except Exception: pass
            time.sleep(0.02)
        master_thread.join()
        # The first part can be fetched once the origin knows the rendition; the multivariant
        # playlist waits for a whole segment of every rendition (see StreamPackage.isReady).
        result["startup_publish_to_first_part"] = first_part - pub.t0 if first_part and pub.t0 else None
        result["startup_publish_to_playable"] = ready - pub.t0 if ready and pub.t0 else None
        samples = {}
        threads = []
        for name in args.renditions.split(","):
            samples[name] = []
            t = threading.Thread(target=storecast_rendition, args=(args.base, name, deadline, pub, samples[name]), daemon=True)
            t.start(); threads.append(t)
        time.sleep(10)
        viewers = []
        for _ in range(20):
            viewers.append(new_viewer(args.base, args.renditions.split(",")[-1]))
            time.sleep(0.5)
        for t in threads: t.join()
        result["new_viewer_to_first_part"] = {"p50": pct(viewers, 50), "p95": pct(viewers, 95)}
    else:
        samples = {"hls": []}
        first = nginx_segments(args.base, deadline, pub, samples["hls"])
        result["startup_publish_to_playable"] = first - pub.t0 if first and pub.t0 else None
    for name, s in samples.items():
        s = s[5:]  # the first seconds settle
        result[name] = {"parts": len(s), "duration_p50": pct([x["duration"] for x in s], 50),
                        "first_frame_p50": pct([x["first"] for x in s], 50), "first_frame_p95": pct([x["first"] for x in s], 95),
                        "last_frame_p50": pct([x["last"] for x in s], 50), "last_frame_p95": pct([x["last"] for x in s], 95),
                        **({"first_chunk_p50": pct([x["first_chunk"] for x in s], 50), "first_chunk_p95": pct([x["first_chunk"] for x in s], 95),
                            "streamed_share": sum(1 for x in s if x["streamed"]) / len(s), "chunk_overhead_p50": pct([x["overhead"] for x in s], 50)}
                           if s and "first_chunk" in s[0] else {}),
                        "first_start": s[0]["start"] if s else None}
    pub.proc.terminate()
    print(json.dumps(result))

if __name__ == "__main__":
    main()
