#include "model/cpu_time.h"

#include <algorithm>

#include "model/walk.h"

namespace lookback::model {

CpuTimeline CpuTimeline::ForThread(const format::Dump& dump, size_t thread_index, const ClockModel& clock) {
  std::vector<std::pair<int64_t, int64_t>> points;
  auto add = [&](uint64_t tsc, uint64_t cpu_ns) {
    const int64_t t = clock.MonotonicNs(tsc), c = static_cast<int64_t>(cpu_ns);
    // Readings out of order (a damaged dump) are dropped, not believed.
    if (!points.empty() && (t < points.back().first || c < points.back().second)) return;
    if (!points.empty() && t == points.back().first) return;
    points.emplace_back(t, c);
  };
  for (const auto& s : dump.samples) {
    if (s.thread_index != thread_index) continue;
    for (const auto& v : s.samples) add(v[format::kSampleTsc], v[format::kSampleCpuNs]);
  }
  if (points.size() < 2) {
    points.clear();
    for (const auto& c : dump.cpu) {
      if (c.thread_index != thread_index) continue;
      for (const auto& r : c.readings) add(r.tsc, r.cpu_ns);
    }
  }
  return CpuTimeline(std::move(points));
}

CpuTimeline CpuTimeline::ForWalkedThread(const ExportContext& ctx, const format::ThreadInfo& t) {
  if (ctx.dump == nullptr || ctx.dump->threads.empty()) return CpuTimeline();
  // `t` may be a thread driven by hand (tests), not one of the dump's.
  const auto at = reinterpret_cast<uintptr_t>(&t), first = reinterpret_cast<uintptr_t>(ctx.dump->threads.data());
  if (at < first || at >= first + ctx.dump->threads.size() * sizeof(format::ThreadInfo)) return CpuTimeline();
  const size_t index = (at - first) / sizeof(format::ThreadInfo);
  CpuTimeline timeline = ForThread(*ctx.dump, index, ctx.clock);
  if (index < ctx.quiet.size()) timeline.Refine(ctx.quiet[index]);
  return timeline;
}

CpuTimeline::CpuTimeline(std::vector<std::pair<int64_t, int64_t>> points) : points_(std::move(points)) { ComputeRates(); }

void CpuTimeline::Refine(const std::vector<std::pair<int64_t, int64_t>>& quiet) {
  if (!known() || quiet.empty()) return;
  std::vector<std::pair<int64_t, int64_t>> out;
  out.reserve(points_.size() * 2);
  out.push_back(points_[0]);
  size_t q = 0;
  struct Gap {
    int64_t from, to, wait;
  };
  std::vector<Gap> gaps;
  for (size_t i = 0; i + 1 < points_.size(); ++i) {
    // Not structured bindings: clang 14 cannot capture those in the lambda below.
    const int64_t t0 = points_[i].first, c0 = points_[i].second;
    const int64_t t1 = points_[i + 1].first, c1 = points_[i + 1].second;
    const int64_t dt = t1 - t0, dc = c1 - c0;
    int64_t off = dt - dc;
    while (q < quiet.size() && quiet[q].second <= t0) ++q;
    gaps.clear();
    for (size_t k = q; k < quiet.size() && quiet[k].first < t1; ++k) {
      const int64_t from = std::max(quiet[k].first, t0), to = std::min(quiet[k].second, t1);
      if (to > from) gaps.push_back({from, to, 0});
    }
    if (off <= 0 || gaps.empty() || dt <= 0) {
      out.push_back(points_[i + 1]);
      continue;
    }
    std::sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) { return a.to - a.from > b.to - b.from; });
    int64_t used_len = 0, gap_cpu = 0;
    for (Gap& g : gaps) {
      if (off <= 0) break;
      g.wait = std::min(g.to - g.from, off);
      off -= g.wait;
      used_len += g.to - g.from;
      gap_cpu += (g.to - g.from) - g.wait;
    }
    gaps.erase(std::remove_if(gaps.begin(), gaps.end(), [](const Gap& g) { return g.wait == 0; }), gaps.end());
    std::sort(gaps.begin(), gaps.end(), [](const Gap& a, const Gap& b) { return a.from < b.from; });
    // Outside the chosen silences the thread ran at this rate (0..1).
    const double rest = dt > used_len ? std::clamp(static_cast<double>(dc - gap_cpu) / static_cast<double>(dt - used_len), 0.0, 1.0) : 0.0;
    double t = static_cast<double>(t0), c = static_cast<double>(c0);
    auto emit = [&](int64_t at, double cpu) {
      cpu = std::min(std::max(cpu, static_cast<double>(out.back().second)), static_cast<double>(c1));
      if (at <= out.back().first) return;
      out.emplace_back(at, static_cast<int64_t>(cpu + 0.5));
    };
    for (const Gap& g : gaps) {
      c += rest * (static_cast<double>(g.from) - t);
      emit(g.from, c);
      c += static_cast<double>((g.to - g.from) - g.wait);
      t = static_cast<double>(g.to);
      emit(g.to, c);
    }
    if (t1 > out.back().first) out.push_back(points_[i + 1]);
  }
  points_ = std::move(out);
  cursor_ = 0;
  ComputeRates();
}

void CpuTimeline::ComputeRates() {
  rates_.assign(points_.size() > 1 ? points_.size() - 1 : 0, 1.0);
  for (size_t i = 0; i + 1 < points_.size(); ++i) {
    const int64_t dt = points_[i + 1].first - points_[i].first;
    if (dt > 0)
      rates_[i] = std::clamp(static_cast<double>(points_[i + 1].second - points_[i].second) / static_cast<double>(dt), 0.0, 1.0);
  }
}

double CpuTimeline::CpuAtSlow(int64_t t) {
  if (points_.empty()) return static_cast<double>(t);
  if (points_.size() == 1) return static_cast<double>(points_[0].second) + static_cast<double>(t - points_[0].first);
  if (t <= points_.front().first) {
    cursor_ = 0;
    return static_cast<double>(points_[0].second) - rates_[0] * static_cast<double>(points_[0].first - t);
  }
  if (t >= points_.back().first) {
    cursor_ = points_.size() - 2;
    return static_cast<double>(points_.back().second) + rates_.back() * static_cast<double>(t - points_.back().first);
  }
  // The segment holding t: forward from the cursor (times mostly increase),
  // else by bisection.
  if (points_[cursor_].first > t) {
    cursor_ = static_cast<size_t>(std::upper_bound(points_.begin(), points_.end(), t,
                                                   [](int64_t v, const auto& p) { return v < p.first; }) -
                                  points_.begin()) -
              1;
  }
  while (cursor_ + 2 < points_.size() && points_[cursor_ + 1].first <= t) ++cursor_;
  return static_cast<double>(points_[cursor_].second) + rates_[cursor_] * static_cast<double>(t - points_[cursor_].first);
}

int64_t CpuTimeline::OnCpu(int64_t a, int64_t b) {
  if (b <= a) return 0;
  if (!known()) return b - a;
  const double on = CpuAt(b) - CpuAt(a);
  return std::clamp<int64_t>(static_cast<int64_t>(on + 0.5), 0, b - a);
}

void WaitTracker::Reset(CpuTimeline timeline) {
  cpu_ = std::move(timeline);
  stack_.clear();
  root_wait_ = 0;
}

void WaitTracker::Enter(int64_t ts, bool waits) { stack_.push_back(Frame{ts, cpu_.CpuAt(ts), 0, waits}); }

WaitTracker::Split WaitTracker::Exit(int64_t ts) {
  Split s;
  if (stack_.empty()) return s;
  const Frame f = stack_.back();
  stack_.pop_back();
  s.total = std::max<int64_t>(0, ts - f.start);
  s.children_wait = std::min(f.children_wait, s.total);
  s.wait = s.children_wait;
  if (f.waits) {
    s.wait = s.total;
  } else if (cpu_.known()) {
    const int64_t on = std::clamp<int64_t>(static_cast<int64_t>(cpu_.CpuAt(ts) - f.cpu_start + 0.5), 0, s.total);
    s.wait = std::max(s.wait, s.total - on);
  }
  if (!stack_.empty()) {
    stack_.back().children_wait += s.wait;
  } else {
    root_wait_ += s.wait;
  }
  return s;
}

}  // namespace lookback::model
