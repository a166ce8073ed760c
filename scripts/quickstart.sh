#!/usr/bin/env bash
# Builds lookback and its example, runs the janky example under
# `lookback record` with a frame-time objective, and shows what the dump the
# detector wrote holds: where the time of the slow frame went.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build --target lookback lookback_runtime example_jank
out=build/example-dumps
rm -rf "$out"
echo "== lookback record --slow-scope frame:50ms --post-trigger 300ms -- build/bin/jank 100"
echo "   (a frame longer than 50 ms, three vsyncs, triggers a dump 300 ms later; no dump at exit)"
build/lookback record --dir "$out" --slow-scope frame:50ms --post-trigger 300ms --no-exit-dump -- build/bin/jank 100
dump=$(ls "$out"/*.lbk | head -n 1)
echo
echo "== lookback info $dump"
build/lookback info "$dump"
echo
echo "== lookback report $dump --top 8   (where the time went)"
build/lookback report "$dump" --top 8
echo
echo "== lookback convert $dump --to perfetto"
build/lookback convert "$dump" --to perfetto -o "$out/jank.pftrace"
echo "Open $out/jank.pftrace in https://ui.perfetto.dev: the ui thread's track shows the frames,"
echo "the 250 ms wait_for_reply() inside the slow one, and the trigger as an instant event."
