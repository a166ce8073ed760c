#!/usr/bin/env bash
# Builds and runs the Listing 1 benchmark (bench/listing1.cc), every variant
# interleaved, gcc and clang. Prints a markdown table of medians.
#
#   bench/run_listing1.sh [BUILD_DIR] [driver options...]
#
# BUILD_DIR defaults to /tmp/bench-build. Driver options (see
# bench/listing1_driver.cc): --rounds N (default 7), --work 0,1,10,100,1000,
# --compilers gcc,clang, --scale F, --no-uftrace, --no-xray, --no-gprof,
# --no-first-lap, --extra, --raw FILE.csv, --quick.
# bench/compare.sh runs this driver too, next to real programs.
# A full run takes about three minutes on a 2-vCPU VM.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-/tmp/bench-build}"
if [[ $# -gt 0 ]]; then shift; fi

"$src/bench/configure.sh" "$build"
cmake --build "$build" --target listing1_bench >&2

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')" \
  "$(git -C "$src" diff --quiet HEAD -- src include 2>/dev/null || echo '(uncommitted changes in src/ or include/)')" >&2
"$src/bench/machine_header.sh" "$build" >&2
exec "$build/bench/listing1_driver" "$@"
