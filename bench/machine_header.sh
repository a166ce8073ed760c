#!/usr/bin/env bash
# Prints the machine a benchmark ran on, as markdown comment lines: the CPU
# model and vendor (the hot path's cost differs between AMD and Intel, see
# docs/performance.md), the load, and, when BUILD_DIR has machine_probe, the
# cost of one rdtsc and the TSC rate. Every hot-path benchmark prints it first.
#
#   bench/machine_header.sh [BUILD_DIR]
set -uo pipefail
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)
vendor=$(grep -m1 'vendor_id' /proc/cpuinfo | cut -d: -f2 | xargs)
family=$(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | xargs)
cpumodel=$(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | xargs)
echo "# CPU: $(nproc) x $model ($vendor, family $family model $cpumodel), load $(cut -d' ' -f1-3 /proc/loadavg)"
probe=${1:+$1/bench/machine_probe}
if [[ -n $probe && -x $probe ]]; then
  out=$("$probe" 2>/dev/null)
  rdtsc=$(sed -n 's/^rdtsc back to back: *\([0-9.]*\) ns.*/\1/p' <<<"$out")
  rate=$(sed -n 's/^TSC rate against CLOCK_MONOTONIC over 200 ms: *\([0-9.]*\) MHz.*/\1/p' <<<"$out")
  echo "# rdtsc back to back: ${rdtsc:-?} ns; TSC ${rate:-?} MHz"
fi
