#!/usr/bin/env bash
# How much does taking a dump stall a thread that is tracing at full speed?
#
#   bench/dump_gap.sh [BUILD_DIR]
#
# Runs `triggers busy 3000` (tests/programs/triggers.cc: thread "busy" calls a
# tiny traced function in a tight loop for 3 s after a 200 ms warm-up and
# measures the gaps between consecutive calls with rdtsc) ten times,
# interleaved: five runs without dumps, five with a full-ring dump every
# INTERVAL_MS (lb_dump_sync from the untraced main thread; the busy thread
# fills its ring many times over between two dumps). Prints the median of
# max_gap_ns and of p99.99_gap_ns for both, and the difference.
#
# Environment:
#   BUILD_DIR (or $1)  build tree with tests/programs/triggers (default: build)
#   INTERVAL_MS        time between dumps (default 50)
#   RUNS               runs of each kind (default 5)
#   BUSY_MS            length of each run (default 3000)
#   DUMP_DIR           where dumps go (default: a fresh directory in /dev/shm, so
#                      the disk's fsync latency is not what is measured; set it to
#                      a disk directory to include it)
#   LOOKBACK_BUFFER_SIZE  ring size (default 8M, lookback's default)
# About 35 s with the defaults.
set -euo pipefail

build="${1:-${BUILD_DIR:-build}}"
interval="${INTERVAL_MS:-50}"
runs="${RUNS:-5}"
busy_ms="${BUSY_MS:-3000}"
prog="$build/tests/programs/triggers"
ring="${LOOKBACK_BUFFER_SIZE:-8M}"

if [[ ! -x "$prog" ]]; then
  echo "dump_gap: $prog not found; build it with: cmake --build $build --target lookback_test_programs -j2" >&2
  exit 2
fi

to_bytes() {  # 8M -> 8388608
  local v="$1" n="${1%[KkMmGg]}"
  case "$v" in
    *[Kk]) echo $((n << 10)) ;;
    *[Mm]) echo $((n << 20)) ;;
    *[Gg]) echo $((n << 30)) ;;
    *) echo "$n" ;;
  esac
}
ring_bytes="$(to_bytes "$ring")"

if [[ -n "${DUMP_DIR:-}" ]]; then
  work="$DUMP_DIR"
  mkdir -p "$work"
  cleanup() { :; }
else
  base=/dev/shm
  [[ -d "$base" && -w "$base" ]] || base="${TMPDIR:-/tmp}"
  work="$(mktemp -d "$base/lookback-dump-gap.XXXXXX")"
  cleanup() { rm -rf "$work"; }
fi
trap cleanup EXIT

field() {  # field NAME LINE
  sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

median() {
  sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit } if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

plain_max=() plain_p=() dump_max=() dump_p=()
total_dumps=0
printf '%-6s %-4s %14s %16s %7s\n' kind run max_gap_ns p99.99_gap_ns dumps >&2
for ((i = 1; i <= runs; ++i)); do
  for kind in plain dumps; do
    dir="$work/$kind-$i"
    rm -rf "$dir"
    if [[ "$kind" == plain ]]; then
      out="$(LOOKBACK_DIR="$dir" LOOKBACK_DUMP_AT_EXIT=0 LOOKBACK_BUFFER_SIZE="$ring" LOOKBACK_QUIET=1 \
        "$prog" busy "$busy_ms")"
    else
      out="$(LOOKBACK_DIR="$dir" LOOKBACK_DUMP_AT_EXIT=0 LOOKBACK_BUFFER_SIZE="$ring" LOOKBACK_QUIET=1 \
        LOOKBACK_MAX_DUMPS=3 "$prog" busy "$busy_ms" "$interval")"
    fi
    max="$(field max_gap_ns "$out")"
    p="$(field p9999_gap_ns "$out")"
    n="$(field dumps "$out")"
    last="$(field last_dump "$out")"
    if [[ -z "$max" || -z "$p" ]]; then
      echo "dump_gap: unexpected output from $prog: $out" >&2
      exit 1
    fi
    if [[ "$kind" == dumps ]]; then
      # The dumps must be real: written, and holding a full ring.
      if [[ "${n:-0}" -lt 1 || -z "$last" || ! -f "$last" ]]; then
        echo "dump_gap: run $i wrote no dump ($out)" >&2
        exit 1
      fi
      size="$(stat -c %s "$last")"
      if ((size < ring_bytes * 9 / 10)); then
        echo "dump_gap: $last is $size bytes, not a full $ring ring" >&2
        exit 1
      fi
      total_dumps=$((total_dumps + n))
      dump_max+=("$max") dump_p+=("$p")
    else
      plain_max+=("$max") plain_p+=("$p")
    fi
    printf '%-6s %-4s %14s %16s %7s\n' "$kind" "$i" "$max" "$p" "${n:-0}" >&2
    rm -rf "$dir"
  done
done

pm="$(printf '%s\n' "${plain_max[@]}" | median)"
pp="$(printf '%s\n' "${plain_p[@]}" | median)"
dm="$(printf '%s\n' "${dump_max[@]}" | median)"
dp="$(printf '%s\n' "${dump_p[@]}" | median)"

echo "# dump gap: triggers busy $busy_ms, $runs runs each, ring $ring, a dump every ${interval} ms ($total_dumps dumps in all)"
printf '%-22s %14s %16s\n' "" "max_gap_ns" "p99.99_gap_ns"
printf '%-22s %14s %16s\n' "no dumps (median)" "$pm" "$pp"
printf '%-22s %14s %16s\n' "dumps (median)" "$dm" "$dp"
printf '%-22s %14s %16s\n' "difference" "$((dm - pm))" "$((dp - pp))"
