#!/usr/bin/env bash
# Builds lookback and its example, runs the janky example under
# `lookback record`, and shows what the dump taken during a stall holds.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target lookback lookback_runtime example_jank
out=build/example-dumps
rm -rf "$out"
echo "== lookback record -- build/bin/jank 100"
build/lookback record --dir "$out" -- build/bin/jank 100
first=$(ls "$out"/*.lbk | sort -t- -k3 -n | head -n 1)
echo
echo "== lookback info $first"
build/lookback info "$first"

echo
echo "== lookback convert $first --to perfetto --window -1s.. (the last second before the stall's dump)"
build/lookback convert "$first" --to perfetto --window -1s.. -o build/example-dumps/jank-stall.pftrace
echo "Open build/example-dumps/jank-stall.pftrace in https://ui.perfetto.dev to see the frames and the stall."
