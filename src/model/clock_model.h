// TSC ticks -> nanoseconds, from a dump's CLOCK section.
#pragma once

#include <cstdint>

#include "format/reader.h"

namespace lookback::model {

class ClockModel {
 public:
  explicit ClockModel(const format::ClockInfo& c);
  // CLOCK_MONOTONIC nanoseconds at `tsc` (may be negative for a bogus tsc).
  int64_t MonotonicNs(uint64_t tsc) const;
  int64_t RealtimeNs(uint64_t tsc) const;
  // Length of `ticks` in ns.
  double TicksToNs(uint64_t ticks) const { return static_cast<double>(ticks) * ns_per_tick_; }
  double TscGhz() const { return ns_per_tick_ > 0 ? 1.0 / ns_per_tick_ : 0; }
  bool valid() const { return ns_per_tick_ > 0; }

 private:
  double ns_per_tick_ = 0;
  // ns = (ticks * mult_) >> 32: integer math, exact to well below 1 ns per
  // second of distance from the reference (long double was the decoder's
  // hottest instruction).
  unsigned __int128 mult_ = 0;
  uint64_t ref_tsc_ = 0;
  int64_t ref_mono_ = 0, ref_real_ = 0;
};

}  // namespace lookback::model
