#!/usr/bin/env bash
# Builds lookback (warnings as errors) and runs every test.
# Usage: scripts/test.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${1:-build}
shift || true
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOOKBACK_WERROR=ON "$@" >/dev/null
cmake --build "$build"
ctest --test-dir "$build" -j2 --output-on-failure
