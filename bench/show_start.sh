#!/usr/bin/env bash
# Startup for a shopper already waiting when the show starts (bench/show_start.py): the whole
# Storecast stack (release build, `storecast dev`, ladder 360p), a fresh stream per run, the
# player page opened in headless Chromium 2 s before the publisher starts, native HLS and hls.js.
#   bench/show_start.sh [RUNS] [FAST_START] [PART_TARGET]     (default 3 per player; the
#   transcoder's --fast-start, default 0.4 s, 0 turns it off, to compare; the packager's
#   --part-target, default 0.2 s: PART-HOLD-BACK is three of them); PLAYERS=hls.js for one player
# Needs: ffmpeg postgresql chromium chromium-driver (apt); hls.js from deploy/local/test-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-3}"; FAST="${2:-0.4}"; PART="${3:-0.2}"
out="bench/out"; mkdir -p "$out"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
run="$PWD/$out/show-start-run"; rm -rf "$run"
.build/release/storecast dev --run-directory "$run" --https-port 0 --postgres-port 55434 --rtmp-port 19353 --http-port 18081 --api-port 18089 \
    --metrics-port 19101 --zmq-base-port 19381 --rungs 360p --preset veryfast --fast-start "$FAST" --part-target "$PART" --hlsjs-file "$PWD/.build/test-tools/hls.js" \
    > "$out/show-start-dev.log" 2>&1 & dev=$!
trap 'kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/show-start-dev.log" && break; sleep 0.5; done
database=$(awk '/Database:/ {print $2}' "$out/show-start-dev.log")
: > "$out/show-start-keys"
for i in $(seq 1 $(( RUNS * 2 ))); do
    stream="show-$i-$(date +%s)"
    key=$(.build/release/storecast stream create demo "$stream" --database "$database" | awk '/stream key/ {print $NF}')
    echo "$key $stream" >> "$out/show-start-keys"
done
python3 bench/show_start.py "http://127.0.0.1:18081/play/demo/x" "rtmp://127.0.0.1:19353/live/" "$out/show-start-keys" "$RUNS" "${PLAYERS:-native,hls.js}" \
    | tee "$out/show-start-$FAST-$PART.json"
