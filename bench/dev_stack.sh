# The whole Storecast stack for a benchmark: `storecast dev` from the release build. Source it after
# `cd` to the repository root; it defines functions and nothing runs.
#   start_dev_stack NAME [storecast dev flags…]
# runs it under bench/out/NAME-run (logging to bench/out/NAME-dev.log), waits until it takes
# publishers, and sets $dev (its pid), $database and $token (the admin token). Fails loudly when
# it does not start.
start_dev_stack() {
    local name=$1; shift
    local log="bench/out/$name-dev.log" run="$PWD/bench/out/$name-run"
    mkdir -p bench/out; rm -rf "$run"
    .build/release/storecast dev --run-directory "$run" --https-port 0 --preset veryfast "$@" > "$log" 2>&1 & dev=$!
    for _ in $(seq 1 120); do grep -q "RTMP URL:" "$log" && break; kill -0 $dev 2>/dev/null || break; sleep 0.5; done
    grep -q "RTMP URL:" "$log" || { echo "storecast dev did not start: $log" >&2; tail -20 "$log" >&2; return 1; }
    database=$(awk '/Database:/ {print $2}' "$log")
    token=$(grep -o "Bearer [^']*" "$log" | head -1 | cut -d' ' -f2)
    [[ -n "$database" && -n "$token" ]] || { echo "no database or admin token in $log" >&2; return 1; }
}
