#!/usr/bin/env bash
# Builds the libFuzzer binary for Storecast's parsers and runs each target for a bounded time.
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET…]     (default 10 s, every target)
# Inputs that crashed are kept in fuzz/regressions/<target>/ and replayed first on every run;
# new crashes land there too (commit them with the fix). Seeds come from fuzz/corpus/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-10}"; shift || true
targets=("$@")
((${#targets[@]})) || targets=(chunk amf0 flv avc hevc aac wire handshake path httphead retryafter mediapath acceptencoding)

build=".build/fuzz"
mkdir -p "$build/src"
rm -f "$build/src/"*.swift
# One module: the pure sources with their inter-module imports removed.
for m in BinaryCoding RTMP MediaFormats StorecastWire; do
    for f in Sources/$m/*.swift; do
        sed -E '/^(@testable )?import (BinaryCoding|RTMP|MediaFormats|StorecastWire)$/d' "$f" > "$build/src/${m}_$(basename "$f")"
    done
done
# The one path builder (StorecastRuntime; no imports): names from the wire become paths only here.
cp Sources/StorecastRuntime/ContainedPath.swift "$build/src/StorecastRuntime_ContainedPath.swift"
# What follows a webhook attempt, with the Retry-After reader (Foundation only): a receiver's answer is untrusted.
cp Sources/StorecastRuntime/WebhookRetryPolicy.swift "$build/src/StorecastRuntime_WebhookRetryPolicy.swift"
# The packager's HTTP/1.1 request-head reader (no imports): the wire-level hot path's parser of untrusted bytes.
cp Sources/Packager/HTTP1RequestHead.swift "$build/src/Packager_HTTP1RequestHead.swift"
# Its readers of a media request's path and file name (no imports), which every answer of the hot paths runs.
cp Sources/Packager/MediaPath.swift "$build/src/Packager_MediaPath.swift"
cp Sources/Packager/PlaylistURIs.swift "$build/src/Packager_PlaylistURIs.swift"
# Its reader of a client's Accept-Encoding (no imports): whether that client's playlists go in gzip.
cp Sources/Packager/AcceptEncoding.swift "$build/src/Packager_AcceptEncoding.swift"
echo "fuzz: building ($(ls "$build/src" | wc -l) files, -sanitize=fuzzer,address)"
swiftc -sanitize=fuzzer,address -parse-as-library -swift-version 6 -O -module-name StorecastFuzz \
    "$build/src/"*.swift fuzz/FuzzTargets.swift -o "$build/storecast-fuzz" 2>&1 | grep -v "Cannot export local symbol" || true
[[ -x "$build/storecast-fuzz" ]] || { echo "fuzz: build failed" >&2; exit 1; }

# Allocations Foundation keeps for the process's life are not leaks of ours (fuzz/lsan.supp).
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
status=0
for t in "${targets[@]}"; do
    mkdir -p "fuzz/regressions/$t" "$build/corpus/$t"
    cp -n fuzz/corpus/"$t"/* "$build/corpus/$t/" 2>/dev/null || true
    if compgen -G "fuzz/regressions/$t/*" >/dev/null; then
        STORECAST_FUZZ_TARGET=$t "$build/storecast-fuzz" fuzz/regressions/"$t"/* >"$build/$t-regressions.log" 2>&1 \
            || { echo "fuzz: $t: a committed regression input crashes again (see $build/$t-regressions.log)"; status=1; continue; }
    fi
    if STORECAST_FUZZ_TARGET=$t "$build/storecast-fuzz" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
        -artifact_prefix="fuzz/regressions/$t/" "$build/corpus/$t" >"$build/$t.log" 2>&1; then
        echo "fuzz: $t: $(grep -o 'Done [0-9]* runs' "$build/$t.log" | tail -1) in ${seconds}s, no crash"
    else
        echo "fuzz: $t: CRASH, input kept in fuzz/regressions/$t/ (log: $build/$t.log)"
        tail -30 "$build/$t.log"
        status=1
    fi
done
exit $status
