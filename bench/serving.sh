#!/usr/bin/env bash
# Serving throughput of one cached part (issue 18): the Storecast packager (release build,
# `storecast dev`, a live 360p show) against nginx serving the same bytes as a static file, side
# by side in one run, over HTTP/1.1 keep-alive (wrk) and over HTTP/2 with TLS (h2load), nginx at
# its own defaults and at settings matched to ours; then 1,000 players blocked on the live edge
# (bench/blocking_fanout.py; nginx cannot hold a request for a part that does not exist yet).
# Also the packager's own three paths to the same bytes in one process: the router, the hot path
# in front of it, and the hot path on the wire (HTTP1MediaFastPath); and HTTP/2's ceiling on the
# packager's libraries (bench/h2ceiling, built here).
# The packager's per-IP connection cap (256) is lifted: every client here is 127.0.0.1, as a CDN's
# few edge addresses are in front of an origin, and nginx has no such cap by default.
#   bench/serving.sh [SECONDS]          (default 10 s per measurement)
# ROUNDS=K (default 3) repeats the side-by-side K times, each round on a fresh part, alternating
# the servers, and reports every round's ratios and their medians: on this shared machine a
# server's figure moves by a quarter from one minute to the next, so one round can land either way.
# Each measurement also counts the CPU time the server's own processes spent over it (user and
# system, every thread, from /proc), as CPU per answer: what serving a viewer costs an operator,
# which the load tool, on the same two cores, does not let a rate of answers show alone.
# Before each measurement the same load runs unmeasured for WARMUP seconds (default 3; 0 skips
# it), for every server alike: a server's first load after its start grows its heap and fills its
# caches (the packager's first HTTP/2 round cost it 12–31 % more CPU an answer than the
# next two, in each of four runs without it), which a server that runs for hours has long done.
# Needs: nginx wrk nghttp2-client (h2load) ffmpeg openssl postgresql (apt). SKIP_BUILD=1 reuses
# .build/release. Prints each tool's summary and a table of ratios; fails when a part is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"
ROUNDS="${ROUNDS:-3}"
WARMUP="${WARMUP:-3}"
for tool in nginx wrk h2load ffmpeg openssl curl python3; do
    command -v "$tool" >/dev/null || { echo "bench/serving.sh: $tool is missing (apt install nginx wrk nghttp2-client ffmpeg openssl curl); no figure is printed" >&2; exit 1; }
done
out="$PWD/bench/out"; mkdir -p "$out"
ulimit -n "$(ulimit -Hn)"  # 1,000 connections need more than the usual 1,024 descriptors
if [[ -z "${SKIP_BUILD:-}" ]]; then swift build -c release >&2; fi
[[ -x .build/release/storecast ]] || { echo "bench/serving.sh: .build/release/storecast is missing (swift build -c release)" >&2; exit 1; }

run="$out/serving-run"; rm -rf "$run"
.build/release/storecast dev --run-directory "$run" --postgres-port 55436 --rtmp-port 19356 --http-port 18083 --https-port 18483 \
    --api-port 18094 --metrics-port 19103 --zmq-base-port 19395 --rungs 360p --preset veryfast \
    --http-max-connections-per-ip 0 > "$out/serving-dev.log" 2>&1 & dev=$!
nginx_conf=""
cleanup() {
    [[ -n "$nginx_conf" ]] && nginx -c "$nginx_conf" -s stop 2>/dev/null || true
    kill "${pub:-}" "${ceiling:-}" 2>/dev/null || true
    kill $dev 2>/dev/null || true; wait $dev 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 240); do grep -q "RTMP URL:" "$out/serving-dev.log" && break; kill -0 $dev 2>/dev/null || break; sleep 0.5; done
rtmp=$(awk '/RTMP URL:/ {print $3}' "$out/serving-dev.log")
[[ -n "$rtmp" ]] || { echo "bench/serving.sh: storecast dev did not start:" >&2; tail -20 "$out/serving-dev.log" >&2; exit 1; }
ffmpeg -v error -re -f lavfi -i testsrc2=size=854x480:rate=30 -f lavfi -i sine=sample_rate=44100 -t 600 -c:v libx264 -preset ultrafast \
    -tune zerolatency -g 60 -c:a aac -f flv "$rtmp" </dev/null >/dev/null 2>&1 & pub=$!
base="http://127.0.0.1:18083/live/demo/demo-show"
for _ in $(seq 1 60); do curl -sf "$base/master.m3u8" >/dev/null && break; sleep 0.5; done
variant=$(curl -sf "$base/master.m3u8" | grep -m1 -o '^[0-9a-z]*/360p/index.m3u8') \
    || { echo "bench/serving.sh: the show never went live" >&2; exit 1; }
packager=$(pgrep -P $dev -x storecast-packa) || { echo "bench/serving.sh: no packager process under storecast dev ($dev); no figure is printed" >&2; exit 1; }
sleep 3
media="$base/${variant%/index.m3u8}"
static="$out/serving-static"; rm -rf "$static"; mkdir -p "$static"
# Each round's part: the newest complete one, which stays in the 20 s live window for the
# packager's measurements; nginx and h2ceiling serve the same bytes from a file.
fresh_part() {
    part=$(curl -sf "$media/index.m3u8" | grep -o 'URI="part-[0-9]*\.[0-9]*\.m4s"' | tail -1 | tr -d '"' | sed 's/URI=//')
    curl -sf "$media/$part" -o "$static/part.m4s"
    curl -sf -o /dev/null "$media/$part?via=router"  # the playback access, cached for the hot paths
    bytes=$(stat -c %s "$static/part.m4s")
    echo "round $1: part $part, $bytes bytes" >&2
}

tls="$run/tls"
write_nginx() {  # $1: defaults|matched
    nginx_conf="$out/serving-nginx-$1.conf"
    local workers="" keepalive=""
    # Matched: as many workers as the packager's event loops (one per core) and its 10 s idle
    # timeout; defaults: nginx's compiled-in ones (1 worker, 75 s keep-alive, 512 connections per
    # worker raised to hold the 1,000 connections of the run).
    if [[ $1 == matched ]]; then workers="worker_processes $(nproc);"; keepalive="keepalive_timeout 10s; keepalive_requests 1000000;"; fi
    cat > "$nginx_conf" <<NGINX
$workers
daemon off;
error_log $out/serving-nginx-error.log;
pid $out/serving-nginx.pid;
events { worker_connections 4096; }
http {
    access_log off;
    $keepalive
    server { listen 127.0.0.1:18093; location / { root $static; } }
    server { listen 127.0.0.1:18493 ssl http2; ssl_certificate $tls/tls-certificate.pem; ssl_certificate_key $tls/tls-key.pem;
             location / { root $static; } }
}
NGINX
    nginx -c "$nginx_conf" & nginx_pid=$!
    for _ in $(seq 1 40); do curl -sf -o /dev/null "http://127.0.0.1:18093/part.m4s" && break; sleep 0.25; done
    curl -sf -o /dev/null "http://127.0.0.1:18093/part.m4s" || { echo "bench/serving.sh: nginx ($1) did not start" >&2; exit 1; }
}
stop_nginx() { kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; nginx_conf=""; }

# The CPU time (user and system, in clock ticks, every thread) these processes have spent so far.
cpu_ticks() {
    local t=0 p stat fields
    for p in "$@"; do
        stat=$(cat "/proc/$p/stat" 2>/dev/null) || { echo "bench/serving.sh: server process $p is gone; no figure is printed" >&2; return 1; }
        read -ra fields <<< "${stat##*) }"  # from field 3 on (the name, field 2, may hold spaces)
        t=$((t + fields[11] + fields[12]))   # utime (14) and stime (15)
    done
    echo "$t"
}
rps_wrk() { awk '/Requests\/sec/ {print $2}' "$1"; }
rps_h2() { awk '/finished in/ {print $4}' "$1"; }
h2_all_2xx() { grep -q " 0 4xx, 0 5xx" "$1"; }  # $1: h2load's output
# Runs a load tool (its output to $3) against a server whose processes are $1, and writes to
# $out/serving-cpu-$2.txt the CPU ticks they spent over it and the milliseconds it took.
with_cpu() {  # $1 the server's process ids, $2 label, $3 the tool's output file, then the tool and its arguments
    local pids=$1 label=$2 output=$3 before after start
    shift 3
    before=$(cpu_ticks $pids); start=$(date +%s%3N)
    "$@" > "$output" 2>&1
    after=$(cpu_ticks $pids)
    echo "$((after - before)) $(( $(date +%s%3N) - start ))" > "$out/serving-cpu-$label.txt"
}
# The unmeasured load before a measurement (WARMUP seconds of the same tool and URL).
warm_up() {  # the load tool and its arguments, without its duration; h2load's -D or wrk's -d is added
    (( WARMUP > 0 )) || return 0
    case $1 in
        wrk) "$@" -d"${WARMUP}s" > /dev/null 2>&1 ;;
        h2load) "$@" -D "$WARMUP" > /dev/null 2>&1 ;;
    esac
}
measure() {  # $1 label, $2 http url, $3 https url, $4 the server's process ids
    warm_up wrk -t2 -c1000 "$2"
    with_cpu "$4" "wrk-$1" "$out/serving-wrk-$1.txt" wrk -t2 -c1000 -d"${SECS}s" --latency "$2"
    if grep -q "Socket errors" "$out/serving-wrk-$1.txt"; then echo "bench/serving.sh: $1: wrk saw errors (a refused connection counts fewer clients):" >&2; grep "Socket errors" "$out/serving-wrk-$1.txt" >&2; fi
    # An answer other than the part (a 404 once it left memory, say) is not a figure of serving it.
    if grep -q "Non-2xx" "$out/serving-wrk-$1.txt"; then echo "bench/serving.sh: $1: answers other than 2xx; no figure is printed:" >&2; grep "Non-2xx" "$out/serving-wrk-$1.txt" >&2; exit 1; fi
    warm_up h2load -c100 -m10 -t2 "$3"
    with_cpu "$4" "h2load-$1" "$out/serving-h2load-$1.txt" h2load -c100 -m10 -t2 -D "$SECS" "$3"
    grep -q " 0 failed, 0 errored" "$out/serving-h2load-$1.txt" || echo "($1: h2load saw failures, see $out/serving-h2load-$1.txt)" >&2
    h2_all_2xx "$out/serving-h2load-$1.txt" || { echo "bench/serving.sh: $1: h2load got 4xx or 5xx answers; no figure is printed" >&2; exit 1; }
    echo "$1: HTTP/1.1 $(rps_wrk "$out/serving-wrk-$1.txt") req/s, HTTP/2 $(rps_h2 "$out/serving-h2load-$1.txt") req/s" >&2
}
# HTTP/2's ceiling on the packager's own libraries (bench/h2ceiling: swift-nio-http2 on
# swift-nio-ssl, nothing of Storecast's or Hummingbird's), the same part and certificate, in each
# round: NIO's usual server (a child channel per stream) and frames answered on the connection.
# Built every time (SKIP_BUILD is for the packager), from the same local copies of swift-nio,
# swift-nio-ssl and swift-nio-http2 as the packager's.
swift build -c release --package-path bench/h2ceiling >&2 || { echo "bench/serving.sh: bench/h2ceiling did not build; no figure is printed" >&2; exit 1; }
ceiling_bin=bench/h2ceiling/.build/release/h2ceiling
# Twice this server gave no sign of life within 30 s and an empty log (not reproduced by hand,
# where it starts in 0.1 s): it is started once more, then the bench fails, with its exit status.
start_ceiling() {  # $1 mode, $2 label; sets ceiling
    local attempt status
    for attempt in 1 2; do
        "$ceiling_bin" 18495 "$tls/tls-certificate.pem" "$tls/tls-key.pem" "$static/part.m4s" "$1" "$(nproc)" > "$out/serving-$2.log" 2>&1 & ceiling=$!
        for _ in $(seq 1 120); do grep -q listening "$out/serving-$2.log" && return 0; kill -0 $ceiling 2>/dev/null || break; sleep 0.25; done
        kill $ceiling 2>/dev/null || true; status=0; wait $ceiling 2>/dev/null || status=$?; ceiling=""
        echo "bench/serving.sh: h2ceiling ($1) did not start (attempt $attempt, exit status $status):" >&2; cat "$out/serving-$2.log" >&2
    done
    return 1
}
# The packager's own work for the live show (taking in and packaging its parts), with no player:
# subtracted from its CPU under load, which nginx and h2ceiling do not have.
with_cpu "$packager" idle-packager /dev/null sleep 5
for round in $(seq 1 "$ROUNDS"); do
    fresh_part "$round"
    echo "Storecast packager (from memory)" >&2
    measure "storecast-$round" "$media/$part" "https://127.0.0.1:18483/${media#http://127.0.0.1:18083/}/$part" "$packager"
    for mode in defaults matched; do
        echo "nginx at $mode (static file)" >&2
        write_nginx "$mode"
        measure "nginx-$mode-$round" "http://127.0.0.1:18093/part.m4s" "https://127.0.0.1:18493/part.m4s" "$nginx_pid $(pgrep -P "$nginx_pid" | tr '\n' ' ')"
        stop_nginx
    done
    for mode in multiplexer frames; do
        label="ceiling-$mode-$round"
        start_ceiling "$mode" "$label" || exit 1
        warm_up h2load -c100 -m10 -t2 "https://127.0.0.1:18495/part.m4s"
        with_cpu "$ceiling" "h2load-$label" "$out/serving-h2load-$label.txt" h2load -c100 -m10 -t2 -D "$SECS" "https://127.0.0.1:18495/part.m4s"
        kill $ceiling; wait $ceiling 2>/dev/null || true; ceiling=""
        grep -q " 0 failed, 0 errored" "$out/serving-h2load-$label.txt" && h2_all_2xx "$out/serving-h2load-$label.txt" \
            || { echo "bench/serving.sh: h2ceiling ($mode): h2load saw failures or non-2xx; no figure is printed" >&2; cat "$out/serving-h2load-$label.txt" >&2; exit 1; }
        echo "h2ceiling $mode: HTTP/2 $(rps_h2 "$out/serving-h2load-$label.txt") req/s" >&2
    done
done
# The packager's three ways to the same bytes, in this one process (HTTP/1.1, wrk -c1000, 5 s each,
# a fresh part each time): the router (a query makes the URL the router's), the hot path in front
# of the router (a User-Agent with a non-ASCII byte makes the wire-level reader hand the request
# on: HTTP1RequestHead), and the hot path on the wire.
paths=""
for path in router handed-on wire; do
    fresh=$(curl -sf "$media/index.m3u8" | grep -o 'URI="part-[0-9]*\.[0-9]*\.m4s"' | tail -1 | tr -d '"' | sed 's/URI=//')
    curl -sf -o /dev/null "$media/$fresh?via=router"  # the playback access, cached for the hot paths
    case $path in
        router) wrk -t2 -c1000 -d5s "$media/$fresh?via=router" > "$out/serving-path-$path.txt" 2>&1 ;;
        handed-on) wrk -t2 -c1000 -d5s -H $'User-Agent: caf\xc3\xa9' "$media/$fresh" > "$out/serving-path-$path.txt" 2>&1 ;;
        wire) wrk -t2 -c1000 -d5s "$media/$fresh" > "$out/serving-path-$path.txt" 2>&1 ;;
    esac
    if grep -q "Non-2xx" "$out/serving-path-$path.txt"; then echo "bench/serving.sh: the $path path answered other than 2xx; no figure is printed" >&2; exit 1; fi
    paths="$paths $path=$(rps_wrk "$out/serving-path-$path.txt")"
done
echo "packager paths:$paths" >&2

echo "Storecast: 1,000 players blocked on the live edge (20 s)" >&2
python3 bench/blocking_fanout.py "$media/index.m3u8" 1000 20 | tee "$out/serving-fanout.json"

python3 - "$out" "$ROUNDS" "$paths" <<'PY'
import os, re, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
tick = os.sysconf("SC_CLK_TCK")
def spent(label):
    """CPU seconds a server spent over one measurement, and the measurement's seconds."""
    ticks, ms = (int(x) for x in open(f"{out}/serving-cpu-{label}.txt").read().split())
    if ticks < 0 or ms <= 0:
        sys.exit(f"no CPU figure for {label} (ticks {ticks}, {ms} ms)")
    return ticks / tick, ms / 1000
idle_cpu, idle_seconds = spent("idle-packager")
idle_rate = idle_cpu / idle_seconds  # the packager's own work for the live show, per second
def cpu(tool, label):
    """The server's CPU time per answer of one measurement, in microseconds (the packager's
    without its own work for the live show)."""
    text = open(f"{out}/serving-{tool}-{label}.txt").read()
    m = re.search(r"(\d+) requests in", text) if tool == "wrk" else re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", text)
    seconds, elapsed = spent(f"{tool}-{label}")
    if label.startswith("storecast-"):
        seconds -= idle_rate * elapsed
    if not m or int(m.group(1)) == 0 or seconds <= 0:
        sys.exit(f"no CPU figure for {tool} {label} (answers {m and m.group(1)}, CPU {seconds:.2f} s)")
    return seconds / int(m.group(1)) * 1e6
def wrk(label):
    m = re.search(r"Requests/sec:\s+([\d.]+)", open(f"{out}/serving-wrk-{label}.txt").read())
    if not m: sys.exit(f"no wrk figure for {label}")
    return float(m.group(1))
def tail(label):
    t = open(f"{out}/serving-wrk-{label}.txt").read()
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", t)
    if not m: sys.exit(f"no wrk p99 for {label}")
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    late = re.search(r"timeout (\d+)", t)
    return p99, int(late.group(1)) if late else 0
def h2(label):
    m = re.search(r"finished in [\d.]+s, ([\d.]+) req/s", open(f"{out}/serving-h2load-{label}.txt").read())
    if not m: sys.exit(f"no h2load figure for {label}")
    return float(m.group(1))
med = statistics.median
R = range(1, rounds + 1)
s1, d1, m1 = ([wrk(f"{k}-{r}") for r in R] for k in ("storecast", "nginx-defaults", "nginx-matched"))
s2, d2, m2, cm, cf = ([h2(f"{k}-{r}") for r in R] for k in ("storecast", "nginx-defaults", "nginx-matched", "ceiling-multiplexer", "ceiling-frames"))
# Every figure is read before any is printed: a missing one prints nothing.
c1 = {k: [cpu("wrk", f"{k}-{r}") for r in R] for k in ("storecast", "nginx-defaults", "nginx-matched")}
c2 = {k: [cpu("h2load", f"{k}-{r}") for r in R] for k in ("storecast", "nginx-defaults", "nginx-matched", "ceiling-multiplexer", "ceiling-frames")}
(sp, st), (dp, dt), (mp, mt) = tail(f"storecast-{rounds}"), tail(f"nginx-defaults-{rounds}"), tail(f"nginx-matched-{rounds}")
paths = dict(p.split("=") for p in sys.argv[3].split())
if set(paths) != {"router", "handed-on", "wire"} or not all(paths.values()):
    sys.exit(f"missing a figure of the packager's paths: {paths}")
r, h, w = (float(paths[k]) for k in ("router", "handed-on", "wire"))
print(f"| one part, {rounds} rounds, req/s (round figures, then the median of each column) | Storecast | nginx defaults | Storecast / nginx | nginx matched | Storecast / nginx |")
print("|---|---|---|---|---|---|")
for name, s, d, m in (("HTTP/1.1 keep-alive, wrk 1,000 connections", s1, d1, m1), ("HTTP/2 over TLS, h2load 100 connections x 10 streams", s2, d2, m2)):
    for i in range(rounds):
        print(f"| {name}, round {i + 1} | {s[i]:,.0f} | {d[i]:,.0f} | {s[i]/d[i]:.2f}x | {m[i]:,.0f} | {s[i]/m[i]:.2f}x |")
    print(f"| **{name}, median** | {med(s):,.0f} | {med(d):,.0f} | **{med([a/b for a, b in zip(s, d)]):.2f}x** | {med(m):,.0f} | **{med([a/b for a, b in zip(s, m)]):.2f}x** |")
print()
print("| HTTP/2 over TLS, h2load 100 x 10, the same part | req/s, each round | / nginx matched, median | Storecast / it, median |")
print("|---|---|---|---|")
def row(name, xs):
    print(f"| {name} | {' / '.join(f'{x:,.0f}' for x in xs)} | {med([a/b for a, b in zip(xs, m2)]):.2f}x | {med([a/b for a, b in zip(s2, xs)]):.2f}x |")
row("Storecast packager", s2)
row("swift-nio-http2, a child channel per stream (bench/h2ceiling multiplexer)", cm)
row("swift-nio-http2, frames on the connection (bench/h2ceiling frames)", cf)
row("nginx matched", m2)
print()
print(f"The packager's own work for the live show, with no player: {idle_rate * 1000:.0f} ms of CPU a second, taken out of its figures below.")
print()
print("| CPU per answer, the server's own processes (µs, each round) | HTTP/1.1, wrk | / nginx matched's, median | HTTP/2, h2load | / nginx matched's, median |")
print("|---|---|---|---|---|")
def us(xs): return " / ".join(f"{x:.1f}" for x in xs)
def vs(xs, ref): return f"{med([a/b for a, b in zip(xs, ref)]):.2f}x"
for name, k in (("Storecast packager", "storecast"), ("nginx defaults", "nginx-defaults"), ("nginx matched", "nginx-matched"),
                ("bench/h2ceiling multiplexer", "ceiling-multiplexer"), ("bench/h2ceiling frames", "ceiling-frames")):
    h1 = (us(c1[k]), vs(c1[k], c1["nginx-matched"])) if k in c1 else ("", "")
    print(f"| {name} | {h1[0]} | {h1[1]} | {us(c2[k])} | {vs(c2[k], c2['nginx-matched'])} |")
print()
print("| HTTP/1.1 tail, wrk 1,000 connections, last round | Storecast | nginx defaults | nginx matched |")
print("|---|---|---|---|")
print(f"| p99 latency / answers over 2 s (wrk's timeouts) | {sp:,.0f} ms / {st} | {dp:,.0f} ms / {dt} | {mp:,.0f} ms / {mt} |")
print()
print("| the packager's paths, HTTP/1.1, wrk 1,000 connections, 5 s | router | hot path, handed on | hot path on the wire |")
print("|---|---|---|---|")
print(f"| req/s (and against the router) | {r:,.0f} | {h:,.0f} ({h/r:.2f}x) | {w:,.0f} ({w/r:.2f}x) |")
PY
