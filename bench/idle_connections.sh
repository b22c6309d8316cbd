#!/usr/bin/env bash
# Idle connections against a live stack (issue 23): a player and /healthz measured side by side,
# in one run, with no attack and while bench/idle_attack.py holds HTTP_COUNT half-sent HTTP
# requests (a slowloris, reopening what the server closes) and RTMP_COUNT one-byte RTMP
# connections; plus ingest's memory per connection that completes the handshake and never
# publishes. Release build, `storecast dev` at its defaults (10 s header/idle deadline, 256 HTTP
# and 32 RTMP connections per address; the attack spreads over 127.0.x.y to stay under them).
# Then the same probe and the same HTTP attack, in the same run, against nginx in front of the
# same packager (what an operator would otherwise put there), at Debian's default nginx.conf
# settings and at settings matched to Storecast's (10 s header and keep-alive timeouts, 256
# connections per address, enough worker_connections).
#   bench/idle_connections.sh [HTTP_COUNT=19000] [RTMP_COUNT=500] [SECONDS=60]
# This machine's hard limit is 20,000 open files per process, which bounds HTTP_COUNT (the
# packager holds one descriptor per connection, the attacker too).
set -euo pipefail
cd "$(dirname "$0")/.."
HTTP_COUNT="${1:-19000}"; RTMP_COUNT="${2:-500}"; SECS="${3:-60}"
out="bench/out/idle"; rm -rf "$out"; mkdir -p "$out"
for tool in ffmpeg python3 nginx; do command -v $tool >/dev/null || { echo "idle_connections: $tool is missing (deploy/local/install-system-packages.sh --test)" >&2; exit 1; }; done
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
ffmpeg -v error -re -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine=sample_rate=44100 -t $((SECS * 5 + 200)) \
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

/usr/bin/python3 bench/idle_probe.py "$base" "$media" 30 > "$out/storecast-baseline.json"
python3 bench/idle_attack.py 18095 "$HTTP_COUNT" 19372 "$RTMP_COUNT" "$SECS" > "$out/storecast-attack.log" 2>&1 & attack=$!; pids+=($attack)
sleep 15   # let the attack open its connections
/usr/bin/python3 bench/idle_probe.py "$base" "$media" $((SECS - 20)) > "$out/storecast-attacked.json"
wait $attack || true

# nginx in front of the same packager, attacked the same way (HTTP only: nginx has no RTMP here).
nginx_conf() {  # NAME EVENTS HTTP_EXTRA
    local dir="$PWD/$out/nginx-$1"; mkdir -p "$dir"
    cat > "$dir/nginx.conf" <<CONF
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/error.log;
$4
events { $2 }
http {
    access_log off;
    client_body_temp_path $dir/body; proxy_temp_path $dir/proxy; fastcgi_temp_path $dir/fastcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
    $3
    server {
        listen 127.0.0.1:18096;
        location / { proxy_pass http://127.0.0.1:18095; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; }
    }
}
CONF
    echo "$dir/nginx.conf"
}
nginx_phase() {  # NAME CONF
    nginx -c "$2" -g 'daemon off;' > "$out/nginx-$1.log" 2>&1 & local ng=$!; pids+=($ng)
    for _ in $(seq 1 40); do curl -sf http://127.0.0.1:18096/healthz >/dev/null && break; sleep 0.25; done
    curl -sf http://127.0.0.1:18096/healthz >/dev/null || { echo "idle_connections: nginx ($1) did not start:" >&2; cat "$out/nginx-$1.log" "$out/nginx-$1/error.log" >&2; exit 1; }
    local via="http://127.0.0.1:18096${media#$base}"
    /usr/bin/python3 bench/idle_probe.py http://127.0.0.1:18096 "$via" 30 > "$out/$1-baseline.json"
    python3 bench/idle_attack.py 18096 "$HTTP_COUNT" 19372 0 "$SECS" > "$out/$1-attack.log" 2>&1 & local attack=$!; pids+=($attack)
    sleep 15
    /usr/bin/python3 bench/idle_probe.py http://127.0.0.1:18096 "$via" $((SECS - 20)) > "$out/$1-attacked.json"
    wait $attack || true
    kill $ng; wait $ng 2>/dev/null || true
    sleep 12   # what the packager still held for nginx closes before the next phase
}
# Debian's nginx.conf: worker_connections 768, keepalive_timeout 65; nginx's own defaults
# otherwise (client_header_timeout 60 s, no per-address limit).
nginx_phase nginx-default "$(nginx_conf default 'worker_connections 768;' 'keepalive_timeout 65;' '')"
# Matched: 10 s header and keep-alive timeouts, 256 connections per address, and as many
# connections as this machine's 20,000 open files allow (2 workers).
nginx_phase nginx-matched "$(nginx_conf matched 'worker_connections 10000;' 'client_header_timeout 10s; keepalive_timeout 10s; limit_conn_zone $binary_remote_addr zone=perip:10m; limit_conn perip 256;' 'worker_rlimit_nofile 20000;')"

/usr/bin/python3 - "$out" "$per" "$before" "$after" <<'PY'
import json, sys
out, per, before, after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
servers = [("storecast", "Storecast (packager)"), ("nginx-default", "nginx, Debian defaults"), ("nginx-matched", "nginx, matched")]
runs = {}
for key, _ in servers:
    summary = [l for l in open(f"{out}/{key}-attack.log") if '"summary"' in l]
    if not summary: sys.exit(f"idle_connections: the attacker against {key} printed no summary")
    runs[key] = (json.load(open(f"{out}/{key}-baseline.json")), json.load(open(f"{out}/{key}-attacked.json")), json.loads(summary[0]))
for key, label in servers:
    s = runs[key][2]
    print(f"attack on {label}: {s['http_open_mean']:.0f} HTTP connections held on average (min {s['http_open_min']}), {s['rtmp_open_mean']:.0f} RTMP; opened {s['opened']}, failed {s['failed']}")
print()
print("| | " + " | ".join(f"{label}: no attack | under attack" for _, label in servers) + " |")
print("|---|" + "---|---|" * len(servers))
for k, label in [("healthz_p99_ms", "/healthz p99 (ms)"), ("healthz_failed", "/healthz failures"), ("part_p50_ms", "part request p50 (ms)"),
                 ("part_p99_ms", "part request p99 (ms)"), ("part_failed", "part / reload failures"), ("stalls_over_1s", "player stalls (> 1 s without a new part)"),
                 ("longest_gap_s", "longest gap between parts (s)"), ("parts", "parts fetched")]:
    print(f"| {label} | " + " | ".join(f"{runs[key][0][k]} | {runs[key][1][k]}" for key, _ in servers) + " |")
print()
print(f"ingest memory: {before} KiB before, {after} KiB with 100 connections that finished the handshake and never publish: {per} bytes each (goal ≤ 65536)")
PY
