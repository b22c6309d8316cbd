#!/usr/bin/env bash
# A product card's way from the tenant's POST to every rendition's playlist
# (bench/card_propagation.py): the whole Storecast stack (release build, `storecast dev`, a ladder
# of RUNGS), one live show published by ffmpeg, COUNT cards posted one every INTERVAL s.
# LOAD=cpu runs it with two busy loops at the same priority (both cores taken, as in CI);
# LOAD=api with 8 clients listing streams through the API as fast as it answers (wrk; its
# answers a second are printed at the end).
#   bench/card_propagation.sh [COUNT] [INTERVAL]
# Needs: ffmpeg postgresql (apt).
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT="${1:-20}"; INTERVAL="${2:-1.3}"; LOAD="${LOAD:-none}"
out="bench/out"; mkdir -p "$out"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
source bench/dev_stack.sh
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; kill ${dev:-} 2>/dev/null || true; wait ${dev:-} 2>/dev/null || true; }
trap cleanup EXIT
start_dev_stack card-propagation --postgres-port 55436 --rtmp-port 19355 --http-port 18083 --api-port 18091 \
    --metrics-port 19103 --zmq-base-port 19421 --rungs "${RUNGS:-480p,360p}"
show="cards-$(date +%s)"
key=$(.build/release/storecast stream create demo "$show" --database "$database" | awk '/stream key/ {print $NF}')
[[ -n "$key" ]] || { echo "could not create a stream in $database" >&2; exit 1; }
ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=854x480:rate=30 -f lavfi -i sine=frequency=440:sample_rate=44100 \
    -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -c:a aac -b:a 64k -f flv "rtmp://127.0.0.1:19355/live/$key" </dev/null >/dev/null 2>&1 &
pids+=($!)
master="http://127.0.0.1:18083/live/demo/$show/master.m3u8"
echo "waiting for the show to play…" >&2
for i in $(seq 1 60); do
    curl -sf "$master" | grep -q m3u8 && break
    sleep 0.5
done
curl -sf "$master" | grep -q m3u8 || { echo "no multivariant playlist at $master within 30 s" >&2; exit 1; }
sleep 4
case "$LOAD" in
    cpu) for _ in 1 2; do /usr/bin/python3 -c 'while True: pass' & pids+=($!); done ;;
    api) command -v wrk >/dev/null || { echo "LOAD=api needs wrk (apt install wrk)" >&2; exit 1; }
         seconds=$(/usr/bin/python3 -c "import math; print(math.ceil($COUNT * $INTERVAL) + 6)")
         wrk -t1 -c8 -d"${seconds}s" -H "Authorization: Bearer $token" "http://127.0.0.1:18091/v1/tenants/demo/streams?limit=50" > "$out/card-propagation-wrk.txt" 2>&1 &
         pids+=($!) ;;
    none) ;;
    *) echo "LOAD is none, cpu or api" >&2; exit 1 ;;
esac
/usr/bin/python3 bench/card_propagation.py "http://127.0.0.1:18091" "$token" demo "$show" "$master" "$COUNT" "$INTERVAL" | tee "$out/card-propagation-$LOAD.json"
if [[ "$LOAD" == api ]]; then
    wait "${pids[-1]}" || true
    echo "the API's load, wrk -c8 listing streams:" >&2
    grep -E "Requests/sec|Non-2xx|Socket errors" "$out/card-propagation-wrk.txt" >&2 || { cat "$out/card-propagation-wrk.txt" >&2; exit 1; }
fi
