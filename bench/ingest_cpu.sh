#!/usr/bin/env bash
# Ingest CPU per ingested Mbps and memory per publisher: storecast-ingest (release build, one
# ZeroMQ consumer draining every unit) against nginx + libnginx-mod-rtmp (HLS off), in one run,
# with the same N ffmpeg `-c copy` publishers of a 2.5 Mbps H.264/AAC file.
#   bench/ingest_cpu.sh [PUBLISHERS] [SECONDS]       (default 8 publishers, 60 s)
# Needs: nginx libnginx-mod-rtmp ffmpeg postgresql (apt), pyzmq (pip). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-8}"; SECS="${2:-60}"
out="bench/out"; mkdir -p "$out"
hz=$(getconf CLK_TCK)

swift build -c release --product storecast
swift build -c release --product storecast-ingest
sample="$out/sample-2500k.flv"
if [[ ! -f "$sample" ]]; then
    echo "making a 2.5 Mbps 720p30 H.264/AAC sample…"
    ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=sample_rate=44100 -t 120 \
        -c:v libx264 -preset veryfast -b:v 2400k -maxrate 2500k -bufsize 5000k -g 60 -c:a aac -b:a 96k "$sample"
fi

cpu_ticks() {  # total utime+stime of the given pids
    local t=0
    for p in "$@"; do [[ -r /proc/$p/stat ]] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done
    echo $t
}
peak_rss_kb() {
    local t=0
    for p in "$@"; do [[ -r /proc/$p/status ]] && t=$((t + $(awk '/VmHWM/ {print $2}' /proc/$p/status))); done
    echo $t
}
publish_all() {  # url-prefix keyfile
    pids=()
    for i in $(seq 1 "$N"); do
        ffmpeg -v error -re -stream_loop -1 -i "$sample" -c copy -f flv "$1$(sed -n "${i}p" "$2")" </dev/null >/dev/null 2>&1 &
        pids+=($!)
    done
}
measure() {  # label pids…  (after a 5 s warm-up, over SECS)
    sleep 5
    local a; a=$(cpu_ticks "$@")
    sleep "$SECS"
    local b; b=$(cpu_ticks "$@")
    echo "$(( (b - a) * 1000 / hz ))"   # CPU milliseconds over the window
}

# --- nginx-rtmp
cat > "$out/nginx.conf" <<NGINX
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
worker_processes 1;
daemon off;
error_log $PWD/$out/nginx-error.log;
pid $PWD/$out/nginx.pid;
events { worker_connections 1024; }
rtmp { server { listen 127.0.0.1:19350; application live { live on; record off; } } }
NGINX
for i in $(seq 1 "$N"); do echo "bench$i"; done > "$out/nginx-keys"
nginx -c "$PWD/$out/nginx.conf" & nginx_master=$!
sleep 1
nginx_pids=$(pgrep -P $nginx_master | tr '\n' ' ')
publish_all "rtmp://127.0.0.1:19350/live/" "$out/nginx-keys"
nginx_ms=$(measure $nginx_master $nginx_pids)
nginx_rss=$(peak_rss_kb $nginx_master $nginx_pids)
kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
kill $nginx_master; wait $nginx_master 2>/dev/null || true

# --- storecast-ingest
pgport=55432
run="$PWD/$out/run"
mkdir -p "$run"
conninfo=$(.build/release/storecast dev-db start --run-directory "$run" --port $pgport)
.build/release/storecast migrate --database "$conninfo" >/dev/null
.build/release/storecast tenant create bench --max-streams 1000 --database "$conninfo" >/dev/null
: > "$out/storecast-keys"
for i in $(seq 1 "$N"); do
    .build/release/storecast stream create bench "s$i-$(date +%s)" --database "$conninfo" | awk '/stream key/ {print $NF}' >> "$out/storecast-keys"
done
.build/release/storecast-ingest --database "$conninfo" --rtmp-host 127.0.0.1 --rtmp-port 19351 \
    --work-endpoint tcp://127.0.0.1:19361 --metrics-endpoint tcp://127.0.0.1:19362 --log-level warning & ingest=$!
python3 bench/zmq_drain.py tcp://127.0.0.1:19361 & drain=$!
sleep 2
publish_all "rtmp://127.0.0.1:19351/live/" "$out/storecast-keys"
ingest_ms=$(measure $ingest)
ingest_rss=$(peak_rss_kb $ingest)
kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
kill $ingest $drain; wait $ingest $drain 2>/dev/null || true
.build/release/storecast dev-db stop --run-directory "$run" --port $pgport >/dev/null

mbps=$(python3 -c "print(round($N * 2.5, 1))")
python3 - "$N" "$SECS" "$mbps" "$nginx_ms" "$ingest_ms" "$nginx_rss" "$ingest_rss" <<'PY'
import sys
n, secs, mbps, nginx_ms, ingest_ms, nginx_rss, ingest_rss = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), *map(int, sys.argv[4:])
per = lambda ms: ms / secs / mbps
print(f"| publishers | ingested Mbps | nginx-rtmp CPU ms/s/Mbps | storecast-ingest CPU ms/s/Mbps | ratio (storecast / nginx) | peak RSS per publisher nginx / storecast |")
print(f"|---|---|---|---|---|---|")
print(f"| {n} | {mbps} | {per(nginx_ms):.2f} | {per(ingest_ms):.2f} | {per(ingest_ms)/max(per(nginx_ms),1e-9):.2f}x | {nginx_rss/n/1024:.1f} MiB / {ingest_rss/n/1024:.1f} MiB |")
PY
