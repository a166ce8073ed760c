#!/usr/bin/env bash
# Decode + export throughput and output size per format on a dump of >= 50 M
# events (Hubble's Listing 1, 2.6 M top-level calls x 20 trace points, one
# 512 MiB ring), plus `lookback verify` as the decode-only baseline.
#
#   bench/export_bench.sh [BUILD_DIR]      (default /tmp/bench-build)
#
# Prints a markdown table: events/s, bytes per event, peak RSS. Needs ~1.5 GB
# of free disk in $TMPDIR for the outputs (removed afterwards).
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-/tmp/bench-build}"
"$src/bench/configure.sh" "$build"
cmake --build "$build" --target lookback listing1_bench >&2
work=$(mktemp -d "${TMPDIR:-/tmp}/lookback-export-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

LOOKBACK_BUFFER_SIZE=512M LOOKBACK_DUMP_AT_EXIT=1 LOOKBACK_DIR="$work/dumps" LOOKBACK_QUIET=1 \
  "$build/bench/listing1_gcc_lookback" 0 2600000 0 >/dev/null
dump=$(ls "$work"/dumps/*.lbk)
events=$("$build/lookback" verify "$dump" | sed -n 's/.* \([0-9]*\) events decoded.*/\1/p' | head -n 1)
echo "dump: $(stat -c %s "$dump") bytes, $events events ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
echo
echo "| format | seconds | M events/s | output bytes | bytes/event | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|"
run() {  # name, command...
  local name=$1; shift
  local t0 t1 rss
  t0=$(date +%s.%N)
  /usr/bin/time -o "$work/rss" -f '%M' "$@" >/dev/null 2>&1 || echo "lookback: $name failed" >&2
  rss=$(tail -n 1 "$work/rss")
  t1=$(date +%s.%N)
  local out_bytes=0
  [[ -e "$work/out" ]] && out_bytes=$(du -sb "$work/out" | cut -f1)
  awk -v n="$name" -v t0="$t0" -v t1="$t1" -v ev="$events" -v ob="$out_bytes" -v rss="$rss" \
    'BEGIN { s = t1 - t0; printf "| %s | %.2f | %.1f | %.0f | %.2f | %.0f |\n", n, s, ev / s / 1e6, ob, ob / ev, rss / 1024 }'
  rm -rf "$work/out"
}
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
run "decode only (verify)" "$build/lookback" verify "$dump"
for fmt in perfetto nanoscope chrome speedscope folded art; do
  run "$fmt" "$build/lookback" convert -q "$dump" --to "$fmt" -o "$work/out"
done
