#!/usr/bin/env bash
# Memory growth of storecast-ingest over a long run: N ffmpeg `-c copy` publishers of the 2.5 Mbps
# sample and one ZeroMQ consumer, RSS sampled every 30 s. Growth is measured from the first sample
# after a 60 s warm-up to the last, so the GOP caches and buffers are full before the baseline.
#   bench/ingest_memory.sh [PUBLISHERS] [MINUTES]       (default 8 publishers, 10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-8}"; MINUTES="${2:-10}"
source bench/common.sh
make_sample
start_storecast_ingest "$N"
publish_all "$N" "rtmp://127.0.0.1:19351/live/" "$out/storecast-keys"
sleep 60
samples=()
end=$(( $(date +%s) + MINUTES * 60 ))
while (( $(date +%s) < end )); do
    samples+=("$(rss_kb $ingest)")
    echo "$(date +%T) ingest RSS ${samples[-1]} KiB (${#samples[@]} samples)" >&2
    sleep 30
done
samples+=("$(rss_kb $ingest)")
alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null || true
stop_storecast_ingest
python3 - "$N" "$MINUTES" "$alive" "${samples[@]}" <<'PY'
import sys
n, minutes, alive, s = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), [int(x) for x in sys.argv[4:]]
half = len(s) // 2
print("| publishers | minutes | publishers alive at end | RSS after warm-up | RSS at end | min / max | growth | growth, second half |")
print("|---|---|---|---|---|---|---|---|")
mib = lambda k: f"{k / 1024:.1f} MiB"
print(f"| {n} | {minutes} | {alive} | {mib(s[0])} | {mib(s[-1])} | {mib(min(s))} / {mib(max(s))} | {(s[-1] - s[0]) / 1024:+.1f} MiB | {(s[-1] - s[half]) / 1024:+.1f} MiB |")
PY
