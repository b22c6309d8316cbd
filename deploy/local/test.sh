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
built=$(date +%s)
swift build --build-tests
echo "== built in $(( $(date +%s) - built )) s"
echo "== testing"
log=$(mktemp); side_log=$(mktemp); fuzz_log=$(mktemp); side_status_file=$(mktemp)
trap 'rm -f "$log" "$side_log" "$fuzz_log" "$side_status_file"' EXIT
if (( $# )); then
    # A chosen subset (arguments as for swift test): run as asked, nothing beside it.
    swift test --skip-build --no-parallel "$@" 2>&1 | tee "$log"
    passed=$(grep -oE "Test run with [0-9]+ tests" "$log" | tail -1 | grep -oE "[0-9]+" || echo 0)
    echo "swift-test: $passed passed, 0 failed"
    exit 0
fi
# Two test processes from the same test binary, side by side (the media suites leave about half
# of the two cores idle: 40-55 % busy, sampled with vmstat):
# - the main one: the suites whose figures are timing (latency, stalls, freezes, the cards' sync,
#   slates, the transcoder pool's load) and every browser test;
# - beside it, at a lower CPU priority, which the publishers, databases and services it starts
#   inherit: the suites without media (PostgreSQL, HTTP, Schemathesis, webhooks), the hostile-peer
#   tests that publish nothing (not the deadline test: its timing is tight, sub-second), and the
#   media suites that judge what was made, not when (the ladder's contents, codecs, recordings,
#   DVR, publisher interop, timelines, access, the control API's effects), each with waits of
#   seconds. The main suites' timing stays theirs; these use what they leave idle.
# (WebhookTests once got a show's events out of order here: the dispatcher then sent two of an
# endpoint's deliveries side by side, which it no longer does.) The parsers' fuzzing runs after
# them, at the lowest priority (it is bounded in wall time; an idle core gives it its runs).
# The side process takes its ports from a range below the kernel's ephemeral ones (where the
# main process gets its own), so the two never start servers on one port.
side='APIContractTests|TenantAPITests|PostgresCatalogTests|PostgresListenerTests|KubernetesManifestTests|ClusterKeysTests|WebhookTests'
side+='|zeroMQRefusesPeersWithoutAnAllowedKey|aNodesOwnKeyIsRevokedWithoutARestart|theControlAPIIsClosedByDefault'
side+='|\.EndToEndTests|IngestInteropTests|RecordingTests|DVRTests|ControlAPITests|ShardingTests|PlaybackAccessTests|IdleEndTests|DiscontinuityTests'
# Enhanced RTMP's ladder, source rung, resolution change and tenant profile judge what was made
# (69 s in CI); its slate tests (33 s) stay in the main process, so that the suites beside and the
# fuzzers after them (their build about 50 s on an idle machine) still end before the main ones.
side+='|hevcFromAHaishinKitShapedPublisherBecomesAnH264Ladder|hevcSourceRungIsPackagedAsHvc1|publisherResolutionChangeKeepsEveryRenditionAtItsSize|tenantLadderProfileShapesTheLadder'
bin="$(swift build --show-bin-path)/StorecastPackageTests.xctest"
# The fuzzers' build and runs follow the side suites rather than joining them: at the start,
# with the browser suites, the machine was 85-100 % busy, and a 720p player stood still.
echo "== fuzzing the parsers of untrusted bytes once the suites beside are done (libFuzzer, 6 s per target; fuzz/run.sh 600 for a longer run)"
(
    status=0
    STORECAST_TEST_PORTS=20000-24999 nice -n 10 "$bin" --testing-library swift-testing --no-parallel --filter "$side" >"$side_log" 2>&1 || status=$?
    echo "$status" >"$side_status_file"
    exec nice -n 19 fuzz/run.sh 6 >"$fuzz_log" 2>&1
) & beside_pid=$!
main_status=0
swift test --skip-build --no-parallel --skip "$side" 2>&1 | tee "$log" || main_status=$?
fuzz_status=0; wait "$beside_pid" || fuzz_status=$?
side_status=$(cat "$side_status_file"); side_status=${side_status:-1}
echo "== the suites run beside"
cat "$side_log"
echo "== fuzzing (runs per target show how much CPU the tests left it)"
cat "$fuzz_log"
(( main_status == 0 )) || { echo "tests failed (above)" >&2; exit 1; }
(( side_status == 0 )) || { echo "the suites run beside failed (above)" >&2; exit 1; }
(( fuzz_status == 0 )) || { echo "fuzzing found a crash (above; the input is kept in fuzz/regressions/)" >&2; exit 1; }
passed=$(( $(grep -oE "Test run with [0-9]+ tests" "$log" | tail -1 | grep -oE "[0-9]+" || echo 0) \
         + $(grep -oE "Test run with [0-9]+ tests" "$side_log" | tail -1 | grep -oE "[0-9]+" || echo 0) ))
echo "== tests done in $(( $(date +%s) - start )) s"
echo "swift-test: $passed passed, 0 failed"
