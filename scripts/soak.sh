#!/usr/bin/env bash
# Runs the README's test command RUNS times in a row, optionally with a
# compiler build looping beside it, and tallies what failed. This is how the
# suite is checked to "pass every time, on a loaded 2-core machine too".
#
#   scripts/soak.sh BUILD_DIR [RUNS] [--beside]
#
# --beside configures a second build of this checkout in $TMPDIR and rebuilds
# it from clean in a loop while the suite runs (the load CI machines see when
# another job shares them). Logs of failed runs stay in BUILD_DIR/soak/.
set -u
build=${1:?usage: scripts/soak.sh BUILD_DIR [RUNS] [--beside]}
runs=${2:-20}
beside=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$build" && pwd)
logs=$build/soak
mkdir -p "$logs"

side_pid=
cleanup() {
  if [ -n "$side_pid" ]; then kill -- "-$side_pid" 2>/dev/null || kill "$side_pid" 2>/dev/null; fi
  [ -n "${side_dir:-}" ] && rm -rf "$side_dir"
}
trap cleanup EXIT
if [ "$beside" = --beside ]; then
  side_dir=$(mktemp -d "${TMPDIR:-/tmp}/lookback-soak-side.XXXXXX")
  cmake -S "$here" -B "$side_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 1
  set -m
  (while :; do ninja -C "$side_dir" -j2 >/dev/null 2>&1; ninja -C "$side_dir" clean >/dev/null 2>&1; done) &
  side_pid=$!
  set +m
fi

passed=0
declare -A failures=()
for i in $(seq 1 "$runs"); do
  log=$logs/run-$i.log
  start=$(date +%s)
  if (cd "$build" && ctest -j2 --output-on-failure >"$log" 2>&1); then
    passed=$((passed + 1))
    rm -f "$log"
    echo "run $i/$runs: passed ($(($(date +%s) - start)) s)"
  else
    failed=$(sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+).*\((Failed|Timeout|SEGFAULT|Subprocess aborted|Exception)\)$/\1/p' "$log" | sort -u | tr '\n' ' ')
    for t in $failed; do failures[$t]=$((${failures[$t]:-0} + 1)); done
    echo "run $i/$runs: FAILED ($(($(date +%s) - start)) s): $failed  (log: $log)"
  fi
done
echo "soak: $passed of $runs runs passed${beside:+ with a build beside}"
for t in "${!failures[@]}"; do echo "  $t failed in ${failures[$t]} runs"; done
[ "$passed" -eq "$runs" ]
