#!/usr/bin/env bash
# Which rendition a shopper's hls.js keeps on a fast network (issue 18): the field ladder from a
# 720p source (720p at 2 Mbit/s, 480p at 0.8, 360p at 0.4), stock hls.js in low-latency mode and
# then Storecast's player page with the same hls.js, each for MINUTES on the same show over
# loopback (bench/hlsjs_abr.py; ABR_DOWNLINK_KBPS=N throttles the browsers to N kbit/s). The
# whole stack via `storecast dev` (release build; CONFIG=debug to use the debug one).
# ABR_LINK_KBPS=N puts the browsers (and the publisher) on a real link instead: a network
# namespace of their own, joined to this host by a veth pair whose downlink (host to browser) a
# token bucket (tc tbf, ABR_LINK_BUFFER_MS of queue, 150 by default) holds to N kbit/s, the uplink
# left free; the stack is reached at the host's end of the link (the API, which listens on
# 127.0.0.1 only, through a relay, socat). Chromium's own throttling shares its rate among the requests in
# flight, held ones included, which a link does not.
#   bench/hlsjs_abr.sh [MINUTES] [PART_TARGET]     (default 3, 0.2)
# Needs: ffmpeg postgresql chromium chromium-driver (apt); hls.js from deploy/local/test-tools.sh;
# for ABR_LINK_KBPS, root, iproute2 and socat (apt).
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES="${1:-3}"; PART="${2:-0.2}"; CONFIG="${CONFIG:-release}"
link="${ABR_LINK_KBPS:-0}"
[[ $link =~ ^[0-9]+$ ]] || { echo "hlsjs_abr: ABR_LINK_KBPS must be a rate in kbit/s, not '$link'" >&2; exit 1; }
tools="ffmpeg chromium chromedriver"
if [[ $link != 0 ]]; then
    tools="$tools ip tc socat"
    [[ $(id -u) == 0 ]] || { echo "hlsjs_abr: ABR_LINK_KBPS needs root (a network namespace and a qdisc)" >&2; exit 1; }
fi
for tool in $tools; do command -v $tool >/dev/null || { echo "hlsjs_abr: $tool is missing (deploy/local/install-system-packages.sh --test)" >&2; exit 1; }; done
[[ -s .build/test-tools/hls.js ]] || { echo "hlsjs_abr: hls.js is missing (deploy/local/test-tools.sh)" >&2; exit 1; }
out="bench/out"; mkdir -p "$out"
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c "$CONFIG" >&2; fi
run="$PWD/$out/hlsjs-abr-run"; rm -rf "$run"
host=127.0.0.1; in_link=()
relay=""; dev=""
cleanup() {
    if [[ -n $dev ]]; then kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true; fi
    if [[ -n $relay ]]; then kill $relay 2>/dev/null || true; fi
    if [[ $link != 0 ]]; then ip netns del storecast-abr 2>/dev/null || true; ip link del sc-abr-h 2>/dev/null || true; fi
}
trap cleanup EXIT
if [[ $link != 0 ]]; then
    ip netns del storecast-abr 2>/dev/null || true; ip link del sc-abr-h 2>/dev/null || true
    ip netns add storecast-abr
    ip link add sc-abr-h type veth peer name sc-abr-n
    ip link set sc-abr-n netns storecast-abr
    ip addr add 10.77.0.1/30 dev sc-abr-h; ip link set sc-abr-h up
    ip -n storecast-abr addr add 10.77.0.2/30 dev sc-abr-n; ip -n storecast-abr link set sc-abr-n up; ip -n storecast-abr link set lo up
    # The downlink: what leaves the host's end towards the browsers.
    tc qdisc add dev sc-abr-h root tbf rate "${link}kbit" burst 16kb latency "${ABR_LINK_BUFFER_MS:-150}ms" \
        || { echo "hlsjs_abr: tc tbf is missing from this kernel; no figure is printed" >&2; exit 1; }
    host=10.77.0.1; in_link=(ip netns exec storecast-abr)
    # The packager and ingest listen on every address; the API on this host only, so it is relayed.
    socat "TCP-LISTEN:18091,bind=$host,fork,reuseaddr" "TCP:127.0.0.1:18091" & relay=$!
    sleep 0.5
    "${in_link[@]}" python3 -c "import socket; socket.create_connection(('$host', 18091), 3).close()" \
        || { echo "hlsjs_abr: the link's namespace cannot reach the host at $host" >&2; exit 1; }
fi
".build/$CONFIG/storecast" dev --run-directory "$run" --public-host "$host" --https-port 0 --postgres-port 55436 --rtmp-port 19355 --http-port 18083 --api-port 18091 \
    --metrics-port 19103 --zmq-base-port 19411 --rungs 720p,480p,360p --preset veryfast --part-target "$PART" --hlsjs-file "$PWD/.build/test-tools/hls.js" \
    > "$out/hlsjs-abr-dev.log" 2>&1 & dev=$!
for _ in $(seq 1 120); do grep -q "RTMP URL:" "$out/hlsjs-abr-dev.log" && break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/hlsjs-abr-dev.log")
[[ -n "$rtmp" ]] || { echo "hlsjs_abr: the stack did not start (see $out/hlsjs-abr-dev.log)" >&2; exit 1; }
"${in_link[@]}" python3 bench/hlsjs_abr.py "http://$host:18083/play/demo/demo-show" "$rtmp" "$MINUTES" 1280x720 \
    | tee "$out/hlsjs-abr-$PART-$MINUTES-${ABR_DOWNLINK_KBPS:-0}-link${link}${ABR_WITHOUT_PROBES:+-without-probes}${ABR_START_HEIGHT:+-from${ABR_START_HEIGHT}}.json"
