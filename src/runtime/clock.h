// TSC <-> CLOCK_MONOTONIC / CLOCK_REALTIME calibration.
//
// This VM exposes no TSC frequency (no sysfs entry, CPUID 0x15 is zero), so
// lookback measures it: a (tsc, monotonic, realtime) triple at start-up and
// another at dump time give ticks per ns over the whole run. Reading each
// triple brackets clock_gettime between two rdtsc and keeps the tightest of a
// few tries, so the error is the bracket width over the baseline.
#pragma once

#include <cstdint>

namespace lookback::rt {

struct ClockPair {
  uint64_t tsc = 0;
  uint64_t mono_ns = 0;
  uint64_t real_ns = 0;
  uint64_t bracket_ticks = 0;  // width of the rdtsc bracket around clock_gettime
};

ClockPair ReadClockPair() __attribute__((no_instrument_function));

struct Calibration {
  uint64_t ticks = 0;  // ticks elapsed ...
  uint64_t ns = 0;     // ... over this many ns of CLOCK_MONOTONIC
  uint32_t uncertainty_ppb = 0;
};

// Calibration from two pairs; `min_baseline_ns` is enforced by the caller.
Calibration Calibrate(const ClockPair& a, const ClockPair& b) __attribute__((no_instrument_function));

uint64_t MonotonicNs() __attribute__((no_instrument_function));

}  // namespace lookback::rt
