#!/usr/bin/env bash
# The layering check (shared/style.md, "Layout that shows the architecture"):
# every #include "DIR/..." in src/ must point at a layer its own folder may
# use, and the in-process parts (runtime, front-ends, the record format) must
# not include the reader side or the libraries it brings (fmt, SQLite,
# elfutils, zstd, CLI11). Prints each violation as FILE:LINE and exits 1 if
# there is one. Run by .ci/run.
#
#   common  <  format  <  symbolize  <  model  <  exporters, analyses  <  cli
#   parquet (a leaf library: common only)
#   import (foreign traces into dumps: format's writer side, common, and the
#   JVM front-end's pure Java-name functions, so imported methods are named
#   as the agent names them); cli uses it
#   runtime, frontends: format's writer side (not format/reader.h), common,
#   the public API (include/lookback), and runtime (front-ends reach the
#   recorder only through it)
set -uo pipefail
cd "$(dirname "$0")/.."

allowed() {  # layer -> the folders its files may include
  case $1 in
    common) echo "common" ;;
    format) echo "format common" ;;
    parquet) echo "parquet common" ;;
    import) echo "import format common frontends" ;;
    symbolize) echo "symbolize format common" ;;
    model) echo "model symbolize format common" ;;
    exporters) echo "exporters model symbolize format common" ;;
    analyses) echo "analyses model symbolize format common parquet" ;;
    runtime) echo "runtime format common lookback" ;;
    frontends) echo "frontends runtime format common lookback" ;;
    cli) echo "cli analyses exporters model symbolize format common parquet runtime lookback import" ;;
    *) echo "" ;;
  esac
}
in_process() { [[ $1 == runtime || $1 == frontends || $1 == format || $1 == common ]]; }

bad=0
while IFS= read -r file; do
  layer=${file#src/}
  layer=${layer%%/*}
  ok=" $(allowed "$layer") "
  [[ $ok == "  " ]] && { echo "$file: folder '$layer' has no place in the layering (add it to $0)"; bad=1; continue; }
  while IFS=: read -r line text; do
    target=$(sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/' <<<"$text")
    dir=${target%%/*}
    [[ $target == */* ]] || continue  # a file beside this one
    if [[ $ok != *" $dir "* ]]; then
      echo "$file:$line: $layer may not include $target"
      bad=1
    elif in_process "$layer" && [[ $layer != format || $file != src/format/reader* ]] && [[ $target == format/reader.h ]]; then
      echo "$file:$line: $layer may not include the reader side ($target)"
      bad=1
    fi
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file")
  if in_process "$layer" && [[ $file != src/format/reader* ]]; then
    while IFS=: read -r line text; do
      echo "$file:$line: $layer runs in traced processes and may not use <${text#*<}"
      bad=1
    done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(fmt/|sqlite3|elfutils/|zstd|CLI/)' "$file")
  fi
done < <(find src -name '*.cc' -o -name '*.h' -o -name '*.c' | sort)
if [[ $bad -eq 0 ]]; then
  echo "layering: ok ($(find src -name '*.cc' -o -name '*.h' -o -name '*.c' | wc -l) files)"
fi
exit $bad
