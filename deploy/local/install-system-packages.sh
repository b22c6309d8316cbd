#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages Storecast builds, runs and tests with, if any is missing.
# Usage: deploy/local/install-system-packages.sh [--test]   (--test adds the test-only tools)
set -euo pipefail

packages=(pkg-config libzmq3-dev libavcodec-dev libavutil-dev libswscale-dev libpq-dev postgresql ffmpeg)
if [[ "${1:-}" == "--test" ]]; then
    packages+=(curl nginx-light python3-venv docker-compose chromium chromium-driver gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-plugins-ugly gstreamer1.0-libav)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
    echo "system packages: all present"
    exit 0
fi

echo "system packages: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "system packages: installed"
