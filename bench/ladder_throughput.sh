#!/usr/bin/env bash
# Ladder throughput: Storecast's transcoder core (`storecast bench-ladder`, the LadderEncoder a
# live stream uses) against the ffmpeg CLI doing the same work in one process (one decode, split,
# scale, libx264 per rung to files), in one run, on the same input with the same x264 settings
# (preset, zerolatency tune, bitrate, 2 s GOP, no B-frames, no scene cuts, threads).
# Sources: 1080p30 and 720p30 (testsrc2, 10 s, no B-frames: the bench feeds frames with pts = dts). Quality: PSNR of every rung, ours and ffmpeg's,
# against the source scaled to the rung's size.
#   bench/ladder_throughput.sh [SECONDS] [PRESET] [THREADS] [SCALE_FROM]
#   (default 10 s, veryfast, 1 thread per rung, source = every rung scaled from the decoded source;
#   rung = each from the nearest larger rung)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-10}"; PRESET="${2:-veryfast}"; THREADS="${3:-1}"; SCALE_FROM="${4:-source}"
out="bench/out/ladder"; mkdir -p "$out"
[[ -n "${SKIP_BUILD:-}" ]] || swift build -c release --product storecast >&2  # SKIP_BUILD=1: use what is built
bin=.build/release/storecast

rung_args() {  # name w h bitrate -> ffmpeg output options for one rung
    local rate=$4
    echo "-c:v libx264 -preset $PRESET -tune zerolatency -threads $THREADS -b:v $rate -maxrate $((rate * 11 / 10)) -bufsize $rate -g 60 -keyint_min 60 -sc_threshold 0 -bf 0 -f h264"
}
psnr() {  # encoded.h264 source.h264 w h -> average PSNR (dB)
    ffmpeg -hide_banner -v info -i "$1" -i "$2" -lavfi "[1:v]scale=$3:$4:flags=bicubic[ref];[0:v][ref]psnr" -f null - 2>&1 \
        | sed -n 's/.*PSNR.* average:\([0-9.inf]*\).*/\1/p' | tail -1
}

echo "| source | ffmpeg CLI fps | storecast fps | storecast / ffmpeg | rung | PSNR ffmpeg (dB) | PSNR storecast (dB) | difference |"
echo "|---|---|---|---|---|---|---|---|"
for src in 1920x1080 1280x720; do
    w=${src%x*}; h=${src#*x}
    input="$out/source-${h}p.h264"
    [[ -f "$input" ]] || ffmpeg -v error -y -f lavfi -i "testsrc2=size=$src:rate=30" -t "$SECS" \
        -c:v libx264 -preset veryfast -crf 16 -g 60 -bf 0 -x264-params aud=1 -f h264 "$input"
    frames=$(( SECS * 30 ))
    # The field ladder, never upscaled: every rung at or below the source.
    rungs=()
    for r in "1080 1920 6000000" "720 1280 2000000" "480 854 800000" "360 640 400000"; do
        set -- $r
        (( $1 <= h )) && rungs+=("$1 $2 $3")
    done
    split="[0:v]split=${#rungs[@]}"; maps=""; outs=()
    for i in "${!rungs[@]}"; do split+="[s$i]"; done
    split+=";"
    for i in "${!rungs[@]}"; do
        set -- ${rungs[$i]}
        split+="[s$i]scale=$2:$1:flags=bicubic[o$i];"
        maps+=" -map [o$i] $(rung_args "${1}p" "$2" "$1" "$3") $out/ffmpeg-${h}p-${1}p.h264"
    done
    start=$(date +%s.%N)
    ffmpeg -v error -y -i "$input" -filter_complex "${split%;}" $maps
    ffmpeg_secs=$(echo "$(date +%s.%N) - $start" | bc -l)
    mkdir -p "$out/storecast-${h}p"
    line=$($bin bench-ladder --input "$input" --frame-rate 30 --preset "$PRESET" --encoder-threads "$THREADS" --scale-from "$SCALE_FROM" --output-directory "$out/storecast-${h}p")
    ours_fps=$(echo "$line" | awk '{print $6}')
    ffmpeg_fps=$(echo "$frames / $ffmpeg_secs" | bc -l)
    first=1
    for i in "${!rungs[@]}"; do
        set -- ${rungs[$i]}
        a=$(psnr "$out/ffmpeg-${h}p-${1}p.h264" "$input" "$2" "$1")
        b=$(psnr "$out/storecast-${h}p/${1}p.h264" "$input" "$2" "$1")
        d=$(echo "$b - $a" | bc -l)
        if (( first )); then
            printf "| %sp30 | %.1f | %.1f | **%.2f×** | %sp | %s | %s | %+.2f dB |\n" "$h" "$ffmpeg_fps" "$ours_fps" "$(echo "$ours_fps / $ffmpeg_fps" | bc -l)" "$1" "$a" "$b" "$d"
            first=0
        else
            printf "| | | | | %sp | %s | %s | %+.2f dB |\n" "$1" "$a" "$b" "$d"
        fi
    done
done
