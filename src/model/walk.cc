#include "model/walk.h"

#include <cerrno>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "symbolize/symbolizer.h"

namespace lookback::model {
namespace {

constexpr int64_t kNoLimitLow = std::numeric_limits<int64_t>::min();
constexpr int64_t kNoLimitHigh = std::numeric_limits<int64_t>::max();

struct Open {
  uint64_t key;
  bool emitted;
  uint8_t enter_flags;
};

// One pass over a thread. With `sink == nullptr` it only finds the frames
// cut at the window start (exits that match nothing); with a sink it emits.
class ThreadPass {
 public:
  ThreadPass(const ExportContext& ctx, const format::ThreadInfo& t, TraceSink* sink, int64_t wstart, int64_t wend)
      : ctx_(ctx), t_(t), sink_(sink), wstart_(wstart), wend_(wend) {}

  void Seed(const std::vector<uint64_t>& cut_innermost_first) {
    for (auto it = cut_innermost_first.rbegin(); it != cut_innermost_first.rend(); ++it)
      stack_.push_back({*it, false, kSliceStartCut});
    summary_.start_cut = cut_innermost_first.size();
  }

  // Returns false once past the window end (the caller stops feeding).
  bool OnEvent(const Event& e) {
    if (e.kind == EventKind::kUnwindTo) {
      pending_unwind_ = e.key;
      return true;
    }
    if (e.kind == EventKind::kResume) return true;
    ++summary_.events;
    // The first pass needs no times: it only looks for exits that match nothing.
    const int64_t ns = sink_ != nullptr ? ctx_.clock.MonotonicNs(e.tsc) : 0;
    bounded_ = sink_ != nullptr && e.lo != e.hi;
    if (bounded_) {
      bound_lo_ = ctx_.clock.MonotonicNs(e.lo);
      bound_hi_ = ctx_.clock.MonotonicNs(e.hi);
    }
    if (ns >= wend_) return false;
    if (sink_ != nullptr && first_ns_ == kNoLimitHigh) first_ns_ = ns;  // the ring's first event
    // Frames begun earlier open at the window start, or at the ring's first
    // event if the window reaches back further than the ring (no invented time).
    if (sink_ != nullptr && !opened_ && ns >= wstart_) OpenWindow(std::max(wstart_, first_ns_));
    if (e.kind == EventKind::kEnter) {
      if (pending_unwind_ != 0) UnwindTo(pending_unwind_, ns);
      pending_unwind_ = 0;
      const bool emit = opened_;
      stack_.push_back({e.key, emit, 0});
      if (emit) {
        if (bounded_) sink_->EventBound(bound_lo_, bound_hi_);
        sink_->Enter(e.key, ns, Depth(), 0);
      }
      return true;
    }
    pending_unwind_ = 0;
    size_t at = stack_.size();
    while (at > 0 && stack_[at - 1].key != e.key) --at;
    if (at == 0) {
      if (sink_ == nullptr) {
        cut_.push_back(e.key);
      } else {
        ++summary_.unmatched_exits;
      }
      return true;
    }
    while (stack_.size() > at) Pop(ns, kSliceUnwound);
    Pop(ns, 0);
    return true;
  }

  void Finish() {
    if (sink_ == nullptr) return;
    bounded_ = false;  // frames still open end at the snapshot, an exact time
    int64_t end = ctx_.clock.MonotonicNs(t_.snapshot_tsc);
    if (t_.exit_tsc != 0) end = ctx_.clock.MonotonicNs(t_.exit_tsc);
    end = std::min(end, wend_);
    if (!opened_ && !stack_.empty() && end > wstart_) OpenWindow(std::max(wstart_, first_ns_ == kNoLimitHigh ? end : first_ns_));
    while (!stack_.empty()) Pop(end, kSliceOpen);
  }

  const std::vector<uint64_t>& cut() const { return cut_; }
  ThreadSummary& summary() { return summary_; }

 private:
  // Frames entered before the window become visible at its start.
  void OpenWindow(int64_t at_ns) {
    opened_ = true;
    for (size_t i = 0; i < stack_.size(); ++i) {
      if (stack_[i].emitted) continue;
      stack_[i].emitted = true;
      uint8_t flags = kSliceStartCut;
      if (stack_[i].enter_flags == 0) ++summary_.start_cut;  // entered in the ring, before the window
      sink_->Enter(stack_[i].key, at_ns, static_cast<uint32_t>(i), flags);
    }
  }

  void Pop(int64_t ns, uint8_t flags) {
    const Open o = stack_.back();
    stack_.pop_back();
    if (flags & kSliceUnwound) ++summary_.unwound;
    if (flags & kSliceOpen) ++summary_.open;
    if (o.emitted && sink_ != nullptr) {
      ++summary_.slices;
      if (bounded_) sink_->EventBound(bound_lo_, bound_hi_);
      sink_->Exit(o.key, ns, static_cast<uint32_t>(stack_.size()), flags);
    }
  }

  void UnwindTo(uint64_t pc, int64_t ns) {
    const uint64_t fn = ctx_.symbols ? ctx_.symbols->FunctionStart(pc) : 0;
    if (fn == 0) return;
    size_t at = stack_.size();
    while (at > 0 && stack_[at - 1].key != fn) --at;
    if (at == 0) return;
    while (stack_.size() > at) Pop(ns, kSliceUnwound);
  }

  uint32_t Depth() const { return static_cast<uint32_t>(stack_.size() - 1); }

  const ExportContext& ctx_;
  const format::ThreadInfo& t_;
  TraceSink* sink_;
  int64_t wstart_, wend_;
  std::vector<Open> stack_;
  std::vector<uint64_t> cut_;
  uint64_t pending_unwind_ = 0;
  bool opened_ = false;
  // The current event's bound, when it is not exact (fast clock).
  bool bounded_ = false;
  int64_t bound_lo_ = 0, bound_hi_ = 0;
  int64_t first_ns_ = kNoLimitHigh;
  ThreadSummary summary_;
};

bool Selected(const format::ThreadInfo& t, const std::string& want) {
  return want.empty() || want == std::to_string(t.tid) || want == t.name;
}

// Stops DecodeThread early by skipping the rest (the decoder has no early
// exit; skipping costs a branch per remaining record).
template <class F>
DecodeStats Feed(const format::Dump& d, const format::ThreadInfo& t, F&& on_event) {
  bool stopped = false;
  return DecodeThread(d, t, [&](const Event& e) {
    if (!stopped && !on_event(e)) stopped = true;
  });
}

}  // namespace

WalkResult Walk(const format::Dump& dump, symbolize::Symbolizer& symbols, const WalkOptions& options,
                TraceSink& sink) {
  WalkResult result;
  ExportContext ctx;
  ctx.dump = &dump;
  ctx.symbols = &symbols;
  ctx.clock = ClockModel(dump.clock);
  if (!ctx.clock.valid()) {
    result.status = Status::Error("the dump's clock calibration is missing or zero: cannot convert timestamps");
    return result;
  }
  ctx.dump_ns = ctx.clock.MonotonicNs(dump.process.dump_tsc);
  const int64_t wstart = options.window_start_ns.value_or(kNoLimitLow);
  const int64_t wend = options.window_end_ns.value_or(kNoLimitHigh);

  // Pass 1 per thread: frames cut at the window start, the first timestamp.
  struct Plan {
    const format::ThreadInfo* t;
    std::vector<uint64_t> cut;
  };
  std::vector<Plan> plans;
  int64_t origin = kNoLimitHigh;
  ctx.quiet.resize(dump.threads.size());
  const uint64_t quiet_ticks = static_cast<uint64_t>(static_cast<double>(kQuietGapNs) * ctx.clock.TscGhz()) + 1;
  for (const auto& t : dump.threads) {
    if (!Selected(t, options.thread)) continue;
    ThreadPass pass(ctx, t, nullptr, kNoLimitLow, kNoLimitHigh);
    bool first = true;
    uint64_t last_tsc = 0;
    auto& quiet = ctx.quiet[static_cast<size_t>(&t - dump.threads.data())];
    Feed(dump, t, [&](const Event& e) {
      if (e.kind == EventKind::kEnter || e.kind == EventKind::kExit) {
        if (first) {
          first = false;
          origin = std::min(origin, ctx.clock.MonotonicNs(e.tsc));
        } else if (e.tsc > last_tsc && e.tsc - last_tsc >= quiet_ticks) {  // in ticks: no conversion per event
          quiet.emplace_back(ctx.clock.MonotonicNs(last_tsc), ctx.clock.MonotonicNs(e.tsc));
        }
        last_tsc = std::max(last_tsc, e.tsc);
      }
      return pass.OnEvent(e);
    });
    ctx.total_events += pass.summary().events;
    plans.push_back({&t, pass.cut()});
  }
  if (plans.empty()) {
    result.status =
        Status::Error(options.thread.empty() ? "the dump holds no thread" : "no thread '" + options.thread + "' in the dump");
    return result;
  }
  if (origin == kNoLimitHigh) origin = ctx.dump_ns;
  ctx.origin_ns = std::max(origin, wstart);

  result.status = sink.Begin(ctx);
  if (!result.status.ok()) return result;
  uint64_t done = 0;
  for (const auto& plan : plans) {
    const format::ThreadInfo& t = *plan.t;
    sink.BeginThread(t);
    ThreadPass pass(ctx, t, &sink, wstart, wend);
    pass.Seed(plan.cut);
    pass.summary().tid = t.tid;
    pass.summary().lost_records = t.lost;
    pass.summary().decode = Feed(dump, t, [&](const Event& e) {
      if (options.progress && (++done & 0xfffff) == 0) options.progress(options.progress_ctx, done, ctx.total_events);
      return pass.OnEvent(e);
    });
    pass.Finish();
    sink.EndThread(pass.summary());
    result.threads.push_back(pass.summary());
  }
  if (options.progress) options.progress(options.progress_ctx, ctx.total_events, ctx.total_events);
  result.status = sink.End();
  return result;
}

namespace {
constexpr std::string_view kMonotonicWindow = "monotonic:";

// "monotonic:START..END", both in CLOCK_MONOTONIC ns; either side may be empty.
Status ParseMonotonicWindow(const std::string& text, std::optional<int64_t>* start, std::optional<int64_t>* end) {
  const std::string body = text.substr(kMonotonicWindow.size());
  const size_t dots = body.find("..");
  if (dots == std::string::npos) return Status::Error("window '" + text + "' must be monotonic:START_NS..END_NS");
  auto parse = [&](const std::string& s, std::optional<int64_t>* out) -> bool {
    if (s.empty()) return true;
    char* rest = nullptr;
    errno = 0;
    const long long v = strtoll(s.c_str(), &rest, 10);
    if (errno != 0 || rest == s.c_str() || *rest != '\0' || v < 0) return false;
    *out = v;
    return true;
  };
  if (!parse(body.substr(0, dots), start) || !parse(body.substr(dots + 2), end))
    return Status::Error("window '" + text + "': monotonic times are whole nanoseconds");
  if (start->has_value() && end->has_value() && **start >= **end) return Status::Error("window '" + text + "' is empty");
  return Status::Ok();
}
}  // namespace

Status ResolveWindow(const format::Dump& d, const std::string& text, WalkOptions* wo) {
  if (text.empty()) return Status::Ok();
  if (text.rfind(kMonotonicWindow, 0) == 0) return ParseMonotonicWindow(text, &wo->window_start_ns, &wo->window_end_ns);
  bool relative_to_dump = false;
  if (Status s = ParseWindow(text, &relative_to_dump, &wo->window_start_ns, &wo->window_end_ns); !s.ok()) return s;
  // From the dump time when signed, else from the first event.
  const ClockModel clock(d.clock);
  int64_t base = clock.MonotonicNs(d.process.dump_tsc);
  if (!relative_to_dump) {
    int64_t first = kNoLimitHigh;
    for (const auto& t : d.threads) {
      DecodeThread(d, t, [&](const Event& e) {
        if (first == kNoLimitHigh && (e.kind == EventKind::kEnter || e.kind == EventKind::kExit))
          first = clock.MonotonicNs(e.tsc);
      });
    }
    if (first != kNoLimitHigh) base = first;
  }
  if (wo->window_start_ns) *wo->window_start_ns += base;
  if (wo->window_end_ns) *wo->window_end_ns += base;
  return Status::Ok();
}

Status ParseWindow(const std::string& text, bool* relative_to_dump, std::optional<int64_t>* start,
                        std::optional<int64_t>* end) {
  if (text.rfind(kMonotonicWindow, 0) == 0) {
    *relative_to_dump = false;
    return ParseMonotonicWindow(text, start, end);
  }
  const size_t dots = text.find("..");
  if (dots == std::string::npos) return Status::Error("window '" + text + "' must be START..END (e.g. -2s.. or 0..1.5s)");
  auto parse = [&](std::string s, std::optional<int64_t>* out, bool* is_signed) -> std::string {
    if (s.empty()) return "";
    *is_signed = s[0] == '-' || s[0] == '+';
    char* rest = nullptr;
    const double v = strtod(s.c_str(), &rest);
    std::string unit = rest ? rest : "";
    double mult = 1e9;  // seconds by default
    if (unit == "ns") mult = 1;
    else if (unit == "us") mult = 1e3;
    else if (unit == "ms") mult = 1e6;
    else if (unit == "s" || unit.empty()) mult = 1e9;
    else return "bad unit in '" + s + "' (ns, us, ms or s)";
    if (rest == s.c_str() || !std::isfinite(v)) return "'" + s + "' is not a time";
    *out = static_cast<int64_t>(v * mult);
    return "";
  };
  bool s1 = false, s2 = false;
  std::string err = parse(text.substr(0, dots), start, &s1);
  if (err.empty()) err = parse(text.substr(dots + 2), end, &s2);
  if (!err.empty()) return Status::Error(err);
  if ((start->has_value() && end->has_value()) && s1 != s2)
    return Status::Error("window '" + text + "': both ends relative to the dump (signed) or both to the first event");
  *relative_to_dump = s1 || s2;
  if (start->has_value() && end->has_value() && **start >= **end) return Status::Error("window '" + text + "' is empty");
  return Status::Ok();
}

}  // namespace lookback::model
