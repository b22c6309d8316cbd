# Shared by the ingest benchmarks: the sample, the publishers and a throwaway Storecast ingest.
# Source it after `cd` to the repository root; it defines functions and nothing runs.
out="bench/out"; mkdir -p "$out"
hz=$(getconf CLK_TCK)
sample="$out/sample-2500k.flv"

make_sample() {  # a 2.5 Mbps 720p30 H.264/AAC FLV, made once
    [[ -f "$sample" ]] && return
    echo "making a 2.5 Mbps 720p30 H.264/AAC sample…" >&2
    ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=sample_rate=44100 -t 120 \
        -c:v libx264 -preset veryfast -b:v 2400k -maxrate 2500k -bufsize 5000k -g 60 -c:a aac -b:a 96k "$sample"
}
cpu_ticks() {  # total utime+stime of the given pids
    local t=0
    for p in "$@"; do [[ -r /proc/$p/stat ]] && t=$((t + $(awk '{print $14 + $15}' /proc/$p/stat))); done
    echo $t
}
cpu_ns() {  # CPU time of the given pids, every thread, in ns (/proc/PID/task/*/schedstat: exact,
           # where utime+stime in /proc/PID/stat counts 10 ms ticks)
    local t=0
    for p in "$@"; do
        for f in /proc/$p/task/*/schedstat; do
            if [[ -r $f ]]; then t=$((t + $(awk '{print $1}' "$f" 2>/dev/null || echo 0))); fi
        done
    done
    echo $t
}
peak_rss_kb() {
    local t=0
    for p in "$@"; do [[ -r /proc/$p/status ]] && t=$((t + $(awk '/VmHWM/ {print $2}' /proc/$p/status))); done
    echo $t
}
read_bytes() {  # bytes the given pids read through syscalls (sockets included): /proc/PID/io rchar
    local t=0
    for p in "$@"; do [[ -r /proc/$p/io ]] && t=$((t + $(awk '/^rchar/ {print $2}' /proc/$p/io))); done
    echo $t
}
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
publish_all() {  # N url-prefix keyfile; sets $pids
    pids=()
    for i in $(seq 1 "$1"); do
        ffmpeg -v error -re -stream_loop -1 -i "$sample" -c copy -f flv "$2$(sed -n "${i}p" "$3")" </dev/null >/dev/null 2>&1 &
        pids+=($!)
    done
}
start_storecast_ingest() {  # N [ingest flags…]; sets $ingest $drain $conninfo, keys in $out/storecast-keys
    if [[ -z "${SKIP_BUILD:-}" ]]; then  # SKIP_BUILD=1: use the release binaries already built
        swift build -c release --product storecast >&2
        swift build -c release --product storecast-ingest >&2
    fi
    pgport=55432; run="$PWD/$out/run"; mkdir -p "$run"
    conninfo=$(.build/release/storecast dev-db start --run-directory "$run" --port $pgport)
    .build/release/storecast migrate --database "$conninfo" >/dev/null
    .build/release/storecast tenant create bench --max-streams 1000 --database "$conninfo" >/dev/null 2>&1 || true
    : > "$out/storecast-keys"
    for i in $(seq 1 "$1"); do
        .build/release/storecast stream create bench "s$i-$(date +%s%N)" --database "$conninfo" | awk '/stream key/ {print $NF}' >> "$out/storecast-keys"
    done
    # CURVE keys for the ingest and the stand-in worker (which claims 64 slots: allowed here).
    rm -rf "$out/zmq-keys"; .build/release/storecast keys "$out/zmq-keys" >/dev/null
    .build/release/storecast-ingest --database "$conninfo" --rtmp-host 127.0.0.1 --rtmp-port 19351 --zmq-keys "$out/zmq-keys" --max-worker-slots 64 \
        --rtmp-max-connections-per-ip 0 --work-endpoint tcp://127.0.0.1:19361 --metrics-endpoint tcp://127.0.0.1:19362 --log-level warning "${@:2}" & ingest=$!
    python3 bench/zmq_drain.py tcp://127.0.0.1:19361 "$out/zmq-keys" & drain=$!
    sleep 2
}
stop_storecast_ingest() {
    kill $ingest $drain; wait $ingest $drain 2>/dev/null || true
    .build/release/storecast dev-db stop --run-directory "$PWD/$out/run" --port 55432 >/dev/null
}
