#!/usr/bin/env bash
# The probe in the interpreter (docs/jvm.md, "The probe in the interpreter"):
# bench/java/Interpreted.java under -Xint, plain and under `lookback record`,
# in one interleaved run; ns per trace point over plain, medians. The
# interpreter runs every probe of code the JITs have not compiled yet, most of
# a JVM's start-up.
#   bench/jvm_interpreter.sh [BUILD_DIR] [ROUNDS]
# Modes (MODES="plain record"): plain; record (--budget off: every call is
# recorded); fast (--clock fast --budget off); idle (probes in, tracing off:
# LOOKBACK_ENABLED=0); MODE-base with BASE_BUILD's lookback, for an A/B.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-5}
calls=${CALLS:-300000}
work=${LOOKBACK_JVM_INTERPRETER:-/tmp/lookback-jvm-interpreter}
base_lb=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)/lookback}
mkdir -p "$work"
javac -d "$work" "$(dirname "${BASH_SOURCE[0]}")/java/Interpreted.java"
read -r -a modes <<< "${MODES:-plain record fast idle}"

run() {  # mode -> elapsed ns
  local mode=$1 tool=$build/lookback flags=() envs=()
  if [[ $mode == *-base ]]; then
    [[ -n $base_lb ]] || { echo "mode $mode needs BASE_BUILD" >&2; exit 2; }
    tool=$base_lb mode=${mode%-base}
  fi
  local java=(java -Xint -cp "$work" Interpreted "$calls")
  case $mode in
    plain) ;;
    record) flags=(--budget off) ;;
    fast) flags=(--budget off --clock fast) ;;
    idle) envs=(LOOKBACK_ENABLED=0) ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  rm -rf "$work/dumps"
  if [[ $mode == plain ]]; then
    "${java[@]}"
  else
    env "${envs[@]}" "$tool" record -q --dir "$work/dumps" "${flags[@]}" -- "${java[@]}" 2>/dev/null
  fi | sed -n 's/.*elapsed_ns=\([0-9]*\).*/\1/p'
}
# shellcheck source=bench/median.sh
source "$(dirname "${BASH_SOURCE[0]}")/median.sh"

"$(dirname "${BASH_SOURCE[0]}")/machine_header.sh" "$build"
echo "# $(java -version 2>&1 | head -n 1); -Xint; $rounds interleaved rounds of $calls calls (3 traced calls, 6 trace points each)"
declare -A ns
for ((r = 1; r <= rounds; r++)); do
  for m in "${modes[@]}"; do ns[$m]+="$(run "$m") "; done
done
plain=$(tr ' ' '\n' <<< "${ns[plain]:-}" | grep . | median || true)
echo "| mode | ns per call | ns per trace point over plain |"
echo "|---|---:|---:|"
for m in "${modes[@]}"; do
  med=$(tr ' ' '\n' <<< "${ns[$m]}" | grep . | median)
  over=-
  [[ -n $plain && $m != plain ]] && over=$(awk -v a="$med" -v p="$plain" -v n="$calls" 'BEGIN {printf "%.1f", (a - p) / n / 6}')
  echo "| $m | $(awk -v a="$med" -v n="$calls" 'BEGIN {printf "%.1f", a / n}') | $over |"
done
