#!/usr/bin/env bash
# How close fast-clock timings are to exact ones on one program (issue 18):
# runs it under `lookback record` in exact and fast mode alternately, and
# compares each function's total inclusive time (`report --format json`),
# median over the rounds, for every function above 1 % of the traced time.
# Two exact medians (odd and even rounds) give the run-to-run noise floor the
# comparison cannot go below. Also prints the bounds `lookback info` reports
# for the fast dumps (median, 99th percentile, largest).
#
#   bench/fast_clock_accuracy.sh [--rounds N] [--buffer-size SIZE] [--lookback PATH] -- PROGRAM [ARGS...]
#
# The ring must hold the whole run (--buffer-size, default 1G): totals of a
# wrapped window are totals of different stretches in the two modes.
set -euo pipefail

rounds=5
buffer=1G
lookback="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/lookback"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --buffer-size) buffer=$2; shift 2 ;;
    --lookback) lookback=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--rounds N] [--buffer-size SIZE] [--lookback PATH] -- PROGRAM [ARGS...]" >&2; exit 2 ;;
  esac
done
[[ $# -gt 0 ]] || { echo "$0: no program" >&2; exit 2; }
work=$(mktemp -d /tmp/fast-clock-accuracy.XXXXXX)
trap 'rm -rf "$work"' EXIT

for ((r = 0; r < rounds; ++r)); do
  for clock in exact fast; do
    dir="$work/$clock-$r"
    "$lookback" record -q --clock "$clock" --buffer-size "$buffer" --dir "$dir" -- "$@" >/dev/null
    dump=$(ls "$dir"/*.lbk | head -n 1)
    "$lookback" report --format json "$dump" >"$work/$clock-$r.json"
    if [[ $clock == fast ]]; then
      "$lookback" info "$dump" | grep -A1 "fast clock on" | tr -s ' ' >>"$work/bounds.txt" || true
    fi
    lost=$(jq '.repairs.lost_records' "$work/$clock-$r.json")
    [[ $lost == 0 ]] || { echo "$0: the ring wrapped ($lost records lost): raise --buffer-size" >&2; exit 1; }
    rm -rf "$dir"
  done
done

# name -> median inclusive ns per mode; exact split into odd/even rounds for the noise floor.
jq -n --argjson rounds "$rounds" '
  def median: sort | if length == 0 then null else .[(length - 1) / 2 | floor] end;
  def by_name($runs): [ $runs[] | .functions[] | {name, ns: .inclusive_ns} ] | group_by(.name)
                      | map({key: .[0].name, value: (map(.ns) | median)}) | from_entries;
  [inputs] as $all
  | ($all | map(select(.mode == "exact")) | map(.report)) as $exact
  | ($all | map(select(.mode == "fast")) | map(.report)) as $fast
  | (by_name($exact)) as $e | (by_name($fast)) as $f
  | (by_name([$exact | to_entries[] | select(.key % 2 == 0) | .value])) as $e0
  | (by_name([$exact | to_entries[] | select(.key % 2 == 1) | .value])) as $e1
  | ($exact | map(.thread_time_ns) | median) as $whole
  | [ $e | to_entries[] | select(.value > $whole / 100)
      | {name: .key, exact: .value, fast: ($f[.key] // 0),
         dev: ((($f[.key] // 0) - .value) / .value * 100),
         noise: (if ($e0[.key] and $e1[.key]) then (($e0[.key] - $e1[.key]) / .value * 100) else null end)} ]
  | sort_by(-.exact)
  | "| function | exact ms | fast ms | fast vs exact | exact vs exact (noise) |",
    "|---|---:|---:|---:|---:|",
    (.[] | "| \(.name) | \(.exact / 1e6 * 100 | round / 100) | \(.fast / 1e6 * 100 | round / 100) | \(.dev * 100 | round / 100) % | \(if .noise == null then "–" else "\(.noise * 100 | round / 100) %" end) |"),
    "",
    "largest deviation fast vs exact: \(map(.dev | fabs) | max * 100 | round / 100) %; exact vs exact: \(map(.noise // 0 | fabs) | max * 100 | round / 100) %"
' -r < <(for ((r = 0; r < rounds; ++r)); do
           jq -c '{mode: "exact", report: .}' "$work/exact-$r.json"
           jq -c '{mode: "fast", report: .}' "$work/fast-$r.json"
         done)
echo
echo "fast-clock bounds per round (lookback info):"
cat "$work/bounds.txt"
