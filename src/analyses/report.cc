#include "analyses/report.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "symbolize/symbolizer.h"

namespace lookback::analyses {

void RepairCounts::Add(const model::ThreadSummary& s) {
  start_cut += s.start_cut;
  open += s.open;
  unwound += s.unwound;
  unmatched_exits += s.unmatched_exits;
  lost_records += s.lost_records;
}

Status ReportBuilder::Begin(const model::ExportContext& ctx) {
  ctx_ = &ctx;
  report_ = Report{};
  report_.window_start_ns = std::numeric_limits<int64_t>::max();
  report_.window_end_ns = std::numeric_limits<int64_t>::min();
  report_.cpu_known = true;
  all_accs_.clear();
  aside_.clear();
  static const format::Dump kNoDump;  // driven by hand without a dump
  waits_ = model::WaitFunctions(ctx.dump != nullptr ? *ctx.dump : kNoDump, options_.wait_globs);
  jvm_ = ctx.dump != nullptr && model::IsJvmDump(*ctx.dump);
  return Status::Ok();
}

void ReportBuilder::BeginThread(const format::ThreadInfo& t) {
  thread_accs_.clear();
  stack_.clear();
  tid_ = t.tid;
  thread_name_ = t.name;
  thread_seen_ = false;
  waiting_.Reset(model::CpuTimeline::ForWalkedThread(*ctx_, t));
}

void ReportBuilder::Enter(uint64_t key, int64_t ts, uint32_t, uint8_t flags) {
  if (!thread_seen_) {
    thread_seen_ = true;
    thread_first_ = thread_last_ = ts;
  }
  Acc& a = thread_accs_[key];  // values of an unordered_map never move
  ++a.calls;
  const bool outermost = a.active++ == 0;
  if (outermost) ++a.outer_calls;
  stack_.push_back(Frame{key, ts, 0, next_bound_, &a, outermost, (flags & model::kSliceStartCut) != 0});
  if (a.waits < 0) a.waits = ctx_ != nullptr && waits_.IsWaitKey(key, ctx_->symbols) ? 1 : 0;
  waiting_.Enter(ts, a.waits == 1);
  next_bound_ = 0;
}

void ReportBuilder::Exit(uint64_t, int64_t ts, uint32_t, uint8_t flags) {
  if (stack_.empty()) return;  // the walker balances; be safe when driven by hand
  const Frame f = stack_.back();
  stack_.pop_back();
  thread_last_ = std::max(thread_last_, ts);
  const int64_t total = std::max<int64_t>(0, ts - f.start);
  Acc& a = *f.acc;
  --a.active;
  const int64_t bound = f.bound + next_bound_;
  next_bound_ = 0;
  if (f.outermost) {
    a.inclusive += total;
    a.inclusive_bound += bound;
  }
  if (bound * 100 > total) ++a.uncertain;
  const model::WaitTracker::Split split = waiting_.Exit(ts);
  const int64_t wait = split.wait;
  const int64_t self = std::max<int64_t>(0, total - f.children);
  const int64_t self_wait = std::clamp<int64_t>(wait - split.children_wait, 0, self);
  a.self += self;
  a.self_cpu += self - self_wait;
  if (f.outermost) a.inclusive_cpu += total - wait;
  a.max = std::max(a.max, total);
  if (f.clipped || (flags & (model::kSliceOpen | model::kSliceUnwound)) != 0) ++a.clipped;
  if (!stack_.empty()) stack_.back().children += total;
}

void ReportBuilder::Flush(std::unordered_map<uint64_t, Acc>& accs, uint32_t tid, const std::string& thread) {
  for (auto& [key, a] : accs) {
    FunctionStats s;
    s.key = key;
    s.tid = tid;
    s.thread = thread;
    if (ctx_ != nullptr && ctx_->symbols != nullptr) {
      const symbolize::Symbol& sym = ctx_->symbols->Lookup(key);
      s.name = sym.name;
      s.module = sym.module;
    } else {
      s.name = fmt::format("0x{:x}", key);
    }
    s.calls = a.calls;
    s.outer_calls = a.outer_calls;
    s.inclusive_ns = a.inclusive;
    s.self_ns = a.self;
    s.max_ns = a.max;
    s.self_cpu_ns = a.self_cpu;
    s.inclusive_cpu_ns = a.inclusive_cpu;
    s.clipped = a.clipped;
    s.inclusive_bound_ns = a.inclusive_bound;
    s.uncertain = a.uncertain;
    report_.calls += a.calls;
    report_.functions.push_back(std::move(s));
  }
}

void ReportBuilder::EndThread(const model::ThreadSummary& summary) {
  while (!stack_.empty()) Exit(stack_.back().key, thread_last_, 0, model::kSliceOpen);  // never with the walker
  report_.repairs.Add(summary);
  if (!thread_seen_) return;
  const int64_t span = thread_last_ - thread_first_;
  // On CPU over the traced span: what the readings say, and no more than
  // the span less its outermost frames' waiting (waiting functions are all
  // wait); without readings, that alone.
  int64_t cpu = std::max<int64_t>(0, span - waiting_.root_wait());
  model::CpuTimeline& timeline = waiting_.timeline();
  if (timeline.known()) cpu = std::min(cpu, timeline.OnCpu(thread_first_, thread_last_));
  const bool housekeeping = jvm_ && model::IsHousekeepingThread(thread_name_);
  // The thread a trigger is about is the story, whatever it did.
  const bool triggered = ctx_ != nullptr && ctx_->dump != nullptr && ctx_->dump->trigger && ctx_->dump->trigger->tid == tid_;
  if (!options_.all_threads && !triggered && (housekeeping || model::OnlyWaited(cpu, span))) {
    SetAsideThread t;
    t.tid = tid_;
    t.name = thread_name_;
    t.why = housekeeping ? "housekeeping" : "waited";
    t.span_ns = span;
    t.cpu_ns = cpu;
    for (const auto& [key, a] : thread_accs_) {
      if (a.self > t.top_self_ns) {
        t.top_self_ns = a.self;
        t.top = ctx_ != nullptr && ctx_->symbols != nullptr ? ctx_->symbols->Lookup(key).name : fmt::format("0x{:x}", key);
      }
    }
    aside_.push_back(Aside{std::move(t), thread_first_, thread_last_, timeline.known(), std::move(thread_accs_)});
    thread_accs_.clear();
    return;
  }
  Rank(tid_, thread_name_, thread_accs_, thread_first_, thread_last_, cpu, timeline.known());
}

void ReportBuilder::Rank(uint32_t tid, const std::string& name, std::unordered_map<uint64_t, Acc>& accs, int64_t first,
                         int64_t last, int64_t cpu, bool cpu_known) {
  ++report_.threads;
  report_.thread_time_ns += last - first;
  report_.thread_cpu_ns += cpu;
  report_.cpu_known = report_.cpu_known && cpu_known;
  report_.window_start_ns = std::min(report_.window_start_ns, first);
  report_.window_end_ns = std::max(report_.window_end_ns, last);
  if (options_.per_thread) {
    Flush(accs, tid, name);
    return;
  }
  for (const auto& [key, a] : accs) {
    Acc& m = all_accs_[key];
    m.calls += a.calls;
    m.outer_calls += a.outer_calls;
    m.clipped += a.clipped;
    m.uncertain += a.uncertain;
    m.inclusive_bound += a.inclusive_bound;
    m.inclusive += a.inclusive;
    m.self += a.self;
    m.self_cpu += a.self_cpu;
    m.inclusive_cpu += a.inclusive_cpu;
    m.max = std::max(m.max, a.max);
  }
}

Status ReportBuilder::End() {
  // Nothing but waiting threads: then they are the story after all.
  if (report_.threads == 0) {
    for (Aside& t : aside_) Rank(t.info.tid, t.info.name, t.accs, t.first, t.last, t.info.cpu_ns, t.cpu_known);
  } else {
    // Threads that waited most of their span are set aside only while
    // together they did a negligible part of the work (model::StillOnlyWaited):
    // a pool worker that computed for 7 ms and then parked until the end is
    // under 2 % of its own span, but its calls are the program's work. The
    // ranked threads count as one, by their CPU time.
    std::vector<model::ThreadWork> work;
    for (const Aside& t : aside_) work.push_back({t.info.cpu_ns, t.info.why == "waited", t.info.why != "waited"});
    work.push_back({report_.thread_cpu_ns, false, false});
    const std::vector<bool> waited = model::StillOnlyWaited(work);
    for (size_t i = 0; i < aside_.size(); ++i) {
      Aside& t = aside_[i];
      if (t.info.why == "waited" && !waited[i]) {
        Rank(t.info.tid, t.info.name, t.accs, t.first, t.last, t.info.cpu_ns, t.cpu_known);
      } else {
        report_.set_aside.push_back(std::move(t.info));
      }
    }
  }
  aside_.clear();
  if (!options_.per_thread) Flush(all_accs_, 0, "");
  if (report_.threads == 0) report_.window_start_ns = report_.window_end_ns = 0;
  if (report_.threads == 0) report_.cpu_known = false;
  std::sort(report_.set_aside.begin(), report_.set_aside.end(),
            [](const SetAsideThread& a, const SetAsideThread& b) { return a.span_ns > b.span_ns; });
  all_accs_.clear();
  thread_accs_.clear();
  return Status::Ok();
}

Status ReportDump(const format::Dump& dump, symbolize::Symbolizer& symbols, const model::WalkOptions& walk,
                  const ReportOptions& options, Report* out) {
  ReportBuilder builder(options);
  model::WalkResult r = model::Walk(dump, symbols, walk, builder);
  if (!r.status.ok()) return r.status;
  *out = builder.Take();
  return Status::Ok();
}

// ---- sorting ------------------------------------------------------------------

bool ParseSortKey(const std::string& text, SortKey* key) {
  static const std::pair<const char*, SortKey> kKeys[] = {{"self", SortKey::kSelf},   {"inclusive", SortKey::kInclusive},
                                                          {"calls", SortKey::kCalls}, {"max", SortKey::kMax},
                                                          {"avg", SortKey::kAvg},     {"name", SortKey::kName},
                                                          {"cpu", SortKey::kCpu},     {"wait", SortKey::kWait}};
  for (const auto& [name, k] : kKeys) {
    if (text == name) return *key = k, true;
  }
  return false;
}

void SortFunctions(std::vector<FunctionStats>* functions, SortKey key) {
  auto value = [key](const FunctionStats& f) -> int64_t {
    switch (key) {
      case SortKey::kSelf: return f.self_ns;
      case SortKey::kInclusive: return f.inclusive_ns;
      case SortKey::kCalls: return static_cast<int64_t>(f.calls);
      case SortKey::kMax: return f.max_ns;
      case SortKey::kAvg: return f.avg_ns();
      case SortKey::kName: return 0;
      case SortKey::kCpu: return f.self_cpu_ns;
      case SortKey::kWait: return f.self_wait_ns();
    }
    return 0;
  };
  std::stable_sort(functions->begin(), functions->end(), [&](const FunctionStats& a, const FunctionStats& b) {
    const int64_t va = value(a), vb = value(b);
    if (va != vb) return va > vb;
    return std::tie(a.name, a.tid, a.key) < std::tie(b.name, b.tid, b.key);
  });
}

// ---- diff ---------------------------------------------------------------------

double FunctionDiff::Relative(int64_t a, int64_t b) {
  if (a == 0) return b == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return static_cast<double>(b - a) / static_cast<double>(a);
}

bool ParseDiffSortKey(const std::string& text, DiffSortKey* key) {
  static const std::pair<const char*, DiffSortKey> kKeys[] = {{"self", DiffSortKey::kSelf},
                                                              {"inclusive", DiffSortKey::kInclusive},
                                                              {"avg", DiffSortKey::kAvg},
                                                              {"calls", DiffSortKey::kCalls},
                                                              {"cpu", DiffSortKey::kCpu}};
  for (const auto& [name, k] : kKeys) {
    if (text == name) return *key = k, true;
  }
  return false;
}

std::vector<FunctionDiff> DiffReports(const Report& a, const Report& b, DiffSortKey key) {
  struct Side {
    uint64_t calls = 0, outer = 0;
    int64_t self = 0, inclusive = 0, self_cpu = 0;
  };
  std::map<std::string, std::pair<Side, Side>> by_name;
  std::map<std::string, std::pair<bool, bool>> present;
  auto add = [&](const Report& r, bool first) {
    for (const auto& f : r.functions) {
      Side& s = first ? by_name[f.name].first : by_name[f.name].second;
      s.calls += f.calls;
      s.outer += f.outer_calls;
      s.self += f.self_ns;
      s.inclusive += f.inclusive_ns;
      s.self_cpu += f.self_cpu_ns;
      (first ? present[f.name].first : present[f.name].second) = true;
    }
  };
  add(a, true);
  add(b, false);
  std::vector<FunctionDiff> out;
  out.reserve(by_name.size());
  for (const auto& [name, sides] : by_name) {
    const auto& [sa, sb] = sides;
    FunctionDiff d;
    d.name = name;
    d.in_a = present[name].first;
    d.in_b = present[name].second;
    d.calls_a = sa.calls, d.calls_b = sb.calls;
    d.self_a = sa.self, d.self_b = sb.self;
    d.inclusive_a = sa.inclusive, d.inclusive_b = sb.inclusive;
    d.self_cpu_a = sa.self_cpu, d.self_cpu_b = sb.self_cpu;
    d.avg_a = sa.outer ? sa.inclusive / static_cast<int64_t>(sa.outer) : 0;
    d.avg_b = sb.outer ? sb.inclusive / static_cast<int64_t>(sb.outer) : 0;
    out.push_back(std::move(d));
  }
  auto change = [key](const FunctionDiff& d) -> int64_t {
    switch (key) {
      case DiffSortKey::kSelf: return std::abs(d.self_delta());
      case DiffSortKey::kInclusive: return std::abs(d.inclusive_delta());
      case DiffSortKey::kAvg: return std::abs(d.avg_delta());
      case DiffSortKey::kCalls:
        return std::abs(static_cast<int64_t>(d.calls_b) - static_cast<int64_t>(d.calls_a));
      case DiffSortKey::kCpu: return std::abs(d.self_cpu_delta());
    }
    return 0;
  };
  std::stable_sort(out.begin(), out.end(), [&](const FunctionDiff& x, const FunctionDiff& y) {
    const int64_t cx = change(x), cy = change(y);
    if (cx != cy) return cx > cy;
    return x.name < y.name;  // by_name is ordered already; keeps the sort total
  });
  return out;
}

}  // namespace lookback::analyses
