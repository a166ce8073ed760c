#!/usr/bin/env bash
# The overhead budget on real native programs (issue 23, docs/performance.md
# "The overhead budget"): SQLite's speedtest1 and the lua interpreter from
# Debian's sources, built by bench/compare.sh --build-only, run long enough
# for the budget to act (a few seconds each), in one interleaved run:
#   plain            uninstrumented (clang -O2)
#   pass, budget     the clang pass (inlined trace points, per-function guards), default budget
#   pass, off        the same with LOOKBACK_BUDGET=off (every call recorded)
#   pass,nohistory   the default budget with LOOKBACK_HISTORY=off (no floor of 2 s of
#                    history per ring; the default before 2026-11-27)
#   hooks, budget    gcc -finstrument-functions with liblookback.so, default budget
#   hooks, off       the same, every call recorded
#   VARIANT,base     VARIANT with BASE_BUILD's liblookback.so preloaded in place
#                    of this build's (an A/B of the runtime in one run; the
#                    programs are the same binaries)
# Prints, per program and variant, the median wall time and its ratio to
# plain, and from the exit dump the budget's own estimate and the time the
# busiest thread's ring holds.
#   bench/budget_native.sh [ROUNDS]   (env: BUILD=/tmp/bench-build WORK=/tmp/lookback-compare
#                                      SQLITE_SIZE=60 LUA_REPEATS=60 VARIANTS="plain pass,budget")
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rounds=${1:-5}
build=${BUILD:-/tmp/bench-build}
work=${WORK:-/tmp/lookback-compare}
sqlite_size=${SQLITE_SIZE:-60}
lua_repeats=${LUA_REPEATS:-60}
nice -n 10 "$src/bench/compare.sh" --build-only --programs sqlite,lua --build "$build" --work "$work" >&2
# shellcheck source=bench/busiest_thread.sh
source "$src/bench/busiest_thread.sh"
"$src/bench/machine_header.sh" "$build"
lb="$build/lookback"
[[ -x "$lb" ]] || cmake --build "$build" --target lookback >&2

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
read -r -a variants <<< "${VARIANTS:-plain pass,budget pass,off hooks,budget hooks,off}"
binary() {  # program variant
  case $2 in
    plain) echo "$work/bin/$1_clang_plain" ;;
    pass,*) echo "$work/bin/$1_clang_pass" ;;
    hooks,*) echo "$work/bin/$1_gcc_lookback" ;;
  esac
}
args() {
  case $1 in
    sqlite) echo "--memdb --size $sqlite_size" ;;
    lua) echo "$src/bench/compare/bench.lua $lua_repeats" ;;
  esac
}
declare -A wall est span
for ((r = 1; r <= rounds; r++)); do
  for p in sqlite lua; do
    for v in "${variants[@]}"; do
      dir="$out/$p-$v-$r"
      budget=3 preload= history=
      [[ $v == *,off || $v == *,off,base ]] && budget=off
      [[ $v == *,nohistory || $v == *,nohistory,base ]] && history=off
      if [[ $v == *,base ]]; then
        [[ -r ${BASE_BUILD:-}/liblookback.so ]] || { echo "$v needs BASE_BUILD with a liblookback.so" >&2; exit 1; }
        preload=$(cd "$BASE_BUILD" && pwd)/liblookback.so
      fi
      # shellcheck disable=SC2046
      /usr/bin/time -f "%e" -o "$out/t" env LOOKBACK_DIR="$dir" LOOKBACK_DUMP_AT_EXIT=1 LOOKBACK_BUDGET="$budget" \
        ${history:+LOOKBACK_HISTORY=$history} ${preload:+LD_PRELOAD=$preload} LOOKBACK_QUIET=1 "$(binary "$p" "$v")" $(args "$p") >/dev/null
      wall[$p/$v]+="$(cat "$out/t") "
      e=- s=-
      if [[ $v != plain ]]; then
        dump=$(ls "$dir"/*.lbk | head -n 1)
        read -r e s < <(bench_busiest_thread "$lb" "$dump")
        rm -rf "$dir"
      fi
      est[$p/$v]+="$e " span[$p/$v]+="$s "
      echo "round $r $p $v: $(cat "$out/t") s, estimate $e, ring span $s s" >&2
    done
  done
done
median() { tr ' ' '\n' | { grep -v '^-*$' || true; } | sort -g | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }'; }
echo
echo "| program | variant | wall, s (median of $rounds) | vs plain | budget's estimate, busiest thread | its ring holds, s |"
echo "|---|---|---:|---:|---:|---:|"
for p in sqlite lua; do
  base=$(echo "${wall[$p/plain]}" | median)
  for v in "${variants[@]}"; do
    w=$(echo "${wall[$p/$v]}" | median)
    awk -v p="$p" -v v="$v" -v w="$w" -v b="$base" -v e="$(echo "${est[$p/$v]}" | median)" \
      -v s="$(echo "${span[$p/$v]}" | median)" 'BEGIN { printf "| %s | %s | %.2f | %.3fx | %s | %s |\n", p, v, w, w / b, e, s }'
  done
done
