#!/usr/bin/env bash
# Fleet export throughput (docs/fleet.md): `lookback export --to parquet`
# and `lookback sql` on the same dump of >= 50 M events (Hubble's Listing 1,
# 2.6 M top-level calls x 20 trace points, one 512 MiB ring), beside
# `lookback verify` (decode only) and `lookback report` (decode + walk).
#
#   bench/fleet_bench.sh [BUILD_DIR] [OTHER_LOOKBACK]   (default /tmp/bench-build)
#
# OTHER_LOOKBACK: another build's lookback binary to time `sql` with too
# (the before/after figures of docs/performance.md). Prints a markdown
# table: wall and CPU seconds, M events/s and M calls/s of CPU time (the
# machine may be shared: CPU time is what one core does), output bytes,
# peak RSS (which includes the mapped dump). Needs ~2.5 GB free in $TMPDIR.
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-/tmp/bench-build}"
other="${2:-}"
"$src/bench/configure.sh" "$build"
cmake --build "$build" --target lookback listing1_bench >&2
[[ -x /usr/bin/time ]] || { echo "needs /usr/bin/time (Debian package 'time')" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/lookback-fleet-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

LOOKBACK_BUFFER_SIZE=512M LOOKBACK_DUMP_AT_EXIT=1 LOOKBACK_DIR="$work/dumps" LOOKBACK_QUIET=1 LOOKBACK_HOST=bench \
  "$build/bench/listing1_gcc_lookback" 0 2600000 0 >/dev/null
dump=$(ls "$work"/dumps/*.lbk)
events=$("$build/lookback" verify "$dump" | sed -n 's/.* \([0-9]*\) events decoded.*/\1/p' | head -n 1)
calls=$("$build/lookback" sql "$dump" -o "$work/count.db" 2>&1 | sed -n 's/.* \([0-9,]*\) calls.*/\1/p' | tr -d , | head -n 1)
rm -f "$work/count.db"
echo "dump: $(stat -c %s "$dump") bytes, $events events, $calls calls ($(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1 /proc/loadavg))"
echo
echo "| command | wall s | CPU s | M events/s | M calls/s | output bytes | peak RSS MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|"
run() {  # name, command...
  local name=$1; shift
  /usr/bin/time -o "$work/time" -f '%e %U %S %M' "$@" >/dev/null 2>&1 || echo "lookback: $name failed" >&2
  local out_bytes=0
  [[ -e "$work/out" ]] && out_bytes=$(du -sb "$work/out" | cut -f1)
  awk -v n="$name" -v ev="$events" -v calls="$calls" -v ob="$out_bytes" '
    { cpu = $2 + $3; printf "| %s | %.2f | %.2f | %.1f | %.1f | %.0f | %.0f |\n", n, $1, cpu, ev / cpu / 1e6, calls / cpu / 1e6, ob, $4 / 1024 }' \
    "$work/time"
  rm -rf "$work/out"
}
run "decode only (verify)" "$build/lookback" verify "$dump"
run "report" "$build/lookback" report "$dump"
run "export --to parquet" "$build/lookback" export --to parquet -q "$dump" -o "$work/out"
run "sql" "$build/lookback" sql -q "$dump" -o "$work/out"
run "sql --index" "$build/lookback" sql -q --index "$dump" -o "$work/out"
if [[ -n "$other" ]]; then
  run "sql ($other)" "$other" sql -q "$dump" -o "$work/out"
fi

# Memory does not grow with the number of dumps: three dumps of the same size
# (distinct runs, so distinct dump_ids) take the peak of one.
for i in 2 3; do
  LOOKBACK_BUFFER_SIZE=512M LOOKBACK_DUMP_AT_EXIT=1 LOOKBACK_DIR="$work/dumps" LOOKBACK_QUIET=1 LOOKBACK_HOST="bench-$i" \
    "$build/bench/listing1_gcc_lookback" 0 2600000 0 >/dev/null
done
echo
echo "| export --to parquet of | CPU s | M calls/s | peak RSS MiB |"
echo "|---|---:|---:|---:|"
for set in one three; do
  [[ $set == one ]] && inputs=("$dump") || inputs=("$work"/dumps/*.lbk)
  n=${#inputs[@]}
  /usr/bin/time -o "$work/time" -f '%e %U %S %M' "$build/lookback" export --to parquet -q "${inputs[@]}" -o "$work/out" \
    >/dev/null 2>&1 || echo "lookback: export of $set failed" >&2
  awk -v n="$n" -v calls="$calls" '{ cpu = $2 + $3; printf "| %d dump(s) of %d calls | %.2f | %.1f | %.0f |\n", n, calls, cpu, n * calls / cpu / 1e6, $4 / 1024 }' "$work/time"
  rm -rf "$work/out"
done
