#include "model/clock_model.h"

namespace lookback::model {

ClockModel::ClockModel(const format::ClockInfo& c)
    : ns_per_tick_(c.ticks > 0 && c.ns > 0 ? static_cast<double>(c.ns) / static_cast<double>(c.ticks) : 0),
      ref_tsc_(c.ref_tsc),
      ref_mono_(static_cast<int64_t>(c.ref_monotonic_ns)),
      ref_real_(static_cast<int64_t>(c.ref_realtime_ns)) {
  if (c.ticks > 0 && c.ns > 0) mult_ = (static_cast<unsigned __int128>(c.ns) << 32) / c.ticks;
}

int64_t ClockModel::MonotonicNs(uint64_t tsc) const {
  // Difference first, in signed 64 bits, so precision does not depend on uptime.
  if (tsc >= ref_tsc_) return ref_mono_ + static_cast<int64_t>(((tsc - ref_tsc_) * mult_) >> 32);
  return ref_mono_ - static_cast<int64_t>(((ref_tsc_ - tsc) * mult_) >> 32);
}

int64_t ClockModel::RealtimeNs(uint64_t tsc) const { return MonotonicNs(tsc) - ref_mono_ + ref_real_; }

}  // namespace lookback::model
