#!/usr/bin/env bash
# Idle connections against a live stack (issue 23): a player and /healthz measured side by side,
# in one run, with no attack and while bench/idle_attack.py holds HTTP_COUNT half-sent HTTP
# requests (a slowloris, reopening what the server closes) and RTMP_COUNT one-byte RTMP
# connections; plus ingest's memory per connection that completes the handshake and never
# publishes. Release build, `storecast dev` at its defaults (10 s header/idle deadline, 256 HTTP
# and 32 RTMP connections per address; the attack spreads over 127.0.x.y to stay under them).
#   bench/idle_connections.sh [HTTP_COUNT=19000] [RTMP_COUNT=500] [SECONDS=60]
# This machine's hard limit is 20,000 open files per process, which bounds HTTP_COUNT (the
# packager holds one descriptor per connection, the attacker too).
set -euo pipefail
cd "$(dirname "$0")/.."
HTTP_COUNT="${1:-19000}"; RTMP_COUNT="${2:-500}"; SECS="${3:-60}"
out="bench/out/idle"; rm -rf "$out"; mkdir -p "$out"
for tool in ffmpeg python3; do command -v $tool >/dev/null || { echo "idle_connections: $tool is missing" >&2; exit 1; }; done
ulimit -n "$(ulimit -Hn)"
(( HTTP_COUNT + RTMP_COUNT + 100 <= $(ulimit -n) )) || { echo "idle_connections: $((HTTP_COUNT + RTMP_COUNT)) connections need more than $(ulimit -n) open files" >&2; exit 1; }
[[ -n "${SKIP_BUILD:-}" ]] || swift build -c release >&2
[[ -x .build/release/storecast ]] || { echo "idle_connections: no release build" >&2; exit 1; }

run="$PWD/$out/run"
.build/release/storecast dev --run-directory "$run" --postgres-port 55435 --rtmp-port 19372 --http-port 18095 --api-port 18099 \
    --metrics-port 19115 --zmq-base-port 19391 --preset ultrafast --rungs 360p > "$out/dev.log" 2>&1 & dev=$!
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do grep -q "RTMP URL:" "$out/dev.log" && break; sleep 0.5; done
url=$(awk '/RTMP URL:/ {print $3}' "$out/dev.log")
[[ -n "$url" ]] || { echo "idle_connections: the stack did not start:" >&2; tail -20 "$out/dev.log" >&2; exit 1; }
ffmpeg -v error -re -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=sample_rate=44100 -t $((SECS * 3 + 60)) \
    -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -b:v 800k -c:a aac -f flv "$url" > "$out/publisher.log" 2>&1 & pids+=($!)
base="http://127.0.0.1:18095"
media=""
for _ in $(seq 1 120); do
    master=$(curl -sf "$base/live/demo/demo-show/master.m3u8" || true)
    variant=$(printf '%s\n' "$master" | grep -m1 '360p/index.m3u8' || true)
    [[ -n "$variant" ]] && { media="$base/live/demo/demo-show/$variant"; break; }
    sleep 0.5
done
[[ -n "$media" ]] || { echo "idle_connections: the show never played" >&2; tail -20 "$out/dev.log" >&2; exit 1; }
sleep 4

# Ingest's memory per connection that finishes the handshake and never publishes.
ingest_pid=$(pgrep -f "storecast-ingest.*19372" | head -1)
[[ -n "$ingest_pid" ]] || { echo "idle_connections: no ingest process" >&2; exit 1; }
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
before=$(rss "$ingest_pid")
python3 - "$ingest_pid" > "$out/memory.txt" <<'PY'
import socket, sys, time
conns = []
for i in range(100):
    s = socket.create_connection(("127.0.0.1", 19372), source_address=(f"127.2.0.{1 + i // 20}", 0))
    s.sendall(b"\x03" + bytes(1536)); got = b""
    while len(got) < 3073: got += s.recv(8192)
    s.sendall(got[1:1537]); conns.append(s)
time.sleep(3)
print(open(f"/proc/{sys.argv[1]}/status").read().split("VmRSS:")[1].split()[0])
for s in conns: s.close()
PY
after=$(cat "$out/memory.txt")
per=$(( (after - before) * 1024 / 100 ))

/usr/bin/python3 bench/idle_probe.py "$base" "$media" 30 > "$out/baseline.json"
python3 bench/idle_attack.py 18095 "$HTTP_COUNT" 19372 "$RTMP_COUNT" "$SECS" > "$out/attack.log" 2>&1 & attack=$!; pids+=($attack)
sleep 15   # let the attack open its connections
/usr/bin/python3 bench/idle_probe.py "$base" "$media" $((SECS - 20)) > "$out/attacked.json"
wait $attack || true
summary=$(grep '"summary"' "$out/attack.log" || true)
[[ -n "$summary" ]] || { echo "idle_connections: the attacker printed no summary:" >&2; tail -5 "$out/attack.log" >&2; exit 1; }
/usr/bin/python3 - "$out/baseline.json" "$out/attacked.json" "$summary" "$per" "$before" "$after" <<'PY'
import json, sys
b, a, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), json.loads(sys.argv[3])
per, before, after = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
print(f"attack: {s['http_open_mean']:.0f} HTTP connections held on average (min {s['http_open_min']}), {s['rtmp_open_mean']:.0f} RTMP; opened {s['opened']}, failed {s['failed']}")
print()
print("| | no attack | under attack | ratio |")
print("|---|---|---|---|")
for key, label in [("healthz_p99_ms", "/healthz p99 (ms)"), ("healthz_failed", "/healthz failures"), ("part_p50_ms", "part request p50 (ms)"),
                   ("part_p99_ms", "part request p99 (ms)"), ("part_failed", "part / reload failures"), ("stalls_over_1s", "player stalls (> 1 s without a new part)"),
                   ("longest_gap_s", "longest gap between parts (s)"), ("parts", "parts fetched")]:
    ratio = f"{a[key] / b[key]:.2f}" if isinstance(b[key], (int, float)) and b[key] else "—"
    print(f"| {label} | {b[key]} | {a[key]} | {ratio} |")
print()
print(f"ingest memory: {before} KiB before, {after} KiB with 100 connections that finished the handshake and never publish: {per} bytes each (goal ≤ 65536)")
PY
