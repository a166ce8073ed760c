#!/usr/bin/env bash
# A real, call-heavy Java workload under each JVM mode (issues 16, 23, 24), in
# one interleaved run. WORKLOAD picks the program (all from Debian packages):
#   javac  (default) the JDK's javac compiling Apache Commons Lang 3's sources (the
#          Debian source package libcommons-lang3-java, fetched here with apt-get
#          source; a deb-src entry must exist, as bench/compare.sh adds)
#   rhino  Mozilla Rhino (package rhino), a JavaScript engine, running
#          bench/workloads/mixed.js: recursion, objects, closures, strings and
#          regular expressions, sorting, JSON
#   h2     the H2 database (package libh2-java), in memory, running
#          bench/workloads/h2.sql: 50 k rows inserted, indexed, joined, grouped,
#          updated and deleted
# Modes (MODES="plain inline" picks some):
#   plain          the program as it is (CDS on, the default)
#   nocds          the same with -Xshare:off
#   inline         lookback record (the agent, inline mode; methods C2 always
#                  inlines get no probes, docs/jvm.md): the default settings, budget 3 %
#   nobudget       the same with --budget off (every call recorded)
#   budget1        the same with --budget 1 (a third of the default's share of CPU)
#   nohistory      default settings with --history off: the budget alone, without the
#                  default floor of 2 s of history per ring (the default before 2026-11-27)
#   inline-all     the same with --jvm-probe-inlined (every method probed)
#   fast           inline mode with --clock fast
#   fastoff        --clock fast --budget off: every probed method recorded (issue 24's measure)
#   fastnative     the same with --jvm-writes native (every record through the natives)
#   natives        default settings with --jvm-writes native: every record through the natives
#                  (the exact clock's timed records before the JFR clock, 2026-11-28)
#   nobudgetnative --budget off --jvm-writes native
#   sync           default settings with --jvm-startup sync: the JDK's start-up classes
#                  retransformed with probes before main (the default before 2026-11-27)
#   skip           default settings with --jvm-startup skip: the JDK classes first loaded
#                  in the JVM's first second get probes as they load, not after it (the
#                  default before 2026-11-28)
#   idle           default settings with LOOKBACK_ENABLED=0: the probes compiled in, no
#                  thread traced (what the probes' presence alone costs)
#   nojdk          default settings with --jvm-exclude java.*, jdk.*, sun.*: the JDK's own
#                  classes keep their code (what their probes cost)
#   nomemory       default settings with --jvm-shed-memory off: every run starts with every
#                  probe, as before 2026-11-28 (the default remembers what earlier runs of the
#                  program shed, in ~/.cache/lookback/jvm-shed; WARMUP runs fill it)
#   listener       lookback record --jvm-mode listener (only with LISTENER=1: slow)
#   MODE-base      MODE with the lookback of BASE_BUILD (another build, for an A/B in one run)
# SCALE (default 1): rhino and h2 do SCALE times their work in one JVM (rhino's
# mixed.js runs 4*SCALE rounds; h2 runs its script SCALE times, dropping every table
# between), so that the JIT's warm-up weighs less: a long-running program's cost.
# WARMUP (default 1): untimed runs of each traced mode first, since the class cache
# is keyed by the agent's build and the first runs after a rebuild parse every class.
# Prints the median wall time, CPU time (user+sys) and peak RSS per mode, the median of its per-round
# ratio to plain (the rounds of this host vary more than the modes), trace points per second
# (records written = events in the exit dump + records overwritten), the exit
# dump's size, the budget's own estimate for the busiest thread and the time
# that thread's ring holds; then the start-up cost: the time to the program's
# first output (javac -version, a one-line script) plain and under `record`.
#   bench/jvm_workload.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-3}
workload=${WORKLOAD:-javac}
scale=${SCALE:-1}
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "SCALE must be a whole number of at least 1, not '$scale'" >&2; exit 2; }
work=${LOOKBACK_JVM_WORKLOAD:-/tmp/lookback-jvm-workload}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lb=$build/lookback
base_lb=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)/lookback}
mkdir -p "$work/src"
case $workload in
  javac)
    src=$(find "$work/src" -maxdepth 1 -type d -name 'libcommons-lang3-java-[0-9]*' | sort | tail -n 1)
    if [[ -z "$src" ]]; then
      (cd "$work/src" && apt-get source -qq libcommons-lang3-java >"$work/apt.log" 2>&1) || { cat "$work/apt.log"; exit 1; }
      src=$(find "$work/src" -maxdepth 1 -type d -name 'libcommons-lang3-java-[0-9]*' | sort | tail -n 1)
    fi
    find "$src/src/main/java" -name '*.java' > "$work/files.txt"
    echo "workload: javac on $(wc -l < "$work/files.txt") files of $(basename "$src")"
    main=(-m jdk.compiler/com.sun.tools.javac.Main -nowarn -d "$work/out" @"$work/files.txt")
    hello=(-m jdk.compiler/com.sun.tools.javac.Main -version) ;;
  rhino)
    jar=/usr/share/java/rhino.jar
    [[ -r $jar ]] || { echo "rhino is not installed (apt-get install rhino)" >&2; exit 1; }
    echo "workload: Rhino $(dpkg-query -W -f '${Version}' rhino 2>/dev/null) running bench/workloads/mixed.js"
    printf 'print("hello")\n' > "$work/hello.js"
    main=(-cp "$jar" org.mozilla.javascript.tools.shell.Main "$here/workloads/mixed.js" $((4 * scale)))
    hello=(-cp "$jar" org.mozilla.javascript.tools.shell.Main "$work/hello.js") ;;
  h2)
    jar=/usr/share/java/h2.jar
    [[ -r $jar ]] || { echo "H2 is not installed (apt-get install libh2-java)" >&2; exit 1; }
    echo "workload: H2 $(dpkg-query -W -f '${Version}' libh2-java 2>/dev/null) running bench/workloads/h2.sql in memory"
    echo 'SELECT 1;' > "$work/hello.sql"
    script=$here/workloads/h2.sql
    if (( scale > 1 )); then
      script=$work/h2-x$scale.sql
      mkdir -p "$work"
      for ((i = 0; i < scale; i++)); do cat "$here/workloads/h2.sql"; echo 'DROP ALL OBJECTS;'; done > "$script"
    fi
    main=(-cp "$jar" org.h2.tools.RunScript -url jdbc:h2:mem:bench -script "$script" -showResults)
    hello=(-cp "$jar" org.h2.tools.RunScript -url jdbc:h2:mem:hello -script "$work/hello.sql" -showResults) ;;
  *) echo "WORKLOAD must be javac, rhino or h2, not '$workload'" >&2; exit 2 ;;
esac
if (( scale > 1 )); then
  [[ $workload != javac ]] || { echo "SCALE applies to rhino and h2, not javac" >&2; exit 2; }
  echo "scale: $scale times the work in one JVM"
fi

run() {  # mode -> "wall_s rss_kb cpu_s records dump_bytes estimate span"
  local mode=$1 dir="$work/dumps-$1" tool=$lb
  if [[ $mode == *-base ]]; then
    [[ -n $base_lb ]] || { echo "mode $mode needs BASE_BUILD" >&2; exit 2; }
    tool=$base_lb mode=${mode%-base}
  fi
  rm -rf "$work/out" "$dir"
  mkdir -p "$work/out"
  local t="$work/time.txt" flags=() envs=()
  case $mode in
    plain | nocds)
      [[ $mode == nocds ]] && flags=(-Xshare:off)
      /usr/bin/time -f "%e %M %U %S" -o "$t" java "${flags[@]}" "${main[@]}" >/dev/null 2>&1 ;;
    *)
      case $mode in
        inline | listener) flags=(--jvm-mode "$mode") ;;
        nobudget) flags=(--budget off) ;;
        budget1) flags=(--budget 1) ;;
        nohistory) flags=(--history off) ;;
        inline-all) flags=(--jvm-probe-inlined) ;;
        fast) flags=(--clock fast) ;;
        fastoff) flags=(--clock fast --budget off --jvm-writes java) ;;
        fastnative) flags=(--clock fast --budget off --jvm-writes native) ;;
        natives) flags=(--jvm-writes native) ;;
        nobudgetnative) flags=(--budget off --jvm-writes native) ;;
        idle) envs=(LOOKBACK_ENABLED=0) ;;
        sync) flags=(--jvm-startup sync) ;;
        skip) flags=(--jvm-startup skip) ;;
        nojdk) flags=(--jvm-exclude "java.*" --jvm-exclude "jdk.*" --jvm-exclude "sun.*") ;;
        nomemory) flags=(--jvm-shed-memory off) ;;
        *) echo "unknown mode $mode" >&2; exit 2 ;;
      esac
      env "${envs[@]}" /usr/bin/time -f "%e %M %U %S" -o "$t" "$tool" record -q --dir "$dir" "${flags[@]}" -- java "${main[@]}" \
        >/dev/null 2>&1 ;;
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
  echo "$(awk '{ printf "%s %s %.2f", $1, $2, $3 + $4 }' "$t") $records $bytes $estimate $span"
}

# shellcheck source=bench/busiest_thread.sh
source "$(dirname "${BASH_SOURCE[0]}")/busiest_thread.sh"
declare -A wall rss cpu recs bytes est spans
read -r -a modes <<< "${MODES:-plain nocds inline nobudget inline-all fast}"
[[ ${LISTENER:-0} == 1 ]] && modes+=(listener)
"$(dirname "${BASH_SOURCE[0]}")/machine_header.sh" "$build"
for ((r = 1; r <= ${WARMUP:-1}; r++)); do
  for m in "${modes[@]}"; do
    [[ $m == plain || $m == nocds ]] || run "$m" >/dev/null
  done
  echo "warm-up round $r done" >&2
done
for ((r = 1; r <= rounds; r++)); do
  for m in "${modes[@]}"; do
    read -r w k c n b e s < <(run "$m")
    wall[$m]+="$w " rss[$m]+="$k " cpu[$m]+="$c " recs[$m]+="$n " bytes[$m]+="$b " est[$m]+="$e " spans[$m]+="$s "
    echo "round $r $m: wall ${w}s cpu ${c}s rss ${k}KiB records $n dump ${b}B estimate $e ring span ${s}s" >&2
  done
  echo "round $r/$rounds done" >&2
done
median() { tr ' ' '\n' | { grep -v '^$' || true; } | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(echo "${wall[plain]:-}" | median)
echo
echo "| mode | wall, s (median of $rounds) | vs plain | per-round ratio to plain, median | CPU (user+sys), s | per-round CPU ratio | budget's estimate, busiest thread | its ring holds, s | peak RSS, MiB | trace points/s | exit dump, MiB |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in "${modes[@]}"; do
  w=$(echo "${wall[$m]}" | median)
  k=$(echo "${rss[$m]}" | median)
  n=$(echo "${recs[$m]}" | median)
  b=$(echo "${bytes[$m]}" | median)
  e=$(echo "${est[$m]}" | tr ' ' '\n' | { grep -v '^-*$' || true; } | median)
  s=$(echo "${spans[$m]}" | tr ' ' '\n' | { grep -v '^-*$' || true; } | median)
  # Round by round, this mode's wall time over plain's.
  ratio=$(paste -d ' ' <(echo "${wall[$m]}" | tr ' ' '\n' | { grep -v '^$' || true; }) \
    <(echo "${wall[plain]:-}" | tr ' ' '\n' | { grep -v '^$' || true; }) | awk '$2 > 0 { printf "%f ", $1 / $2 }' | median)
  c=$(echo "${cpu[$m]}" | median)
  # The same for CPU time, which this host's steal disturbs less than wall time
  # (the JIT's threads are in it: compiling the probes is part of their cost).
  cratio=$(paste -d ' ' <(echo "${cpu[$m]}" | tr ' ' '\n' | { grep -v '^$' || true; }) \
    <(echo "${cpu[plain]:-}" | tr ' ' '\n' | { grep -v '^$' || true; }) | awk '$2 > 0 { printf "%f ", $1 / $2 }' | median)
  awk -v m="$m" -v w="$w" -v base="$base" -v ratio="${ratio:-0}" -v c="$c" -v cratio="${cratio:-0}" -v k="$k" -v n="$n" -v b="$b" -v e="${e:--}" -v s="${s:--}" 'BEGIN {
    tps = "-"; mib = "-"
    if (n > 0) tps = sprintf("%.1f M", n / w / 1e6)
    if (b > 0) mib = sprintf("%.1f", b / 1048576)
    vs = base > 0 ? sprintf("%.2fx", w / base) : "-"; pr = ratio > 0 ? sprintf("%.2fx", ratio) : "-"
    cr = cratio > 0 ? sprintf("%.2fx", cratio) : "-"
    printf "| %s | %.2f | %s | %s | %.2f | %s | %s | %s | %.0f | %s | %s |\n", m, w, vs, pr, c, cr, e, s, k / 1024, tps, mib }'
done

# Start-up: the time to the program's first output, plain (CDS on),
# -Xshare:off, and under `record` (default settings), median of 5.
declare -A st
for ((r = 1; r <= 5; r++)); do
  for m in plain nocds inline; do
    case $m in
      plain) /usr/bin/time -f "%e" -o "$work/t" java "${hello[@]}" >/dev/null 2>&1 ;;
      nocds) /usr/bin/time -f "%e" -o "$work/t" java -Xshare:off "${hello[@]}" >/dev/null 2>&1 ;;
      inline) /usr/bin/time -f "%e" -o "$work/t" "$lb" record -q --no-exit-dump --dir "$work/hello-d" -- java "${hello[@]}" \
        >/dev/null 2>&1 ;;
    esac
    st[$m]+="$(cat "$work/t") "
  done
done
echo
plain_st=$(echo "${st[plain]}" | median) inline_st=$(echo "${st[inline]}" | median)
echo "start-up ($workload's first output), median of 5: plain $plain_st s, -Xshare:off $(echo "${st[nocds]}" | median) s," \
  "under record $inline_st s ($(awk -v a="$inline_st" -v b="$plain_st" 'BEGIN { printf "%.2fx", a / b }'))"
