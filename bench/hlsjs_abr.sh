#!/usr/bin/env bash
# Which rendition a shopper's hls.js keeps on a fast network (issue 18): the field ladder from a
# 720p source (720p at 2 Mbit/s, 480p at 0.8, 360p at 0.4), stock hls.js in low-latency mode and
# then Storecast's player page with the same hls.js, each for MINUTES on the same show over
# loopback (bench/hlsjs_abr.py; ABR_DOWNLINK_KBPS=N throttles the browsers to N kbit/s). The
# whole stack via `storecast dev` (release build; CONFIG=debug to use the debug one).
#   bench/hlsjs_abr.sh [MINUTES] [PART_TARGET]     (default 3, 0.2)
# Needs: ffmpeg postgresql chromium chromium-driver (apt); hls.js from deploy/local/test-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-3}"; PART="${2:-0.2}"; CONFIG="${CONFIG:-release}"
for tool in ffmpeg chromium chromedriver; do command -v $tool >/dev/null || { echo "hlsjs_abr: $tool is missing (deploy/local/install-system-packages.sh --test)" >&2; exit 1; }; done
[[ -s .build/test-tools/hls.js ]] || { echo "hlsjs_abr: hls.js is missing (deploy/local/test-tools.sh)" >&2; exit 1; }
out="bench/out"; mkdir -p "$out"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c "$CONFIG" >&2; fi
run="$PWD/$out/hlsjs-abr-run"; rm -rf "$run"
".build/$CONFIG/storecast" dev --run-directory "$run" --https-port 0 --postgres-port 55436 --rtmp-port 19355 --http-port 18083 --api-port 18091 \
    --metrics-port 19103 --zmq-base-port 19411 --rungs 720p,480p,360p --preset veryfast --part-target "$PART" --hlsjs-file "$PWD/.build/test-tools/hls.js" \
    > "$out/hlsjs-abr-dev.log" 2>&1 & dev=$!
trap 'kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/hlsjs-abr-dev.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/hlsjs-abr-dev.log")
[[ -n "$rtmp" ]] || { echo "hlsjs_abr: the stack did not start (see $out/hlsjs-abr-dev.log)" >&2; exit 1; }
python3 bench/hlsjs_abr.py "http://127.0.0.1:18083/play/demo/demo-show" "$rtmp" "$MINUTES" 1280x720 | tee "$out/hlsjs-abr-$PART-$MINUTES-${ABR_DOWNLINK_KBPS:-0}.json"
