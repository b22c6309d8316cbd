#!/usr/bin/env bash
# Several hosts on one machine: PostgreSQL, ingest, two transcoders, two packagers, the metrics
# collector, the API and the publisher each in its own network namespace with its own address
# (veth pairs on a bridge, 10.77.0.0/24, all made and removed by this script), on the release
# build. Every service binds its own address, never loopback, so a mis-bound socket or a
# hard-coded 127.0.0.1 fails here. Then the fault matrix across hosts, judged by following every
# rendition's media playlist from the root namespace (bench/rendition_watch.py, through the
# packager the API names):
#   - the publisher's link impaired (tc netem in its namespace): 2 % loss with 100 ± 50 ms of
#     jitter for 60 s, then a 4 s outage, then restored (without netem: nftables drops the 2 %
#     and makes the outage, bench/jitter_relay.py adds the jitter);
#   - kill -9 of the transcoder holding the stream (the other one takes over);
#   - kill -9 of the packager serving it, restarted 1 s later.
#   bench/topology.sh            (needs root, iproute2 with tc, ffmpeg, postgresql; about 3 min)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "topology: needs root (network namespaces)" >&2; exit 1; }
for tool in ip tc ffmpeg curl; do command -v $tool >/dev/null || { echo "topology: $tool is missing (apt-get install iproute2 ffmpeg curl)" >&2; exit 1; }; done
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -x "$pgbin/pg_ctl" ]] || { echo "topology: PostgreSQL is missing (apt-get install postgresql)" >&2; exit 1; }
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
bin="$PWD/.build/release"
[[ -x "$bin/storecast-ingest" ]] || { echo "topology: no release build in $bin" >&2; exit 1; }
out="$PWD/bench/out/topology"; rm -rf "$out"; mkdir -p "$out"
marks="$out/marks"; : > "$marks"

declare -A addr=([pg]=10.77.0.10 [ingest]=10.77.0.11 [tx-a]=10.77.0.12 [tx-b]=10.77.0.13 [pk-a]=10.77.0.14 [pk-b]=10.77.0.15
                 [metrics]=10.77.0.16 [api]=10.77.0.17 [pub]=10.77.0.20)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    ip netns exec sc-pg su postgres -c "$pgbin/pg_ctl -D $out/pg/data -m immediate stop" >/dev/null 2>&1 || true
    for h in "${!addr[@]}"; do ip netns del "sc-$h" 2>/dev/null || true; done
    ip link del sc0 2>/dev/null || true
}
trap cleanup EXIT
cleanup
ip link add sc0 type bridge; ip addr add 10.77.0.1/24 dev sc0; ip link set sc0 up
for h in "${!addr[@]}"; do
    ip netns add "sc-$h"
    ip link add "v-$h" type veth peer name eth0 netns "sc-$h"
    ip link set "v-$h" master sc0 up
    ip -n "sc-$h" addr add "${addr[$h]}/24" dev eth0
    ip -n "sc-$h" link set eth0 up; ip -n "sc-$h" link set lo up
    ip -n "sc-$h" route add default via 10.77.0.1
done
echo "topology: ${#addr[@]} hosts on 10.77.0.0/24" >&2

# PostgreSQL on its own host, reachable only over the bridge.
mkdir -p "$out/pg"; chown postgres:postgres "$out/pg"; chmod 755 "$out" "$out/.." 2>/dev/null || true
su postgres -c "$pgbin/initdb -D $out/pg/data -U storecast --auth=trust -E UTF8 --no-sync" >/dev/null
echo "host all all 10.77.0.0/24 trust" >> "$out/pg/data/pg_hba.conf"
ip netns exec sc-pg su postgres -c "$pgbin/pg_ctl -D $out/pg/data -l $out/pg/postgres.log -w -o '-c listen_addresses=${addr[pg]} -k /tmp -c fsync=off' start" >/dev/null
ip netns exec sc-pg su postgres -c "$pgbin/createdb -h ${addr[pg]} -U storecast storecast"
db="host=${addr[pg]} port=5432 user=storecast dbname=storecast connect_timeout=5"
"$bin/storecast" migrate --database "$db" --migrations schemas/migrations >/dev/null
"$bin/storecast" tenant create shop --database "$db" >/dev/null
key=$("$bin/storecast" stream create shop show --database "$db" | awk '/^stream key/ {print $NF}')
# Every service authenticates over ZeroMQ with these keys (inherited through `ip netns exec`).
"$bin/storecast" keys "$out/keys" >/dev/null
export STORECAST_ZMQ_KEYS="$out/keys"
export STORECAST_ADMIN_TOKEN=$(sed -n 's/^STORECAST_ADMIN_TOKEN=//p' "$out/keys/storecast.env")
auth=(-H "Authorization: Bearer $STORECAST_ADMIN_TOKEN")

start() {  # host name command…
    local host=$1 name=$2; shift 2
    ip netns exec "sc-$host" "$@" > "$out/$name.log" 2>&1 &
    pids+=($!)
    eval "pid_${name//-/_}=$!"
}
metrics="tcp://${addr[metrics]}:5603"
start metrics metrics "$bin/storecast-metrics" --subscribe-endpoint "$metrics" --http-host "${addr[metrics]}" --http-port 9100
for pk in pk-a pk-b; do
    start "$pk" "$pk" "$bin/storecast-packager" --pull-endpoint "tcp://${addr[$pk]}:5602" --advertise-endpoint "tcp://${addr[$pk]}:5602" \
        --http-host "${addr[$pk]}" --http-port 8080 --public-url "http://${addr[$pk]}:8080" --database "$db" --node "$pk" --metrics-endpoint "$metrics" \
        --recordings-dir "$out/recordings-$pk" --dvr-dir "$out/dvr-$pk"
done
start ingest ingest "$bin/storecast-ingest" --database "$db" --rtmp-host "${addr[ingest]}" --rtmp-port 1935 --work-endpoint "tcp://${addr[ingest]}:5601" \
    --packager-endpoint "tcp://${addr[pk-a]}:5602" --metrics-endpoint "$metrics" --node ingest
for tx in tx-a tx-b; do
    start "$tx" "$tx" "$bin/storecast-transcoder" --ingest "tcp://${addr[ingest]}:5601" --metrics-endpoint "$metrics" --node "$tx" --preset ultrafast
done
start api api "$bin/storecast-api" --database "$db" --http-host "${addr[api]}" --http-port 8088 --metrics-endpoint "$metrics" \
    --rtmp-base-url "rtmp://${addr[ingest]}:1935" --playback-base-url "http://${addr[pk-a]}:8080"
for _ in $(seq 1 60); do
    [[ $(grep -c "transcoder worker joined" "$out/ingest.log" || true) -ge 2 ]] && curl -sf "http://${addr[api]}:8088/healthz" >/dev/null && break
    sleep 0.5
done
[[ $(grep -c "transcoder worker joined" "$out/ingest.log" || true) -ge 2 ]] || { echo "topology: the workers did not join:" >&2; tail -5 "$out"/*.log >&2; exit 1; }

# The seller, on a host of its own (720p, the field ladder: 720p, 480p, 360p and audio). Where
# the kernel has no netem qdisc, its link gets the jitter from a relay on its own host
# (bench/jitter_relay.py: 100 +/- 50 ms on every chunk it forwards, switched on for the 60 s).
publish_to="rtmp://${addr[ingest]}:1935/live/$key"
netem=yes
if ! ip netns exec sc-pub tc qdisc add dev eth0 root netem delay 1ms 2>/dev/null; then
    netem=no
    start pub jitter-relay /usr/bin/python3 bench/jitter_relay.py 127.0.0.1:1935 "${addr[ingest]}:1935" 100 50
    pid_relay=$pid_jitter_relay
    publish_to="rtmp://127.0.0.1:1935/live/$key"
    sleep 1
    kill -0 "$pid_relay" || { echo "topology: the jitter relay did not start: $(cat "$out/jitter-relay.log")" >&2; exit 1; }
else
    ip netns exec sc-pub tc qdisc del dev eth0 root
fi
start pub publisher ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=sample_rate=44100 \
    -t 200 -c:v libx264 -preset ultrafast -tune zerolatency -g 60 -b:v 2500k -c:a aac -b:a 96k -f flv "$publish_to"
origin=""
for _ in $(seq 1 60); do
    origin=$(curl -sf "${auth[@]}" "http://${addr[api]}:8088/v1/tenants/shop/streams/show/playback" | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("playbackURL") or d.get("url") or "")' 2>/dev/null || true)
    [[ "$origin" == http* ]] && curl -sf "$origin" >/dev/null && break
    sleep 0.5
done
[[ "$origin" == http* ]] || { echo "topology: the API never named a playable origin" >&2; curl -s "${auth[@]}" "http://${addr[api]}:8088/v1/tenants/shop/streams/show/playback" >&2; exit 1; }
echo "topology: playing $origin" >&2
python3 bench/rendition_watch.py "$origin" 150 "$marks" > "$out/watch.json" & watcher=$!
pids+=($watcher)
sleep 8
mark() { echo "$1 $2 $(date +%s.%N)" >> "$marks"; }

# netem where the kernel has it; otherwise the loss and the outage with nftables on the
# publisher's link (real packets dropped; TCP retransmits) and the jitter from the relay, said so
# in the fault's name. Neither: fail, never a figure for a fault that was not made.
if [[ $netem == yes ]] && ip netns exec sc-pub tc qdisc add dev eth0 root netem loss 2% delay 100ms 50ms 2>/dev/null; then
    impairment="netem-2pct-loss-100ms-50ms-jitter-60s-then-4s-outage"  # marks: the loss, then the outage
    echo "topology: netem on the publisher's link: 2 % loss, 100 ± 50 ms, 60 s" >&2
    t=$(date +%s.%N)
    sleep 60
    mark "${impairment%-then-4s-outage}" "$t"
    echo "topology: a 4 s outage, then restored" >&2
    t=$(date +%s.%N)
    ip netns exec sc-pub tc qdisc change dev eth0 root netem loss 100%
    sleep 4
    ip netns exec sc-pub tc qdisc del dev eth0 root
elif command -v nft >/dev/null; then
    impairment="nft-2pct-loss-relay-jitter-100ms-50ms-60s-then-4s-outage"
    echo "topology: this kernel has no netem qdisc: 2 % packet loss with nftables and 100 ± 50 ms of jitter from the relay, 60 s" >&2
    ip netns exec sc-pub nft add table inet impair
    ip netns exec sc-pub nft add chain inet impair out '{ type filter hook output priority 0; }'
    ip netns exec sc-pub nft add chain inet impair in '{ type filter hook input priority 0; }'
    ip netns exec sc-pub nft add rule inet impair out oifname eth0 numgen random mod 100 '<' 2 drop
    ip netns exec sc-pub nft add rule inet impair in iifname eth0 numgen random mod 100 '<' 2 drop
    kill -USR1 "$pid_relay"
    t=$(date +%s.%N)
    sleep 60
    kill -USR2 "$pid_relay"
    mark "${impairment%-then-4s-outage}" "$t"
    echo "topology: a 4 s outage, then restored" >&2
    t=$(date +%s.%N)
    ip netns exec sc-pub nft flush chain inet impair out; ip netns exec sc-pub nft add rule inet impair out oifname eth0 drop
    ip netns exec sc-pub nft flush chain inet impair in; ip netns exec sc-pub nft add rule inet impair in iifname eth0 drop
    sleep 4
    ip netns exec sc-pub nft delete table inet impair
else
    echo "topology: no way to impair the publisher's link: the kernel has no netem qdisc and nft is missing (apt-get install nftables)" >&2
    exit 1
fi
sleep 10
mark "4s-outage-of-the-publishers-link-then-restored" "$t"

holder=$(curl -sf "${auth[@]}" "http://${addr[api]}:8088/v1/leases" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["leases"][0]["workerID"])')
echo "topology: kill -9 of transcoder $holder" >&2
t=$(date +%s.%N)
pidvar="pid_${holder//-/_}"; kill -9 "$(pgrep -P "${!pidvar}" || echo "${!pidvar}")" 2>/dev/null || kill -9 "${!pidvar}"
sleep 12
mark "transcoder-kill-9" "$t"

serving=$(echo "$origin" | sed -E 's#http://([0-9.]+):.*#\1#')
pk=pk-a; [[ "$serving" == "${addr[pk-b]}" ]] && pk=pk-b
echo "topology: kill -9 of packager $pk, restarted 1 s later" >&2
t=$(date +%s.%N)
pidvar="pid_${pk//-/_}"; kill -9 "$(pgrep -P "${!pidvar}" || echo "${!pidvar}")" 2>/dev/null || kill -9 "${!pidvar}"
sleep 1
start "$pk" "$pk-restarted" "$bin/storecast-packager" --pull-endpoint "tcp://${addr[$pk]}:5602" --advertise-endpoint "tcp://${addr[$pk]}:5602" \
    --http-host "${addr[$pk]}" --http-port 8080 --public-url "http://${addr[$pk]}:8080" --database "$db" --node "$pk" --metrics-endpoint "$metrics" \
    --recordings-dir "$out/recordings-$pk" --dvr-dir "$out/dvr-$pk"
sleep 14
mark "packager-kill-9-and-restart" "$t"
wait $watcher || true
cat "$out/watch.json"
# Every service still reports to the collector across hosts.
curl -sf "http://${addr[metrics]}:9100/metrics" | grep -E '^storecast_up\{' | sed 's/^/topology: /' >&2 || { echo "topology: the collector did not answer" >&2; exit 1; }
/usr/bin/python3 - "$out/watch.json" <<'PY'
import json, sys
w = json.load(open(sys.argv[1]))
bad = []
if w["endlist"]: bad.append(f"ENDLIST while live on {w['endlist']}")
# The window after each fault is 8-14 s: a rendition without a part for 20 s never came back.
for fault, gaps in w["faults"].items():
    worst = max(gaps.values()) if gaps else None
    print(f"topology: {fault}: longest time without a new part, worst rendition {worst} s ({gaps})", file=sys.stderr)
    if worst is None or worst >= 20: bad.append(f"{fault}: a rendition never came back ({gaps})")
sys.exit("topology: " + "; ".join(bad) if bad else 0)
PY
