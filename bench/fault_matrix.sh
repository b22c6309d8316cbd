#!/usr/bin/env bash
# The fault matrix (docs/reliability.md) on the release build, each fault also watched by a
# shopper with hls.js in headless Chromium: the test suite's FaultMatrixTests run against
# .build/release (STORECAST_BIN_DIR) with STORECAST_FAULT_PLAYER=hls.js, so every row follows
# every rendition's media playlist with blocking reloads AND checks that hls.js played, had no
# fatal error and was still playing after the fault. Prints each row's figures.
#   bench/fault_matrix.sh        (needs what deploy/local/test.sh installs; about 8 min)
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in chromium chromedriver ffmpeg; do command -v $tool >/dev/null || { echo "fault_matrix: $tool is missing (deploy/local/install-system-packages.sh --test)" >&2; exit 1; }; done
[[ -f .build/test-tools/hls.js ]] || { echo "fault_matrix: hls.js is missing: run deploy/local/test-tools.sh" >&2; exit 1; }
if [[ -z "${SKIP_BUILD:-}" ]]; then
    swift build -c release >&2
    swift build --build-tests >&2
fi
[[ -x .build/release/storecast-packager ]] || { echo "fault_matrix: no release build in .build/release" >&2; exit 1; }
out=bench/out/fault_matrix; mkdir -p "$out"
set +e
STORECAST_BIN_DIR="$PWD/.build/release" STORECAST_FAULT_PLAYER=hls.js swift test --skip-build --no-parallel --filter FaultMatrixTests > "$out/test.log" 2>&1
status=$?
set -e
grep -E "^fault matrix" "$out/test.log" || true
# Every fault row must have been judged by hls.js too: one "hls.js:" figure per test case (12).
judged=$(grep -cE "^fault matrix.*hls\.js: played" "$out/test.log" || true)
grep -E "^✘|Test run with" "$out/test.log" >&2 || true
if [[ $status -ne 0 ]]; then echo "fault_matrix: a fault row failed (log: $out/test.log)" >&2; exit 1; fi
if [[ $judged -lt 12 ]]; then echo "fault_matrix: only $judged rows were judged by hls.js (12 expected; log: $out/test.log)" >&2; exit 1; fi
echo "fault_matrix: every row passed, each judged by hls.js ($judged)" >&2
