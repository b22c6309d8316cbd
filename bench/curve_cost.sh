#!/usr/bin/env bash
# What CURVE costs on the ladder path, side by side in one run (issue 23's goal: ≤ 3 % more CPU):
#  - the 4-rung ladder's own CPU per second of a 1080p30 stream (`storecast bench-ladder`, the
#    transcoder's LadderEncoder, veryfast, on a testsrc2 file), measured with getrusage of the process;
#  - one stream's ZeroMQ traffic (the source into the worker, the rungs and audio out of it)
#    through a PUSH/PULL pair on this host, plaintext and then CURVE with the allow-list
#    (`storecast bench-curve`: the services' own ZeroMQ wrapper and key loading).
#   bench/curve_cost.sh [STREAM_SECONDS]     (default 300 s of stream through ZeroMQ)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-300}"
out="bench/out/curve"; mkdir -p "$out"
[[ -n "${SKIP_BUILD:-}" ]] || swift build -c release --product storecast >&2
bin=.build/release/storecast
[[ -x "$bin" ]] || { echo "curve_cost: no release build ($bin)" >&2; exit 1; }
command -v ffmpeg >/dev/null || { echo "curve_cost: ffmpeg is needed for the ladder's input" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "curve_cost: /usr/bin/time is needed (apt install time)" >&2; exit 1; }

input="$out/source-1080p.h264"
[[ -f "$input" ]] || ffmpeg -v error -y -f lavfi -i "testsrc2=size=1920x1080:rate=30" -t 20 \
    -c:v libx264 -preset veryfast -crf 16 -g 60 -bf 0 -x264-params aud=1 -f h264 "$input"
/usr/bin/time -f "cpu %U %S" -o "$out/ladder.time" "$bin" bench-ladder --input "$input" --rungs 1080p,720p,480p,360p > "$out/ladder.txt"
frames=$(awk '{print $2}' "$out/ladder.txt")
[[ "$frames" =~ ^[0-9]+$ && "$frames" -gt 0 ]] || { echo "curve_cost: bench-ladder printed no frame count: $(cat "$out/ladder.txt")" >&2; exit 1; }
ladder=$(awk -v f="$frames" '/^cpu/ {printf "%.4f", ($2 + $3) / (f / 30)}' "$out/ladder.time")

"$bin" bench-curve --seconds "$SECS" > "$out/curve.txt"
read -r plain curve < <(awk '{print $6, $8}' "$out/curve.txt")
[[ -n "$plain" && -n "$curve" ]] || { echo "curve_cost: bench-curve printed nothing usable: $(cat "$out/curve.txt")" >&2; exit 1; }

echo "| path (per second of a 1080p30 stream) | CPU seconds | share of the ladder's CPU |"
echo "|---|---|---|"
awk -v l="$ladder" -v p="$plain" -v c="$curve" 'BEGIN {
    printf "| 4-rung ladder (decode, scale, 4 × x264 veryfast) | %.4f | 100 %% |\n", l
    printf "| ZeroMQ traffic, plaintext | %.5f | %.2f %% |\n", p, 100 * p / l
    printf "| ZeroMQ traffic, CURVE | %.5f | %.2f %% |\n", c, 100 * c / l
    printf "| **CURVE over plaintext** | **%.5f** | **%.2f %% more** (goal ≤ 3 %%) |\n", c - p, 100 * (c - p) / l
}'
