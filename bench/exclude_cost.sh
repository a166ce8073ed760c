#!/usr/bin/env bash
# Cost of the run-time exclusion filter (LOOKBACK_EXCLUDE) on Hubble's Listing 1,
# clang hooks + liblookback.so, tracing on. Interleaved rounds, medians:
#   no filter             LOOKBACK_EXCLUDE unset (the hook's filter test only)
#   filter, no hit        a table is published but no chain function is in it
#                         (every trace point looks up and misses)
#   filter, 4 of 20 hit   Level<3> and Level<6> excluded: 4 of the 20 trace
#                         points per call are looked up, found and not recorded
# ns/tp = (variant - uninstrumented) / 20.
#   bench/exclude_cost.sh [BUILD_DIR (default /tmp/bench-build)] [ROUNDS (default 7)]
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-/tmp/bench-build}"
rounds="${2:-7}"
"$src/bench/configure.sh" "$build"
cmake --build "$build" --target listing1_bench >&2
bin="$build/bench/listing1_clang"
calls=700000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() {  # name binary env... -> appends "name ns_per_call"
  local name=$1 b=$2; shift 2
  local out
  out=$(env -u LOOKBACK_EXCLUDE "$@" LOOKBACK_DIR="$tmp/d" LOOKBACK_DUMP_AT_EXIT=0 LOOKBACK_QUIET=1 "$b" 0 $calls 20000)
  echo "$name $(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' <<<"$out")" >>"$tmp/runs"
}
for ((r = 0; r < rounds; r++)); do
  run plain "${bin}_plain"
  run floor "${bin}_floor" LB_FLOOR_HUGEPAGE=1
  run "no filter" "${bin}_lookback"
  run "filter, no hit" "${bin}_lookback" LOOKBACK_EXCLUDE='*ParseCount*'
  run "filter, 4 of 20 hit" "${bin}_lookback" LOOKBACK_EXCLUDE='*Level<3>*,*Level<6>*'
done
python3 - "$tmp/runs" "$rounds" $calls <<'PY'
import sys, statistics as st, collections
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, ns = line.rsplit(' ', 1)
    runs[name].append(int(ns) / int(sys.argv[3]))
rounds = int(sys.argv[2])
tp = lambda name, r: (runs[name][r] - runs['plain'][r]) / 20
print(f"Listing 1, clang -finstrument-functions-after-inlining + liblookback.so, tracing on, {rounds} interleaved rounds, medians")
print()
print("| variant | ns per call | ns per trace point | x no filter (per tp) |")
print("|---|---:|---:|---:|")
for name in ['plain', 'floor', 'no filter', 'filter, no hit', 'filter, 4 of 20 hit']:
    call = st.median(runs[name])
    if name == 'plain':
        print(f"| uninstrumented | {call:.1f} | – | – |"); continue
    t = st.median(tp(name, r) for r in range(rounds))
    x = st.median(tp(name, r) / tp('no filter', r) for r in range(rounds))
    print(f"| {name} | {call:.1f} | {t:.2f} | {x:.3f} |")
PY
