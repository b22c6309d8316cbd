#!/usr/bin/env bash
# Soak: PUBLISHERS ffmpeg publishers through the ladder and VIEWERS LL-HLS viewers making
# blocking requests for MINUTES, on the release build (`storecast dev`), plus one latency probe
# publisher (bench/llhls_probe.py: ingest → part for its 360p rung over the whole run).
#   bench/soak.sh [MINUTES=10] [PUBLISHERS=20] [VIEWERS=1000]
# On 2 cores the publishers send 426x240 (one rung, encoded at the source size, plus audio):
# the full 720p ladder for 20 shows needs far more than 2 cores. Every process's CPU and RSS is
# sampled every 5 s into bench/out/soak-samples.csv; /usr/bin/python3 with Debian's matplotlib
# draws docs/soak-cpu.png and docs/soak-memory.png and prints the summary (errors, p50/p95,
# growth trend per process over the second half).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-10}"; PUBLISHERS="${2:-20}"; VIEWERS="${3:-1000}"
SECS=$((MINUTES * 60))
out="bench/out"; mkdir -p "$out"
for tool in ffmpeg curl; do command -v $tool >/dev/null || { echo "soak: $tool is missing (apt-get install $tool)" >&2; exit 1; }; done
/usr/bin/python3 -c "import matplotlib" 2>/dev/null || { echo "soak: Debian's python3-matplotlib is missing (apt-get install python3-matplotlib)" >&2; exit 1; }
ulimit -n "$(ulimit -Hn)"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
[[ -x .build/release/storecast ]] || { echo "soak: no release build (.build/release/storecast)" >&2; exit 1; }

run="$PWD/$out/soak-run"; rm -rf "$run"
.build/release/storecast dev --run-directory "$run" --postgres-port 55434 --rtmp-port 19362 --http-port 18090 --api-port 18098 \
    --metrics-port 19110 --zmq-base-port 19381 --preset ultrafast --slots $((PUBLISHERS + 1)) > "$out/soak-dev.log" 2>&1 & dev=$!
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do grep -q "RTMP URL:" "$out/soak-dev.log" && break; sleep 0.5; done
grep -q "RTMP URL:" "$out/soak-dev.log" || { echo "soak: the stack did not start:" >&2; tail -20 "$out/soak-dev.log" >&2; exit 1; }
db=$(awk '/Database:/ {print $2}' "$out/soak-dev.log")
rtmp="rtmp://127.0.0.1:19362/live"
base="http://127.0.0.1:18090/live/demo"
# The demo tenant's concurrent-stream quota (10) would refuse half the publishers: raised for the run.
command -v psql >/dev/null || { echo "soak: psql is missing (apt-get install postgresql-client)" >&2; exit 1; }
psql "$db" -qc "UPDATE tenants SET max_concurrent_streams = $((PUBLISHERS + 1)) WHERE slug = 'demo'"
runid=$(date +%s)  # the throwaway database outlives the run folder (as root it lives under /var/tmp): new names each run

sample="$out/soak-sample-240p.flv"
if [[ ! -f "$sample" ]]; then  # 60 s of 426x240 30 fps H.264 (2 s GOP) + AAC, made once
    ffmpeg -v error -y -f lavfi -i testsrc2=size=426x240:rate=30 -f lavfi -i sine=sample_rate=44100 -t 60 \
        -c:v libx264 -preset veryfast -tune zerolatency -g 60 -b:v 400k -c:a aac -b:a 64k "$sample"
fi
echo "soak: $PUBLISHERS publishers (426x240, one rung + audio), $VIEWERS viewers, $MINUTES min" >&2
urls=()
for i in $(seq 1 "$PUBLISHERS"); do
    key=$(.build/release/storecast stream create demo "soak-$runid-$i" --database "$db" | awk '/^stream key/ {print $NF}')
    [[ -n "$key" ]] || { echo "soak: could not create stream soak-$runid-$i" >&2; exit 1; }
    # A pre-encoded sample sent as it is (-c copy): the publishers cost the machine almost
    # nothing, so the 2 cores go to Storecast (encoding 20 live sources here took about a core).
    ffmpeg -v error -re -stream_loop -1 -i "$sample" -t $((SECS + 90)) -c copy -f flv "$rtmp/$key" </dev/null >/dev/null 2>&1 &
    pids+=($!)
done
probe_key=$(.build/release/storecast stream create demo "soak-$runid-probe" --database "$db" | awk '/^stream key/ {print $NF}')
for i in $(seq 1 "$PUBLISHERS"); do
    rm -f "$out/soak-master.m3u8"
    for _ in $(seq 1 120); do curl -sf "$base/soak-$runid-$i/master.m3u8" -o "$out/soak-master.m3u8" && break; sleep 0.5; done
    rendition=$(grep -v '^#' "$out/soak-master.m3u8" 2>/dev/null | head -1 || true)
    [[ -n "$rendition" ]] || { echo "soak: soak-$i never became playable" >&2; exit 1; }
    urls+=("$base/soak-$runid-$i/$rendition")
done
echo "soak: every show plays; viewers and the latency probe start" >&2

# This stack's own services: the children of its `storecast dev`, not another stack's.
service_pids() { for s in ingest transcoder packager metrics api; do pgrep -P "$dev" -f "release/storecast-$s " | head -1; done; }
mapfile -t spids < <(service_pids)
((${#spids[@]} == 5)) || { echo "soak: expected 5 services, found ${#spids[@]}" >&2; exit 1; }
echo "t,service,cpu_seconds,rss_mib" > "$out/soak-samples.csv"
(
    start=$(date +%s)
    while kill -0 $dev 2>/dev/null; do
        now=$(( $(date +%s) - start ))
        for i in 0 1 2 3 4; do
            p=${spids[$i]}; name=(ingest transcoder packager metrics api)
            [[ -r /proc/$p/stat ]] || continue
            cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' /proc/$p/stat)
            rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' /proc/$p/status)
            echo "$now,${name[$i]},$cpu,$rss" >> "$out/soak-samples.csv"
        done
        sleep 5
    done
) & sampler=$!
pids+=($sampler)
python3 bench/llhls_probe.py --mode storecast --publish "$rtmp/$probe_key" --base "$base/soak-$runid-probe" --renditions 360p --seconds "$SECS" \
    > "$out/soak-probe.json" & probe=$!
pids+=($probe)
/usr/bin/python3 bench/soak_viewers.py "$SECS" "$VIEWERS" "${urls[@]}" > "$out/soak-viewers.json"
# The probe's own publisher started with the viewers: its show must have played too.
wait $probe
kill $sampler 2>/dev/null || true
/usr/bin/python3 - "$out" "$MINUTES" "$PUBLISHERS" "$VIEWERS" <<'PY'
import csv, json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
out, minutes, pubs, viewers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
rows = list(csv.DictReader(open(f"{out}/soak-samples.csv")))
series = {}
for r in rows:
    series.setdefault(r["service"], []).append((int(r["t"]), float(r["cpu_seconds"]), float(r["rss_mib"])))
trend = {}
for what, idx, ylabel, name in [("cpu", 1, "CPU (cores)", "soak-cpu.png"), ("memory", 2, "RSS (MiB)", "soak-memory.png")]:
    plt.figure(figsize=(9, 4.5))
    for service, pts in sorted(series.items()):
        if what == "cpu":
            xs = [b[0] for a, b in zip(pts, pts[1:])]
            ys = [(b[1] - a[1]) / max(1, b[0] - a[0]) for a, b in zip(pts, pts[1:])]
        else:
            xs, ys = [p[0] for p in pts], [p[2] for p in pts]
        plt.plot([x / 60 for x in xs], ys, label=service)
    plt.xlabel("minutes"); plt.ylabel(ylabel)
    plt.title(f"Storecast soak: {pubs} publishers (426x240, 1 rung), {viewers} LL-HLS viewers, {minutes} min")
    plt.legend(); plt.grid(alpha=0.3); plt.tight_layout()
    plt.savefig(f"docs/{name}", dpi=90)
for service, pts in series.items():
    half = [p for p in pts if p[0] >= pts[-1][0] / 2]
    n = len(half)
    if n < 3: continue
    mx = sum(p[0] for p in half) / n; my = sum(p[2] for p in half) / n
    slope = sum((p[0] - mx) * (p[2] - my) for p in half) / max(1e-9, sum((p[0] - mx) ** 2 for p in half))
    trend[service] = {"rss_start_mib": pts[0][2], "rss_end_mib": pts[-1][2], "rss_max_mib": max(p[2] for p in pts),
                      "second_half_mib_per_min": round(slope * 60, 3),
                      "cpu_cores_mean": round((pts[-1][1] - pts[0][1]) / max(1, pts[-1][0] - pts[0][0]), 3)}
viewers_result = json.load(open(f"{out}/soak-viewers.json"))
probe = json.load(open(f"{out}/soak-probe.json"))
print(json.dumps({"viewers": viewers_result, "probe": probe, "processes": trend}, indent=1))
PY
echo "soak: charts in docs/soak-cpu.png and docs/soak-memory.png; samples in $out/soak-samples.csv" >&2
