#!/usr/bin/env bash
# A shopper swiping through the stories feed (bench/feed_swipes.py): the whole Storecast stack
# (release build, `storecast dev`, ladder 360p), three live shows published by ffmpeg (426x240,
# 2 s GOP), the feed page in headless Chromium with hls.js, ROUNDS rounds of a swipe down (to the
# preloaded show) and a swipe back up (to a show whose player was destroyed), each show then
# watched WATCH seconds for stalls.
#   bench/feed_swipes.sh [ROUNDS] [WATCH]      (default 5 rounds, 6 s)
#   SIZE=854x480 RUNGS=480p,360p bench/feed_swipes.sh …   (a ladder of two renditions)
# Needs: ffmpeg postgresql chromium chromium-driver (apt); hls.js from deploy/local/test-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS="${1:-5}"; WATCH="${2:-6}"; SIZE="${SIZE:-426x240}"
out="bench/out"; mkdir -p "$out"
[[ -f .build/test-tools/hls.js ]] || { echo "no .build/test-tools/hls.js: run deploy/local/test-tools.sh first" >&2; exit 1; }
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
source bench/dev_stack.sh
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; kill ${dev:-} 2>/dev/null || true; wait ${dev:-} 2>/dev/null || true; }
trap cleanup EXIT
start_dev_stack feed-swipes --postgres-port 55435 --rtmp-port 19354 --http-port 18082 --api-port 18090 \
    --metrics-port 19102 --zmq-base-port 19391 --rungs "${RUNGS:-360p}" --hlsjs-file "$PWD/.build/test-tools/hls.js"
for show in alpha bravo charlie; do
    key=$(.build/release/storecast stream create demo "$show-$(date +%s)" --database "$database" | awk '/stream key/ {print $NF}')
    [[ -n "$key" ]] || { echo "could not create a stream in $database" >&2; exit 1; }
    ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=$SIZE:rate=30 -f lavfi -i sine=frequency=440:sample_rate=44100 \
        -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -c:a aac -b:a 64k -f flv "rtmp://127.0.0.1:19354/live/$key" </dev/null >/dev/null 2>&1 &
    pids+=($!)
    sleep 1.5
done
echo "waiting for the three shows in the feed…" >&2
for i in $(seq 1 60); do
    n=$(curl -s "http://127.0.0.1:18090/v1/feed/demo" | grep -o '"placeholder":"data:' | wc -l || true)
    (( n >= 3 )) && break
    (( i % 10 == 0 )) && echo "  $n of 3 after $(( i / 2 )) s" >&2
    sleep 0.5
done
(( n >= 3 )) || { echo "the feed did not list three live shows with placeholders within 30 s" >&2; exit 1; }
/usr/bin/python3 bench/feed_swipes.py "http://127.0.0.1:18082/feed/demo" "$ROUNDS" "$WATCH" | tee "$out/feed-swipes.json"
