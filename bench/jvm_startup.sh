#!/usr/bin/env bash
# JVM start-up under `lookback record` (issue 24): the time from launch to the
# program's first byte of output, and for an empty main (no output) to its
# exit, in one interleaved run. Programs (Debian packages, as in
# bench/jvm_workload.sh; the ones not installed are left out):
#   empty   a class whose main returns at once (compiled here with javac)
#   javac   javac -version, as java -m jdk.compiler/com.sun.tools.javac.Main
#   javac-tool  javac -version through the JDK's own javac launcher (which
#           record gives the agent as -J flags)
#   rhino   Rhino printing one line
#   h2      H2 running SELECT 1 in memory
# Modes: plain; record (the default settings); sync (--jvm-startup sync: the
# JDK's start-up classes retransformed with probes before main, the default
# before 2026-11-27); skip (--jvm-startup skip: the JDK classes first loaded
# in the JVM's first second get probes as they load, the default before
# 2026-11-28); MODE-base with BASE_BUILD's lookback.
# Prints the median per program and mode, and the ratio to plain.
#   bench/jvm_startup.sh [BUILD_DIR] [ROUNDS]     MODES="plain record sync" PROGRAMS="empty javac javac-tool rhino h2"
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
rounds=${2:-9}
work=${LOOKBACK_JVM_STARTUP:-/tmp/lookback-jvm-startup}
lb=$build/lookback
base_lb=${BASE_BUILD:+$(cd "$BASE_BUILD" && pwd)/lookback}
mkdir -p "$work"
read -r -a modes <<< "${MODES:-plain record sync}"
read -r -a wanted <<< "${PROGRAMS:-empty javac rhino h2}"

printf 'public class Empty { public static void main(String[] a) {} }\n' > "$work/Empty.java"
javac -d "$work" "$work/Empty.java"
printf 'print("hello")\n' > "$work/hello.js"
echo 'SELECT 1;' > "$work/hello.sql"
declare -A argv launcher
programs=()
for p in "${wanted[@]}"; do
  case $p in
    empty) argv[$p]="-cp $work Empty" ;;
    javac) argv[$p]="-m jdk.compiler/com.sun.tools.javac.Main -version" ;;
    javac-tool) argv[$p]="-version" launcher[$p]=javac ;;
    rhino) [[ -r /usr/share/java/rhino.jar ]] || continue
           argv[$p]="-cp /usr/share/java/rhino.jar org.mozilla.javascript.tools.shell.Main $work/hello.js" ;;
    h2) [[ -r /usr/share/java/h2.jar ]] || continue
        argv[$p]="-cp /usr/share/java/h2.jar org.h2.tools.RunScript -url jdbc:h2:mem:hello -script $work/hello.sql -showResults" ;;
    *) echo "unknown program $p" >&2; exit 2 ;;
  esac
  programs+=("$p")
done

# One run: milliseconds from launch to the first byte on stdout, or to the
# exit when there is none. (stderr is not watched: a JVM writes nothing
# there unless something is wrong.)
run() {  # program mode
  local p=$1 mode=$2 tool=$lb cmd=()
  if [[ $mode == *-base ]]; then
    [[ -n $base_lb ]] || { echo "mode $mode needs BASE_BUILD" >&2; exit 2; }
    tool=$base_lb mode=${mode%-base}
  fi
  read -r -a jargs <<< "${argv[$p]}"
  local java=${launcher[$p]:-java}
  case $mode in
    plain) cmd=("$java" "${jargs[@]}") ;;
    record) cmd=("$tool" record -q --dir "$work/dumps" -- "$java" "${jargs[@]}") ;;
    sync) cmd=("$tool" record -q --jvm-startup sync --dir "$work/dumps" -- "$java" "${jargs[@]}") ;;
    skip) cmd=("$tool" record -q --jvm-startup skip --dir "$work/dumps" -- "$java" "${jargs[@]}") ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  rm -rf "$work/dumps"
  local t0 t1
  t0=$(date +%s%N)
  t1=$({ "${cmd[@]}" 2>/dev/null; } | { if IFS= read -r -n 1 _; then date +%s%N; cat >/dev/null; else date +%s%N; fi; })
  echo $(((t1 - t0) / 1000000))
}

# shellcheck source=bench/median.sh
source "$(dirname "${BASH_SOURCE[0]}")/median.sh"

"$(dirname "${BASH_SOURCE[0]}")/machine_header.sh" "$build"
echo "# $(java -version 2>&1 | head -n 1); $rounds interleaved rounds; ms to the first output (empty: to the exit)"
declare -A ms
for ((r = 1; r <= rounds; r++)); do
  for p in "${programs[@]}"; do
    for m in "${modes[@]}"; do ms[$p,$m]+="$(run "$p" "$m") "; done
  done
done
header="| program |" rule="|---|"
for m in "${modes[@]}"; do header+=" $m |"; rule+="---:|"; done
echo "$header"
echo "$rule"
for p in "${programs[@]}"; do
  plain=$(tr ' ' '\n' <<< "${ms[$p,${modes[0]}]}" | grep . | median)
  line="| $p |"
  for m in "${modes[@]}"; do
    med=$(tr ' ' '\n' <<< "${ms[$p,$m]}" | grep . | median)
    line+=" $med ms ($(awk -v a="$med" -v b="$plain" 'BEGIN {printf "%.2f", a / b}')×) |"
  done
  echo "$line"
done
