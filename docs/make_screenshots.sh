#!/usr/bin/env bash
# The README's screenshots: the stories feed with three live shows and the player page with a
# product card, taken in headless Chromium (390x844, a phone) from `storecast dev` (release
# build). Needs what deploy/local/test.sh installs; writes docs/images/feed.png and card.png.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -n "${SKIP_BUILD:-}" ]] || swift build -c release >&2
out="bench/out"; mkdir -p "$out"; run="$PWD/$out/screenshots-run"
# A fresh database each time (as root its data lives under /var/tmp, linked from the run folder).
[[ -L "$run/postgres" ]] && rm -rf "$(readlink -f "$run/postgres")"
rm -rf "$run"
.build/release/storecast dev --run-directory "$run" --postgres-port 55436 --rtmp-port 19355 --http-port 18083 --api-port 18091 \
    --metrics-port 19103 --zmq-base-port 19401 --rungs 360p --hlsjs-file "$PWD/.build/test-tools/hls.js" > "$out/screenshots-dev.log" 2>&1 & dev=$!
pids=()
trap 'kill "${pids[@]}" $dev 2>/dev/null || true; wait $dev 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/screenshots-dev.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/screenshots-dev.log"); [[ -n "$rtmp" ]] || { echo "the stack did not start" >&2; exit 1; }
token=$(grep -o "Bearer [A-Za-z0-9_.-]*" "$out/screenshots-dev.log" | head -1 | cut -d' ' -f2)
database=$(awk '/Database:/ {print $2}' "$out/screenshots-dev.log")
api="http://127.0.0.1:18091/v1/tenants/demo"
keys=("${rtmp##*/}")
for s in morning-drop summer-sale; do
    keys+=("$(.build/release/storecast stream create demo "$s" --database "$database" | awk '/stream key/ {print $NF}')")
done
curl -fsS -X PATCH -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$api/streams/demo-show" -d '{"title":"New season, live"}' >/dev/null
for i in 0 1 2; do
    colour=("testsrc2" "smptebars" "rgbtestsrc")
    ffmpeg -hide_banner -loglevel error -re -f lavfi -i "${colour[$i]}=size=720x1280:rate=30" -f lavfi -i sine=frequency=440 -t 90 \
        -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -c:a aac -f flv "${rtmp%/*}/${keys[$i]}" & pids+=($!)
done
sleep 15
curl -fsS -X POST -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$api/streams/demo-show/highlights" \
    -d '{"productId":"sku-1","title":"Linen shirt","price":"49.90","currency":"EUR","link":"https://shop.example.com/linen"}' >/dev/null
sleep 8
/usr/bin/python3 - <<'PY'
import base64, sys, time
sys.path.insert(0, "bench")
from webdriver import call, new_session, start_driver
driver, base = start_driver()
try:
    s = new_session(base)
    call(base, "POST", f"/session/{s}/window/rect", {"width": 390, "height": 844})
    for url, name, wait in [("http://127.0.0.1:18083/feed/demo", "feed", 8), ("http://127.0.0.1:18083/play/demo/demo-show", "card", 8)]:
        call(base, "POST", f"/session/{s}/url", {"url": url})
        time.sleep(wait)
        png = base64.b64decode(call(base, "GET", f"/session/{s}/screenshot")["value"])
        open(f"docs/images/{name}.png", "wb").write(png)
        print(f"docs/images/{name}.png: {len(png)} bytes")
finally:
    driver.terminate()
PY
