#!/usr/bin/env bash
# The hot path's machine code, counted and modelled per CPU: the fast path of
# a hook (from its entry to its first `ret`, i.e. the path a trace point
# takes when nothing needs announcing) disassembled from one or more builds,
# with its instruction count and llvm-mca's model of it (uops and cycles per
# iteration) for an AMD and an Intel core. Use it beside bench/ab_listing1.sh
# to judge a hot-path change on the vendor you cannot run (docs/performance.md,
# "How to judge a hot-path change").
#
#   bench/mca_hot_path.sh [--symbol NAME] [--mcpu CPU,...] LIB_OR_BINARY...
#
# NAME defaults to __cyg_profile_func_enter (liblookback.so, liblookback.a's
# programs); lb_pass_enter_on for a clang-pass program (check shape). CPUs
# default to znver3,icelake-server,skylake-avx512. llvm-mca does not model
# rdtsc's microcode faithfully, so the clock read is left out and counted
# apart: the figures are the cost of everything around it, the part that
# differs between builds.
set -euo pipefail
symbol=__cyg_profile_func_enter
cpus=znver3,icelake-server,skylake-avx512
while [[ $# -gt 0 ]]; do
  case $1 in
    --symbol) symbol=$2; shift 2 ;;
    --mcpu) cpus=$2; shift 2 ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "usage: $0 [--symbol NAME] [--mcpu CPU,...] LIB_OR_BINARY..." >&2; exit 2; }
mca=$(command -v llvm-mca || command -v llvm-mca-14 || true)
[[ -n $mca ]] || { echo "llvm-mca not found (Debian: llvm-14)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hdr="| build | instructions |" sep="|---|---:|"
for cpu in ${cpus//,/ }; do hdr+=" $cpu uops, cycles |"; sep+="---:|"; done
printf '%s\n%s\n' "$hdr" "$sep"
for f in "$@"; do
  # Entry to the first ret; branch targets become a local label (llvm-mca
  # models straight-line code: the fast path, with every branch not taken).
  objdump -d --no-show-raw-insn "$f" > "$tmp/all.s"  # whole, to a file: awk stops early
  awk -v s="<$symbol>:" '
    index($0, s) { on = 1; next }
    on && /^$/ { exit }
    on { sub(/^[[:space:]]*[0-9a-f]+:[[:space:]]*/, ""); sub(/[[:space:]]*#.*/, "");
         if ($1 == "rdtsc") next; if ($1 ~ /^j/) { $0 = $1 " .Lout" } print; if ($1 == "ret") exit }' "$tmp/all.s" > "$tmp/hot.s"
  n=$(grep -c . "$tmp/hot.s" || true)
  [[ $n -gt 0 ]] || { echo "$f: no $symbol" >&2; continue; }
  echo ".Lout:" >> "$tmp/hot.s"
  row="| $f | $n |"
  for cpu in ${cpus//,/ }; do
    out=$("$mca" -mtriple=x86_64-linux-gnu -mcpu="$cpu" -iterations=100 "$tmp/hot.s" 2>/dev/null || true)
    uops=$(sed -n 's/^Total uOps: *\([0-9]*\)/\1/p' <<<"$out")
    cyc=$(sed -n 's/^Total Cycles: *\([0-9]*\)/\1/p' <<<"$out")
    row+=" $(awk -v u="$uops" -v c="$cyc" 'BEGIN { if (u == "" || c == "") print "?"; else printf "%.1f, %.1f", u / 100, c / 100 }') |"
  done
  echo "$row"
done
