#!/usr/bin/env bash
# A real, call-heavy Java workload under each JVM mode (issue 16): javac
# compiling Apache Commons Lang 3's sources (the Debian source package
# libcommons-lang3-java, fetched here with apt-get source; a deb-src entry must exist,
# as bench/compare.sh adds), in one interleaved run:
#   plain          java -m jdk.compiler/com.sun.tools.javac.Main (CDS on, the default)
#   plain, no CDS  the same with -Xshare:off (the agent's early class hook turns CDS off)
#   inline         lookback record (the agent, inline mode; methods C2 always
#                  inlines get no probes, docs/jvm.md), the default budget
#   nobudget       the same with --budget off (every call recorded)
#   inline-all     the same with --jvm-probe-inlined (every method probed)
#   fast           inline mode with --clock fast
#   fastoff        --clock fast --budget off: every probed method recorded (issue 24's measure)
#   fastnative     the same with --jvm-writes native (every record through the natives)
#   listener       lookback record --jvm-mode listener (only with LISTENER=1: slow)
# Prints the median wall time and peak RSS per mode, trace points per second
# (records written = events in the exit dump + records overwritten), the exit
# dump's size, the budget's own estimate for the busiest thread and the time
# that thread's ring holds, and the start-up cost of the agent on an empty
# program.
#   bench/jvm_workload.sh [BUILD_DIR] [ROUNDS]     (MODES="plain inline" picks modes)
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
work=${LOOKBACK_JVM_WORKLOAD:-/tmp/lookback-jvm-workload}
lb=$build/lookback
mkdir -p "$work/src"
src=$(find "$work/src" -maxdepth 1 -type d -name 'libcommons-lang3-java-[0-9]*' | sort | tail -n 1)
if [[ -z "$src" ]]; then
  (cd "$work/src" && apt-get source -qq libcommons-lang3-java >"$work/apt.log" 2>&1) || { cat "$work/apt.log"; exit 1; }
  src=$(find "$work/src" -maxdepth 1 -type d -name 'libcommons-lang3-java-[0-9]*' | sort | tail -n 1)
fi
find "$src/src/main/java" -name '*.java' > "$work/files.txt"
echo "workload: javac on $(wc -l < "$work/files.txt") files of $(basename "$src")"

javac_main=(-m jdk.compiler/com.sun.tools.javac.Main -nowarn -d "$work/out" @"$work/files.txt")
run() {  # mode -> "wall_s rss_kb records dump_bytes"
  local mode=$1 dir="$work/dumps-$1"
  rm -rf "$work/out" "$dir"
  mkdir -p "$work/out"
  local t="$work/time.txt"
  case $mode in
    plain) /usr/bin/time -f "%e %M" -o "$t" java "${javac_main[@]}" >/dev/null 2>&1 ;;
    nocds) /usr/bin/time -f "%e %M" -o "$t" java -Xshare:off "${javac_main[@]}" >/dev/null 2>&1 ;;
    inline | listener)
      /usr/bin/time -f "%e %M" -o "$t" "$lb" record -q --dir "$dir" --jvm-mode "$mode" -- java "${javac_main[@]}" \
        >/dev/null 2>&1 ;;
    nobudget)
      /usr/bin/time -f "%e %M" -o "$t" "$lb" record -q --dir "$dir" --budget off -- java "${javac_main[@]}" \
        >/dev/null 2>&1 ;;
    inline-all)
      /usr/bin/time -f "%e %M" -o "$t" "$lb" record -q --dir "$dir" --jvm-probe-inlined -- java "${javac_main[@]}" \
        >/dev/null 2>&1 ;;
    fast)
      /usr/bin/time -f "%e %M" -o "$t" "$lb" record -q --dir "$dir" --clock fast -- java "${javac_main[@]}" \
        >/dev/null 2>&1 ;;
    fastoff | fastnative)
      local writes=java
      [[ $mode == fastnative ]] && writes=native
      /usr/bin/time -f "%e %M" -o "$t" "$lb" record -q --dir "$dir" --clock fast --budget off --jvm-writes "$writes" \
        -- java "${javac_main[@]}" >/dev/null 2>&1 ;;
  esac
  local records=0 bytes=0 estimate=- span=-
  if [[ -d "$dir" ]]; then
    local dump
    dump=$(ls "$dir"/*.lbk | head -n 1)
    bytes=$(stat -c %s "$dump")
    # EVENTS + LOST over every thread of `lookback info`'s table: the first
    # three numbers after the TID are RECORDS, EVENTS, LOST (names may hold spaces).
    records=$("$lb" info "$dump" | tr -d , | awk '$1 ~ /^[0-9]+$/ && NF >= 6 {
        k = 0; for (i = 2; i <= NF && k < 3; i++) if ($i ~ /^[0-9]+$/) v[++k] = $i; else if (k > 0) k = 0
        if (k == 3) { e += v[2]; l += v[3] } } END { printf "%d", e + l }')
    read -r estimate span < <(bench_busiest_thread "$lb" "$dump")
  fi
  echo "$(cat "$t") $records $bytes $estimate $span"
}

# shellcheck source=bench/busiest_thread.sh
source "$(dirname "${BASH_SOURCE[0]}")/busiest_thread.sh"
declare -A wall rss recs bytes est spans
read -r -a modes <<< "${MODES:-plain nocds inline nobudget inline-all fast}"
[[ ${LISTENER:-0} == 1 ]] && modes+=(listener)
"$(dirname "${BASH_SOURCE[0]}")/machine_header.sh" "$build"
for ((r = 1; r <= rounds; r++)); do
  for m in "${modes[@]}"; do
    read -r w k n b e s < <(run "$m")
    wall[$m]+="$w " rss[$m]+="$k " recs[$m]+="$n " bytes[$m]+="$b " est[$m]+="$e " spans[$m]+="$s "
    echo "round $r $m: wall ${w}s rss ${k}KiB records $n dump ${b}B estimate $e ring span ${s}s" >&2
  done
  echo "round $r/$rounds done" >&2
done
median() { tr ' ' '\n' | { grep -v '^$' || true; } | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(echo "${wall[plain]}" | median)
echo
echo "| mode | wall, s (median of $rounds) | vs plain | budget's estimate, busiest thread | its ring holds, s | peak RSS, MiB | trace points/s | exit dump, MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for m in "${modes[@]}"; do
  w=$(echo "${wall[$m]}" | median)
  k=$(echo "${rss[$m]}" | median)
  n=$(echo "${recs[$m]}" | median)
  b=$(echo "${bytes[$m]}" | median)
  e=$(echo "${est[$m]}" | tr ' ' '\n' | { grep -v '^-*$' || true; } | median)
  s=$(echo "${spans[$m]}" | tr ' ' '\n' | { grep -v '^-*$' || true; } | median)
  awk -v m="$m" -v w="$w" -v base="$base" -v k="$k" -v n="$n" -v b="$b" -v e="${e:--}" -v s="${s:--}" 'BEGIN {
    tps = "-"; mib = "-"
    if (n > 0) tps = sprintf("%.1f M", n / w / 1e6)
    if (b > 0) mib = sprintf("%.1f", b / 1048576)
    printf "| %s | %.2f | %.2fx | %s | %s | %.0f | %s | %s |\n", m, w, w / base, e, s, k / 1024, tps, mib }'
done

# Start-up: an empty main, plain (CDS on), -Xshare:off, and with the agent.
mkdir -p "$work/empty"
printf 'public class Empty { public static void main(String[] a) {} }\n' > "$work/empty/Empty.java"
javac -d "$work/empty" "$work/empty/Empty.java"
declare -A st
for ((r = 1; r <= 5; r++)); do
  for m in plain nocds inline; do
    case $m in
      plain) /usr/bin/time -f "%e" -o "$work/t" java -cp "$work/empty" Empty ;;
      nocds) /usr/bin/time -f "%e" -o "$work/t" java -Xshare:off -cp "$work/empty" Empty ;;
      inline) /usr/bin/time -f "%e" -o "$work/t" "$lb" record -q --no-exit-dump --dir "$work/empty/d" -- java -cp "$work/empty" Empty ;;
    esac
    st[$m]+="$(cat "$work/t") "
  done
done
echo
echo "start-up of an empty program, median of 5: plain $(echo "${st[plain]}" | median) s," \
  "-Xshare:off $(echo "${st[nocds]}" | median) s, with the agent (inline) $(echo "${st[inline]}" | median) s"
