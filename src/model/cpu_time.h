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

struct ExportContext;  // walk.h

class CpuTimeline {
 public:
  CpuTimeline() = default;
  // Thread `thread_index` of `dump`: its SAMPLES if it has them, else its
  // CPU section; unknown (known() false) without either.
  static CpuTimeline ForThread(const format::Dump& dump, size_t thread_index, const ClockModel& clock);
  // The same for a thread a walk is at (`t` is one of ctx.dump->threads),
  // refined with the walk's silences (ExportContext::quiet).
  static CpuTimeline ForWalkedThread(const ExportContext& ctx, const format::ThreadInfo& t);
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
  double CpuAt(int64_t t_ns) {
    // The common case inline: within the segment of the last query.
    if (cursor_ + 1 < points_.size() && points_[cursor_].first <= t_ns && t_ns < points_[cursor_ + 1].first)
      return static_cast<double>(points_[cursor_].second) + rates_[cursor_] * static_cast<double>(t_ns - points_[cursor_].first);
    return CpuAtSlow(t_ns);
  }
  // Time on CPU between `a` and `b`, clamped to [0, b - a]. Without
  // readings, b - a (everything counts as working).
  int64_t OnCpu(int64_t a_ns, int64_t b_ns);
  // The span the readings cover.
  int64_t first_ns() const { return points_.empty() ? 0 : points_.front().first; }
  int64_t last_ns() const { return points_.empty() ? 0 : points_.back().first; }

 private:
  double CpuAtSlow(int64_t t_ns);
  void ComputeRates();
  std::vector<std::pair<int64_t, int64_t>> points_;
  std::vector<double> rates_;  // CPU ns per ns over [points_[i], points_[i + 1]], clamped to 0..1
  size_t cursor_ = 0;  // the segment of the last query
};

// Each call's waiting as a walk goes (Enter and Exit in walk order, one
// thread at a time): all of a waiting function's time; otherwise what the
// readings say was off CPU, and never less than its callees waited (a
// waiting callee's share of the readings' even rate is its caller's CPU
// time). So a caller's wait is its callees' plus its own, as with self time.
class WaitTracker {
 public:
  // A new thread, with its (refined) timeline.
  void Reset(CpuTimeline timeline);
  void Enter(int64_t ts_ns, bool waits);
  struct Split {
    int64_t total = 0;          // the call's duration
    int64_t wait = 0;           // of it, waiting
    int64_t children_wait = 0;  // of that, in its callees
  };
  Split Exit(int64_t ts_ns);
  // Waiting of the thread's outermost calls so far.
  int64_t root_wait() const { return root_wait_; }
  CpuTimeline& timeline() { return cpu_; }

 private:
  struct Frame {
    int64_t start;
    double cpu_start;
    int64_t children_wait;
    bool waits;
  };
  CpuTimeline cpu_;
  std::vector<Frame> stack_;
  int64_t root_wait_ = 0;
};

}  // namespace lookback::model
