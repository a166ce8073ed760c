#!/usr/bin/env bash
# Configures a benchmark build directory once (every bench script calls it):
# Release (or the given type), the benchmarks on, tests off unless the type
# is RelWithDebInfo (dump_latency.sh runs a test program). Does nothing when
# BUILD_DIR is already configured, so a script's later `cmake --build` reuses
# it.
#
#   bench/configure.sh BUILD_DIR [Release|RelWithDebInfo]
set -euo pipefail
build=$1
type=${2:-Release}
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ -f "$build/CMakeCache.txt" ]] && exit 0
tests=OFF
[[ $type == RelWithDebInfo ]] && tests=ON
cmake -G Ninja -S "$src" -B "$build" -DCMAKE_BUILD_TYPE="$type" -DLOOKBACK_BUILD_TESTS=$tests \
  -DLOOKBACK_BUILD_BENCH=ON >&2
