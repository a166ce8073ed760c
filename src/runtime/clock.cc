#include "runtime/clock.h"

#include <time.h>
#include <x86intrin.h>

namespace lookback::rt {
namespace {
uint64_t ToNs(const timespec& ts) { return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec; }
}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ToNs(ts);
}

ClockPair ReadClockPair() {
  ClockPair best;
  best.bracket_ticks = ~uint64_t{0};
  for (int i = 0; i < 7; ++i) {
    timespec mono, real;
    const uint64_t t0 = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &mono);
    const uint64_t t1 = __rdtsc();
    clock_gettime(CLOCK_REALTIME, &real);
    if (t1 - t0 < best.bracket_ticks) {
      best.bracket_ticks = t1 - t0;
      best.tsc = t0 + (t1 - t0) / 2;
      best.mono_ns = ToNs(mono);
      best.real_ns = ToNs(real);
    }
  }
  return best;
}

Calibration Calibrate(const ClockPair& a, const ClockPair& b) {
  Calibration c;
  if (b.tsc <= a.tsc || b.mono_ns <= a.mono_ns) return c;
  c.ticks = b.tsc - a.tsc;
  c.ns = b.mono_ns - a.mono_ns;
  const unsigned __int128 err = static_cast<unsigned __int128>(a.bracket_ticks / 2 + b.bracket_ticks / 2) * 1000000000u;
  const unsigned __int128 ppb = err / c.ticks;
  c.uncertainty_ppb = ppb > 0xffffffffu ? 0xffffffffu : static_cast<uint32_t>(ppb);
  return c;
}

}  // namespace lookback::rt
