#!/usr/bin/env bash
# The whole Storecast stack on this machine: installs system packages if missing, builds, starts a
# throwaway PostgreSQL under .run/, migrates, creates a demo tenant and stream key, starts the five
# services and prints the publish and player URLs. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/../.."

deploy/local/install-system-packages.sh
command -v swift >/dev/null || { echo "Swift 6 is required (https://www.swift.org/install/linux/)" >&2; exit 1; }
echo "building (the first build takes a few minutes)…"
swift build --product storecast
swift build
exec .build/debug/storecast dev "$@"
