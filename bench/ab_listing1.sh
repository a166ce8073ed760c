#!/usr/bin/env bash
# Listing 1 built from two trees (e.g. before and after a change to the hot
# path), side by side: every variant of both interleaved in each round, ns per
# trace point against each tree's own uninstrumented build, medians.
#
#   bench/ab_listing1.sh A_BUILD B_BUILD [ROUNDS] [VARIANT...]
#
# A_BUILD, B_BUILD: build directories of bench/run_listing1.sh (target
# listing1_bench). VARIANT: BINARY_SUFFIX[:LOOKBACK_CLOCK], default
# gcc_lookback clang_pass clang_passfull (exact); LOOKBACK_CLOCK is exact, fast
# or fast:N, or "off" for tracing off (LOOKBACK_ENABLED=0). Work 0, 2 M calls
# per run.
# Prints the machine first (CPU model, rdtsc cost): judge every hot-path
# change with this script, on AMD and on Intel where you can
# (docs/performance.md, "How to judge a hot-path change").
set -euo pipefail
a=$1 b=$2 rounds=${3:-7}
shift $(( $# < 3 ? $# : 3 ))
variants=("$@")
[[ ${#variants[@]} -gt 0 ]] || variants=(gcc_lookback clang_pass clang_passfull)
calls=2000000
"$(dirname "${BASH_SOURCE[0]}")/machine_header.sh" "$b"
echo "# A: $a, B: $b; $rounds interleaved rounds, work 0, $calls calls of 20 trace points per run"
run() {  # binary clock|off -> elapsed ns
  local enabled=1 clock=${2:-exact}
  if [[ $clock == off ]]; then enabled=0 clock=exact; fi  # tracing off: LOOKBACK_ENABLED=0
  # LOOKBACK_BUDGET=off: the trace point is measured, not the budget, which
  # would shed Listing 1's functions a tenth of a second into the run.
  LOOKBACK_ENABLED=$enabled LOOKBACK_QUIET=1 LOOKBACK_CLOCK=$clock LOOKBACK_DUMP_AT_EXIT=0 LOOKBACK_BUDGET=off \
    "$1" 0 $calls 60000 | sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p'
}
# Each variant against the uninstrumented build of its own program
# (listing1_<prefix>_plain: gcc, clang, gcc-3regions, ...).
read -r -a prefixes <<< "$(for v in "${variants[@]}"; do echo "${v%%_*}"; done | sort -u | tr '\n' ' ')"
declare -A t m
for ((r = 0; r < rounds; ++r)); do
  for side in a b; do
    dir=${!side}
    for cc in "${prefixes[@]}"; do t[$side,plain_$cc,$r]=$(run "$dir/bench/listing1_${cc}_plain"); done
    for v in "${variants[@]}"; do
      t[$side,$v,$r]=$(run "$dir/bench/listing1_${v%%:*}" "$( [[ $v == *:* ]] && echo "${v#*:}" )")
    done
  done
done
median() { sort -g | awk '{x[NR]=$1} END {print x[int((NR+1)/2)]}'; }
printf '| variant | A ns/tp | B ns/tp | B / A |\n|---|---:|---:|---:|\n'
for v in "${variants[@]}"; do
  cc=${v%%_*}
  for side in a b; do
    m[$side]=$(for ((r = 0; r < rounds; ++r)); do
                 echo "(${t[$side,$v,$r]} - ${t[$side,plain_$cc,$r]}) / ($calls * 20)" | bc -l; done | median)
  done
  ratio=$(for ((r = 0; r < rounds; ++r)); do
            echo "(${t[b,$v,$r]} - ${t[b,plain_$cc,$r]}) / (${t[a,$v,$r]} - ${t[a,plain_$cc,$r]})" | bc -l; done | median)
  printf '| %s | %.2f | %.2f | %.3f |\n' "$v" "${m[a]}" "${m[b]}" "$ratio"
done
