#!/usr/bin/env bash
# What sampling (lookback record --sample, docs/sampling.md) adds to tracing,
# measured side by side: every variant once per round, rounds interleaved,
# medians printed as a markdown table.
#
#   bench/sampling_cost.sh [BUILD_DIR] [ROUNDS]
#
# Programs:
#   - Hubble's Listing 1 (gcc hooks, linked with liblookback.so, tracing on):
#     the time of its timed loop (elapsed_ns), single thread, 20 trace points
#     per call, work 100;
#   - the quick-start example (examples/jank, 200 frames, ~1.7 s): process
#     CPU time (user + sys), since it sleeps between frames; its wall time is
#     set by its frame pacing.
# Each variant is compared with tracing alone *in the same round* (this VM's
# speed drifts by tens of percent over seconds); the table gives the median
# of those per-round ratios, and of the per-round CPU time added to jank.
# Variants: uninstrumented Listing 1 (the floor), tracing alone, sampling
# every 1 ms of thread CPU time (perf task clock) with and without thread
# state polling, the POSIX-timer fallback, wall-clock sampling, and sampling
# with allocation counting. Takes about 3 minutes with 7 rounds.
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-/tmp/bench-build}"
rounds="${2:-7}"
"$src/bench/configure.sh" "$build"
cmake --build "$build" --target listing1_bench example_jank lookback_alloc deny-perf-bench >&2
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?'), $rounds rounds" >&2

l1_args=(100 1500000 100000)
jank_args=(200)
alloc="$build/liblookback-alloc.so"
deny="$build/bench/deny-perf"
declare -A env_of=(
  [trace]=""
  [cpu]="LOOKBACK_SAMPLE=cpu"
  [cpu-nostate]="LOOKBACK_SAMPLE=cpu LOOKBACK_STATE_INTERVAL=0"
  [cpu-posix]="LOOKBACK_SAMPLE=cpu"
  [wall]="LOOKBACK_SAMPLE=wall"
  [alloc]="LOOKBACK_SAMPLE=cpu LD_PRELOAD=$alloc"
)
variants=(trace cpu cpu-nostate cpu-posix wall alloc)
declare -A l1 jank
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

run() {  # run VARIANT PROGRAM ARGS... -> "elapsed_ns cpu_s"
  local v="$1"; shift
  local wrap=()
  [[ "$v" == cpu-posix ]] && wrap=("$deny")
  local TIMEFORMAT='%U %S'
  { time env LOOKBACK_QUIET=1 LOOKBACK_DIR="$tmp" ${env_of[$v]:-} "${wrap[@]}" "$@" > "$tmp/out" 2>/dev/null; } 2> "$tmp/time"
  local ns
  ns=$(sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p' "$tmp/out")
  echo "${ns:-0} $(awk '{print $1 + $2}' "$tmp/time")"
}

for ((r = 0; r < rounds; ++r)); do
  read -r ns _ < <(run floor "$build/bench/listing1_gcc_plain" "${l1_args[@]}")
  l1[floor]+="$ns "
  for v in "${variants[@]}"; do
    read -r ns _ < <(run "$v" "$build/bench/listing1_gcc_lookback" "${l1_args[@]}")
    l1[$v]+="$ns "
    read -r _ cpu < <(run "$v" "$build/bin/jank" "${jank_args[@]}")
    jank[$v]+="$cpu "
  done
  echo "round $((r + 1))/$rounds done" >&2
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
# ratios A B: per-round A[i] / B[i]; diffs A B: per-round A[i] - B[i]
ratios() { paste <(echo "$1" | tr ' ' '\n' | grep -v '^$') <(echo "$2" | tr ' ' '\n' | grep -v '^$') | awk '{printf "%f ", $1 / $2}'; }
diffs() { paste <(echo "$1" | tr ' ' '\n' | grep -v '^$') <(echo "$2" | tr ' ' '\n' | grep -v '^$') | awk '{printf "%f ", $1 - $2}'; }
echo
echo "| variant | Listing 1 ms | / tracing alone (same round) | jank CPU ms | jank CPU added, ms |"
echo "|---|---:|---:|---:|---:|"
f=$(echo "${l1[floor]}" | median)
printf "| uninstrumented (floor) | %.1f | %.3f | | |\n" "$(echo "$f / 1000000" | bc -l)" "$(ratios "${l1[floor]}" "${l1[trace]}" | median)"
for v in "${variants[@]}"; do
  a=$(echo "${l1[$v]}" | median)
  b=$(echo "${jank[$v]}" | median)
  printf "| %s | %.1f | %.3f | %.1f | %+.1f |\n" "$v" "$(echo "$a / 1000000" | bc -l)" "$(ratios "${l1[$v]}" "${l1[trace]}" | median)" \
    "$(echo "$b * 1000" | bc -l)" "$(echo "$(diffs "${jank[$v]}" "${jank[trace]}" | median) * 1000" | bc -l)"
done
