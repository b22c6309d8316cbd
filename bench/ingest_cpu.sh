#!/usr/bin/env bash
# Ingest CPU per ingested Mbps and memory per publisher: storecast-ingest (release build, one
# ZeroMQ consumer draining every unit) against nginx + libnginx-mod-rtmp (HLS off), in one run,
# with the same N ffmpeg `-c copy` publishers of a 2.5 Mbps H.264/AAC file.
#   bench/ingest_cpu.sh [PUBLISHERS] [SECONDS]       (default 8 publishers, 60 s)
# ROUNDS=K (default 1) alternates nginx and storecast K times and reports each round and the
# medians: on a shared virtual machine either side's figure moves by ±15 % from one minute to
# the next, so one round each can land either way.
# Storecast runs once at its default read pacing and once per value in PACINGS (milliseconds,
# default "0 10 50"; PACINGS= for none), in the first round.
# Needs: nginx libnginx-mod-rtmp ffmpeg postgresql (apt), pyzmq (pip). Prints a Markdown table.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-8}"; SECS="${2:-60}"; ROUNDS="${ROUNDS:-1}"
source bench/common.sh
make_sample

measure() {  # pids…  (after a 5 s warm-up, over SECS): "CPU-milliseconds bytes-read"
    sleep 5
    local a; a=$(cpu_ns "$@")
    local ra; ra=$(read_bytes "$@")
    sleep "$SECS"
    local b; b=$(cpu_ns "$@")
    local rb; rb=$(read_bytes "$@")
    echo "$(( (b - a) / 1000000 )) $(( rb - ra ))"
}

# --- nginx-rtmp
pkill -f "nginx -c $PWD/$out/nginx.conf" 2>/dev/null || true  # a leftover from an interrupted run
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
nginx_play_ms=0
nginx_round() {  # round; sets nginx_ms nginx_play_ms alive_nginx nginx_rss
    nginx -c "$PWD/$out/nginx.conf" & nginx_master=$!
    sleep 1
    nginx_pids=$(pgrep -P $nginx_master | tr '\n' ' ')
    publish_all "$N" "rtmp://127.0.0.1:19350/live/" "$out/nginx-keys"
    read -r nginx_ms _ < <(measure $nginx_master $nginx_pids)
    alive_nginx=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive_nginx=$((alive_nginx + 1)); done
    nginx_rss=$(peak_rss_kb $nginx_master $nginx_pids)
    # The same again with one RTMP player per stream, so nginx forwards every byte once, as
    # storecast-ingest does to its ZeroMQ consumer.
    # (Skipped above 16 publishers: N players on top of N publishers overload this 2-core machine.)
    players=()
    if (( N <= 16 && $1 == 1 )); then
        for i in $(seq 1 "$N"); do
            ffmpeg -v error -i "rtmp://127.0.0.1:19350/live/bench$i" -c copy -f null - </dev/null >/dev/null 2>&1 & players+=($!)
        done
        read -r nginx_play_ms _ < <(measure $nginx_master $nginx_pids)
    fi
    kill "${pids[@]}" "${players[@]}" 2>/dev/null; wait "${pids[@]}" "${players[@]}" 2>/dev/null || true
    kill $nginx_master; wait $nginx_master 2>/dev/null || true
}

# --- storecast-ingest: with its default read pacing, then with each pacing in PACINGS (ms)
storecast_run() {  # ingest flags…; sets ingest_ms ingest_bytes alive_ingest ingest_rss
    start_storecast_ingest "$N" "$@"
    publish_all "$N" "rtmp://127.0.0.1:19351/live/" "$out/storecast-keys"
    read -r ingest_ms ingest_bytes < <(measure $ingest)
    alive_ingest=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive_ingest=$((alive_ingest + 1)); done
    ingest_rss=$(peak_rss_kb $ingest)
    kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
    stop_storecast_ingest
}
sweep=""; rounds=""
for round in $(seq 1 "$ROUNDS"); do
    nginx_round "$round"
    if (( round == 1 )); then
        first_nginx_rss=$nginx_rss
        for pacing in ${PACINGS-0 10 50}; do
            storecast_run --read-pacing-ms "$pacing"; export SKIP_BUILD=1
            sweep="$sweep $pacing:$ingest_ms"
        done
    fi
    storecast_run; export SKIP_BUILD=1
    rounds="$rounds $nginx_ms:$ingest_ms"
    echo "round $round: nginx $nginx_ms ms, storecast $ingest_ms ms of CPU in $SECS s" >&2
done
nginx_rss=$first_nginx_rss

mbps=$(python3 -c "print(round($N * 2.5, 1))")
python3 - "$N" "$SECS" "$mbps" "$nginx_ms" "$nginx_play_ms" "$ingest_ms" "$nginx_rss" "$ingest_rss" "$ingest_bytes" "$alive_nginx" "$alive_ingest" "$sweep" "$rounds" <<'PY'
import statistics, sys
n, secs, mbps, nginx_ms, nginx_play_ms, ingest_ms, nginx_rss, ingest_rss, ingest_b, alive_nginx, alive_ingest = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), *map(int, sys.argv[4:12])
sweep = [tuple(map(int, x.split(":"))) for x in sys.argv[12].split()]
rounds = [tuple(map(int, x.split(":"))) for x in sys.argv[13].split()]
# The table shows the medians over the rounds (with one round, that round).
nginx_ms = statistics.median(a for a, _ in rounds)
ingest_ms = statistics.median(b for _, b in rounds)
# CPU per nominal Mbps. rchar (bytes read through read(2)) checks that storecast really took in
# the nominal rate; nginx reads with recv(2), which rchar does not count, so for it the check is
# that every publisher was still running at the end.
per = lambda ms: ms / secs / mbps
r = lambda a, b: a / max(b, 1e-9)
print(f"check: storecast read {ingest_b * 8 / 1e6 / secs:.1f} Mbps from its sockets (nominal {mbps}); publishers alive at the end: nginx {alive_nginx}/{n}, storecast {alive_ingest}/{n}")
nginx, ingest = per(nginx_ms), per(ingest_ms)
play = per(nginx_play_ms) if nginx_play_ms else None
print("| publishers | ingested Mbps | nginx-rtmp, no player | nginx-rtmp, 1 player per stream | storecast-ingest, 1 ZeroMQ consumer | storecast / nginx (no player) | storecast / nginx (1 player) | peak RSS per publisher nginx / storecast |")
print("|---|---|---|---|---|---|---|---|")
play_text = f"{play:.2f}" if play else "not run"
play_ratio = f"{r(ingest, play):.2f}x" if play else "—"
print(f"| {n} | {mbps} | {nginx:.2f} | {play_text} | {ingest:.2f} | **{r(ingest, nginx):.2f}x** | {play_ratio} | {nginx_rss/n/1024:.1f} MiB / {ingest_rss/n/1024:.1f} MiB |")
print("(CPU figures are ms of CPU per second per ingested Mbps; storecast at its default read pacing" + (f"; medians of {len(rounds)} alternating rounds)" if len(rounds) > 1 else ")"))
if len(rounds) > 1:
    print()
    print("| round | nginx-rtmp, no player | storecast-ingest | storecast / nginx |")
    print("|---|---|---|---|")
    for i, (a, b) in enumerate(rounds, 1):
        print(f"| {i} | {per(a):.2f} | {per(b):.2f} | {r(per(b), per(a)):.2f}x |")
if sweep:
    print()
    print("| storecast read pacing | storecast-ingest | / nginx (no player) | / nginx (1 player) |")
    print("|---|---|---|---|")
    for pacing, ms in sweep:
        label = f"{pacing} ms" if pacing else "0 (read as bytes arrive)"
        print(f"| {label} | {per(ms):.2f} | {r(per(ms), nginx):.2f}x | {r(per(ms), play):.2f}x |" if play else f"| {label} | {per(ms):.2f} | {r(per(ms), nginx):.2f}x | — |")
PY
