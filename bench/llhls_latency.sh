#!/usr/bin/env bash
# LL-HLS latency, startup and serving: the whole Storecast stack (release build, `storecast dev`)
# against nginx + libnginx-mod-rtmp with HLS on, in one run, with the same ffmpeg publisher
# (854x480 30 fps, x264 ultrafast zerolatency, 2 s GOP, AAC).
#   bench/llhls_latency.sh [SECONDS]      (default 120 s per side)
# Needs: nginx libnginx-mod-rtmp wrk ffmpeg postgresql chromium chromium-driver (apt). Prints JSON lines and a summary.
#   - ingest-to-part latency per part, for its first and its last frame (bench/llhls_probe.py),
#     for the passed-through `source` rendition (no transcoding) and the 360p rung (transcoded);
#   - startup: publish start to a playable master playlist, a new viewer's requests to the
#     first INDEPENDENT part's bytes, and the player page in headless Chromium (native HLS and
#     hls.js) from opening to its first frame on screen (bench/player_startup.py);
#   - streamed preload-hinted parts: when a part's first CMAF chunk reaches the player, and the
#     bytes the extra chunks cost;
#   - the same latency probe with a 2 h DVR window and the show recorded (disk on the side);
#   - serving: wrk on one part from the packager's memory next to nginx serving the same bytes
#     as a static file (1,000 connections), and 1,000 clients blocked on the live edge
#     (bench/blocking_fanout.py).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-120}"
out="bench/out"; mkdir -p "$out"
ulimit -n "$(ulimit -Hn)"  # 1,000 clients need more than the usual 1,024 descriptors
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi

# --- Storecast
run="$PWD/$out/llhls-run"; rm -rf "$run"
hlsjs=()  # hls.js from deploy/local/test-tools.sh, for the hls.js startup runs
if [[ -f .build/test-tools/hls.js ]]; then hlsjs=(--hlsjs-file "$PWD/.build/test-tools/hls.js"); fi
.build/release/storecast dev --run-directory "$run" --https-port 0 --postgres-port 55433 --rtmp-port 19352 --http-port 18080 --api-port 18088 \
    --metrics-port 19100 --zmq-base-port 19371 --rungs 360p --source-rung --preset veryfast "${hlsjs[@]}" > "$out/llhls-dev.log" 2>&1 & dev=$!
trap 'kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true; nginx -c "$PWD/$out/nginx-hls.conf" -s stop 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/llhls-dev.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/llhls-dev.log")
sleep 3
base="http://127.0.0.1:18080/live/demo/demo-show"
echo "storecast: probing for ${SECS} s" >&2
python3 bench/llhls_probe.py --mode storecast --publish "$rtmp" --base "$base" --renditions source,360p --seconds "$SECS" | tee "$out/llhls-storecast.json"

# Serving, on a fresh live stream.
ffmpeg -v error -re -f lavfi -i testsrc2=size=854x480:rate=30 -f lavfi -i sine=sample_rate=44100 -t 90 -c:v libx264 -preset ultrafast \
    -tune zerolatency -g 60 -c:a aac -f flv "$rtmp" </dev/null >/dev/null 2>&1 & pub=$!
for _ in $(seq 1 60); do curl -sf "$base/master.m3u8" >/dev/null && break; sleep 0.5; done
sleep 4
echo "storecast: player startup in Chromium (a fresh browser per run, joining the live show)" >&2
players=native; if (( ${#hlsjs[@]} )); then players=native,hls.js; fi
python3 bench/player_startup.py "http://127.0.0.1:18080/play/demo/demo-show" 10 "$players" | tee "$out/llhls-player-startup.json"
echo "storecast: 1,000 blocked clients" >&2
python3 bench/blocking_fanout.py "$base/360p/index.m3u8" 1000 20 | tee "$out/llhls-fanout.json"
# The newest complete part: it stays in the 20 s live window for the whole wrk run.
part=$(curl -s "$base/360p/index.m3u8" | grep -o 'URI="part-[0-9]*\.[0-9]*\.m4s"' | tail -1 | tr -d '"' | sed 's/URI=//')
mkdir -p "$out/nginx-static"; curl -sf "$base/360p/$part" -o "$out/nginx-static/part.m4s"
echo "storecast: wrk on one part ($part, $(stat -c %s "$out/nginx-static/part.m4s") bytes)" >&2
wrk -t2 -c1000 -d15s "$base/360p/$part" | tee "$out/llhls-wrk-storecast.txt"
kill $pub 2>/dev/null; wait $pub 2>/dev/null || true
kill $dev; wait $dev 2>/dev/null || true

# --- Storecast again with the disk on: a 2 h DVR window and the show recorded. Both write on
# their own queues; the part latency shows whether that reaches the live path.
run="$PWD/$out/llhls-run-dvr"; rm -rf "$run"
.build/release/storecast dev --run-directory "$run" --https-port 0 --postgres-port 55433 --rtmp-port 19352 --http-port 18080 --api-port 18088 \
    --metrics-port 19100 --zmq-base-port 19371 --rungs 360p --source-rung --preset veryfast --dvr-window 7200 > "$out/llhls-dev-dvr.log" 2>&1 & dev=$!
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/llhls-dev-dvr.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/llhls-dev-dvr.log")
sleep 3
token=$(sed -n 's/^STORECAST_ADMIN_TOKEN=//p' "$run/keys/storecast.env")
curl -sf -X PUT -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"enabled":true}' http://127.0.0.1:18088/v1/tenants/demo/streams/demo-show/recording >&2
echo >&2
echo "storecast with DVR and recording: probing for ${SECS} s" >&2
python3 bench/llhls_probe.py --mode storecast --publish "$rtmp" --base "$base" --renditions audio,source,360p --seconds "$SECS" | tee "$out/llhls-storecast-dvr.json"
echo "written: $(du -sh "$run/dvr" | cut -f1) DVR, $(du -sh "$run/recordings" | cut -f1) recordings" | tee -a "$out/llhls-storecast-dvr.json" >&2
kill $dev; wait $dev 2>/dev/null || true

# --- nginx-rtmp with HLS (2 s fragments to match the GOP), and nginx serving files
hls="$PWD/$out/nginx-hls"; rm -rf "$hls"; mkdir -p "$hls"
cat > "$out/nginx-hls.conf" <<NGINX
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
worker_processes 1;
daemon off;
error_log $PWD/$out/nginx-hls-error.log;
pid $PWD/$out/nginx-hls.pid;
events { worker_connections 4096; }
rtmp { server { listen 127.0.0.1:19353; application live { live on; hls on; hls_path $hls; hls_fragment 2s; hls_playlist_length 10s; } } }
http { access_log off; server { listen 127.0.0.1:18090; location / { root $PWD/$out; } } }
NGINX
nginx -c "$PWD/$out/nginx-hls.conf" & nginx_pid=$!
sleep 1
echo "nginx: probing for ${SECS} s" >&2
python3 bench/llhls_probe.py --mode nginx --publish "rtmp://127.0.0.1:19353/live/bench" --base "http://127.0.0.1:18090/nginx-hls/bench.m3u8" --seconds "$SECS" | tee "$out/llhls-nginx.json"
echo "nginx: wrk on the same part as a static file" >&2
wrk -t2 -c1000 -d15s "http://127.0.0.1:18090/nginx-static/part.m4s" | tee "$out/llhls-wrk-nginx.txt"
kill $nginx_pid; wait $nginx_pid 2>/dev/null || true
grep -h "Requests/sec\|Non-2xx" "$out/llhls-wrk-storecast.txt" "$out/llhls-wrk-nginx.txt" >&2
