#!/usr/bin/env bash
# hls.js in Chromium on one live show for MINUTES at a part target (issue 18: 0.2 s parts and the
# matching fast start become the default only if hls.js holds them without stalls for 10 min).
# The whole stack via `storecast dev` (release build; CONFIG=debug to use the debug one), ladder
# 360p, the player page with hls.js in low-latency mode (bench/hlsjs_soak.py).
#   bench/hlsjs_soak.sh [MINUTES] [PART_TARGET] [FAST_START]     (default 10, 0.2, 0.4)
# Needs: ffmpeg postgresql chromium chromium-driver (apt); hls.js from deploy/local/test-tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-10}"; PART="${2:-0.2}"; FAST="${3:-0.4}"; CONFIG="${CONFIG:-release}"
for tool in ffmpeg chromium chromedriver; do command -v $tool >/dev/null || { echo "hlsjs_soak: $tool is missing (deploy/local/install-system-packages.sh --test)" >&2; exit 1; }; done
[[ -s .build/test-tools/hls.js ]] || { echo "hlsjs_soak: hls.js is missing (deploy/local/test-tools.sh)" >&2; exit 1; }
out="bench/out"; mkdir -p "$out"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c "$CONFIG" >&2; fi
run="$PWD/$out/hlsjs-soak-run"; rm -rf "$run"
".build/$CONFIG/storecast" dev --run-directory "$run" --https-port 0 --postgres-port 55435 --rtmp-port 19354 --http-port 18082 --api-port 18090 \
    --metrics-port 19102 --zmq-base-port 19391 --rungs 360p --preset veryfast --fast-start "$FAST" --part-target "$PART" --hlsjs-file "$PWD/.build/test-tools/hls.js" \
    > "$out/hlsjs-soak-dev.log" 2>&1 & dev=$!
trap 'kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/hlsjs-soak-dev.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/hlsjs-soak-dev.log")
[[ -n "$rtmp" ]] || { echo "hlsjs_soak: the stack did not start (see $out/hlsjs-soak-dev.log)" >&2; exit 1; }
python3 bench/hlsjs_soak.py "http://127.0.0.1:18082/play/demo/demo-show" "$rtmp" "$MINUTES" | tee "$out/hlsjs-soak-$PART-$FAST-$MINUTES.json"
