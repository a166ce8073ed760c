#!/usr/bin/env bash
# How long `lookback dump PID` takes, phase by phase, with the traced threads
# spinning on every core (docs/performance.md, "Dump latency").
#
#   bench/dump_latency.sh [BUILD_DIR] [-- DRIVER_ARGS...]
#
# Builds the CLI, the runtime, the driver (bench/dump_latency.cc) and the
# spinning program (tests/programs/spinners.cc) in BUILD_DIR (default: build)
# and runs the driver: by default 1, 8 and 32 threads with 8 MiB rings, nine
# dumps each, dumps written to a fresh directory under $TMPDIR or /tmp (a
# disk: fsync is real). Driver arguments, e.g.
#   -- --threads 1,4,8,32 --dumps 15
#   -- --lookback OLD/lookback --spinners OLD/spinners --no-phases   (an older build: wall time only)
# About 1-3 minutes with the defaults on a 2-vCPU machine.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="build"
if [[ $# -gt 0 && "$1" != "--" ]]; then
  build="$1"
  shift
fi
[[ "${1:-}" == "--" ]] && shift
"$src/bench/configure.sh" "$build" RelWithDebInfo
cmake --build "$build" --target lookback lookback_runtime dump_latency dump_latency_bench >&2
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) CPUs" >&2
exec "$build/bench/dump_latency" "$@"
