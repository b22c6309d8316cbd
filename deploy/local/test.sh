#!/usr/bin/env bash
# Every Storecast test, including the end-to-end test on real PostgreSQL, ZeroMQ, FFmpeg and
# ffmpeg/GStreamer publishers. Installs what it needs; the tests start their own throwaway
# PostgreSQL. This is what .ci/run calls.
set -euo pipefail
cd "$(dirname "$0")/../.."

deploy/local/install-system-packages.sh --test
deploy/local/test-tools.sh
command -v swift >/dev/null || { echo "Swift 6 is required (https://www.swift.org/install/linux/)" >&2; exit 1; }

start=$(date +%s)
if command -v docker-compose >/dev/null; then
    echo "== checking compose.yaml"
    # The secrets and env file it names are made by `storecast keys` (git-ignored): empty
    # stand-ins in a throwaway project directory let the file itself be checked.
    project=$(mktemp -d)
    mkdir -p "$project/secrets"
    for f in ingest.key transcoder.key packager.key metrics.key api.key ingest.pub packager.pub metrics.pub allowed_keys storecast.env; do
        : > "$project/secrets/$f"
    done
    docker-compose -f compose.yaml --project-directory "$project" config -q
    rm -rf "$project"
fi
echo "== building (the executables, which the end-to-end tests run, and the tests)"
swift build --build-tests
echo "== testing"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log"
passed=$(grep -oE "Test run with [0-9]+ tests" "$log" | tail -1 | grep -oE "[0-9]+" || echo 0)
echo "== fuzzing the parsers of untrusted bytes (libFuzzer, 6 s per target; fuzz/run.sh 600 for a longer run)"
fuzz/run.sh 6
echo "== tests done in $(( $(date +%s) - start )) s"
echo "swift-test: $passed passed, 0 failed"
