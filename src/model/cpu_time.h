// A thread's CPU time as a function of time, from what a dump knows of it:
// the control thread's readings (CPU section, every dump of a runtime since
// format 6) or the sampler's (SAMPLES, `record --sample`, finer). Between two
// readings the thread is taken to have run at an even rate, so a call's time
// on CPU is CpuAt(exit) - CpuAt(entry), exact to within the interval around
// its edges, and the parts add up: a caller's CPU time is its callees' plus
// its own. Report, chains, the Perfetto export and sql split a call's time
// into working (on CPU) and waiting (the rest) with it.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "format/reader.h"
#include "model/clock_model.h"

namespace lookback::model {

class CpuTimeline {
 public:
  CpuTimeline() = default;
  // Thread `thread_index` of `dump`: its SAMPLES if it has them, else its
  // CPU section; unknown (known() false) without either.
  static CpuTimeline ForThread(const format::Dump& dump, size_t thread_index, const ClockModel& clock);
  // From (CLOCK_MONOTONIC ns, CPU ns) points, both non-decreasing (tests).
  explicit CpuTimeline(std::vector<std::pair<int64_t, int64_t>> points);

  // Places the off-CPU time of each interval between readings in the
  // thread's silences (`quiet`: [from, to) spans with no entry or exit,
  // ordered, disjoint; ExportContext::quiet), longest first, rather than
  // evenly: a blocked thread writes nothing, a working one keeps calling.
  // What the silences cannot hold is spread over the rest of the interval.
  // The CPU time at each reading stays as read.
  void Refine(const std::vector<std::pair<int64_t, int64_t>>& quiet);

  // At least two readings: what the thread did between them is known.
  bool known() const { return points_.size() >= 2; }
  // The thread's CPU time at CLOCK_MONOTONIC `t_ns`, ns: interpolated
  // between readings; before the first and after the last, at the rate of
  // the nearest interval. Calls with non-decreasing times cost O(1).
  double CpuAt(int64_t t_ns);
  // Time on CPU between `a` and `b`, clamped to [0, b - a]. Without
  // readings, b - a (everything counts as working).
  int64_t OnCpu(int64_t a_ns, int64_t b_ns);
  // The span the readings cover.
  int64_t first_ns() const { return points_.empty() ? 0 : points_.front().first; }
  int64_t last_ns() const { return points_.empty() ? 0 : points_.back().first; }

 private:
  double Rate(size_t segment) const;  // CPU ns per ns over [points_[i], points_[i + 1]]
  std::vector<std::pair<int64_t, int64_t>> points_;
  size_t cursor_ = 0;  // the segment of the last query
};

}  // namespace lookback::model
