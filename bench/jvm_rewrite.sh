#!/usr/bin/env bash
# The JVM agent's class hook, offline (docs/jvm.md, "Start-up"): rewriting real
# class files with bench/jvm_rewrite_bench, one build or two side by side.
#   bench/jvm_rewrite.sh BUILD_DIR [BASE_BUILD_DIR] [ROUNDS]
# The classes: java.base and jdk.compiler from the JDK's modules (jimage
# extract), and the jars of H2 and Rhino when installed (libh2-java, rhino),
# the programs bench/jvm_workload.sh runs. With BASE_BUILD_DIR both builds run
# in turn ROUNDS times (default 3) and their rewritten classes are compared
# byte for byte: a change meant to make the rewriter faster must not change
# its output.
set -euo pipefail
build=$(cd "$1" && pwd)
base=${2:+$(cd "$2" && pwd)}
rounds=${3:-3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
"$here/machine_header.sh" "$build"
work=${LOOKBACK_REWRITE_CORPUS:-/tmp/lookback-rewrite-corpus}
java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
if [[ ! -d $work/done ]]; then
  rm -rf "$work" && mkdir -p "$work"
  for m in java.base jdk.compiler; do
    "$java_home/bin/jimage" extract --include "regex:/$m/.*" --dir "$work/jdk" "$java_home/lib/modules"
  done
  for jar in /usr/share/java/h2.jar /usr/share/java/rhino.jar; do
    [[ -r $jar ]] && mkdir -p "$work/$(basename "$jar" .jar)" && (cd "$work/$(basename "$jar" .jar)" && unzip -qo "$jar" '*.class')
  done
  mkdir -p "$work/done"
fi
dirs=()
for d in "$work"/jdk/* "$work"/h2 "$work"/rhino; do [[ -d $d ]] && dirs+=("$d"); done
echo "# corpus: ${dirs[*]}"
for ((r = 0; r < rounds; ++r)); do
  [[ -n $base ]] && echo "base: $("$base/bench/jvm_rewrite_bench" --rounds 3 "${dirs[@]}" | tail -1)"
  echo "this: $("$build/bench/jvm_rewrite_bench" --rounds 3 "${dirs[@]}" | tail -1)"
done
"$build/bench/jvm_rewrite_bench" --rounds 1 "${dirs[@]}" | head -1
if [[ -n $base ]]; then
  rm -rf "$work/out-base" "$work/out-this"
  "$base/bench/jvm_rewrite_bench" --rounds 1 --out "$work/out-base" "${dirs[@]}" >/dev/null
  "$build/bench/jvm_rewrite_bench" --rounds 1 --out "$work/out-this" "${dirs[@]}" >/dev/null
  if diff -rq "$work/out-base" "$work/out-this" >/dev/null; then echo "output: byte-identical"; else echo "output: DIFFERS"; diff -rq "$work/out-base" "$work/out-this" | head; fi
fi
