// lookback info DUMP: what a dump holds, and where each thread was when it
// was taken.
#include <algorithm>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/commands.h"
#include "format/reader.h"
#include "model/clock_model.h"
#include "model/cpu_time.h"
#include "model/decoder.h"
#include "model/samples.h"
#include "runtime/config.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct InfoOptions {
  std::string path;
  int depth = 8;
};

// A rate per second: "850", "12.3 k", "394.0 M".
std::string HumanRate(double per_s) {
  if (per_s < 1e3) return fmt::format("{:.0f}", per_s);
  if (per_s < 1e6) return fmt::format("{:.1f} k", per_s / 1e3);
  if (per_s < 1e9) return fmt::format("{:.1f} M", per_s / 1e6);
  return fmt::format("{:.2f} G", per_s / 1e9);
}

std::string HumanNs(double ns) {
  if (ns < 1e3) return fmt::format("{:.0f} ns", ns);
  if (ns < 1e6) return fmt::format("{:.1f} us", ns / 1e3);
  if (ns < 1e9) return fmt::format("{:.1f} ms", ns / 1e6);
  return fmt::format("{:.2f} s", ns / 1e9);
}

std::string HumanBytes(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string LocalTime(uint64_t realtime_ns) {
  time_t secs = static_cast<time_t>(realtime_ns / 1000000000ull);
  struct tm tm;
  localtime_r(&secs, &tm);
  char buf[64];
  strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return fmt::format("{}.{:03d}", buf, static_cast<int>((realtime_ns / 1000000ull) % 1000));
}

// Per-thread samples (lookback record --sample), one line per thread.
void PrintSamples(const format::Dump& d, const model::ClockModel& clock) {
  if (d.samples.empty()) return;
  fmt::print("\nSamples ({}):\n", model::DescribeSampling(d.samples.front()));
  fmt::print("  {:>8}  {:<16} {:>7} {:>6} {:>8} {:>6} {:>8} {:>8} {:>10} {:>10}  {}\n", "TID", "NAME", "SAMPLES", "CPU",
             "MINFLT", "MAJFLT", "VOL CSW", "INV CSW", "ALLOC", "FREED", "STATES");
  for (const auto& s : d.samples) {
    const format::ThreadInfo& t = d.threads[s.thread_index];
    if (s.samples.empty()) continue;
    const auto& a = s.samples.front();
    const auto& b = s.samples.back();
    auto delta = [&](format::SampleField f) { return b[f] >= a[f] ? b[f] - a[f] : 0; };
    // Time spent in each state over the timeline, largest first.
    std::map<char, uint64_t> in_state;
    for (const auto& span : model::StateSpans(s, t)) in_state[span.state] += span.end_tsc - span.begin_tsc;
    uint64_t total = 0;
    for (const auto& [st, ticks] : in_state) total += ticks;
    std::vector<std::pair<uint64_t, char>> order;
    for (const auto& [st, ticks] : in_state) order.emplace_back(ticks, st);
    std::sort(order.rbegin(), order.rend());
    std::string states;
    for (const auto& [ticks, st] : order) {
      if (total == 0) break;
      states += fmt::format("{}{} {:.0f}%", states.empty() ? "" : ", ", model::StateName(st), 100.0 * static_cast<double>(ticks) / static_cast<double>(total));
    }
    const bool alloc = (s.flags & format::kSampleAlloc) != 0;
    fmt::print("  {:>8}  {:<16} {:>7} {:>5.0f}% {:>8} {:>6} {:>8} {:>8} {:>10} {:>10}  {}\n", s.tid, t.name, s.samples.size(),
               100.0 * model::CpuShare(a, b, clock), delta(format::kSampleMinorFaults), delta(format::kSampleMajorFaults),
               delta(format::kSampleVoluntarySwitches), delta(format::kSampleInvoluntarySwitches),
               alloc ? std::to_string(delta(format::kSampleAllocBytes)) : "-",
               alloc ? std::to_string(delta(format::kSampleFreedBytes)) : "-", states.empty() ? "-" : states);
  }
}

// Fast clock: how precisely the dump's events are timed. Readings count as
// exact (0); the rest lie between their bracketing readings (FORMAT.md).
void PrintBounds(std::vector<uint64_t>& bounds, uint32_t threads, uint64_t off_cpu, const model::ClockModel& clock) {
  if (bounds.empty()) return;
  auto at = [&](double q) {
    const size_t k = std::min(bounds.size() - 1, static_cast<size_t>(q * static_cast<double>(bounds.size())));
    std::nth_element(bounds.begin(), bounds.begin() + static_cast<ptrdiff_t>(k), bounds.end());
    return HumanNs(clock.TicksToNs(bounds[k]));
  };
  const std::string median = at(0.5), p99 = at(0.99);
  const std::string max = HumanNs(clock.TicksToNs(*std::max_element(bounds.begin(), bounds.end())));
  fmt::print("\n  fast clock on {} thread{}: each event lies within a bound of median {}, 99th percentile {}, max {}\n"
             "  ({} events; {} deschedules accounted)\n",
             threads, threads == 1 ? "" : "s", median, p99, max, bounds.size(), off_cpu);
}

// The overhead budget (runtime/budget.h): the setting, each thread's latest
// estimate, and every function shed, so the reader knows what is missing.
void PrintBudget(const format::Dump& d, symbolize::Symbolizer& sym) {
  const format::BudgetInfo& b = d.budget;
  if (b.percent == "off" && b.shed.empty()) {
    fmt::print("  budget        off: every call of the traced threads is recorded\n");
    return;
  }
  uint32_t budget_bp = 0;
  rt::ParseBudget(b.percent, &budget_bp);
  std::string line = b.percent + " of each thread's CPU time";
  if (b.history != "off") line += ", and a ring of at least " + b.history + " of each thread's history";
  if (b.cost_ps == 0 && b.percent != "off") {
    // Measured when a thread is first judged (runtime/budget.h).
    line += "; no thread has been judged yet (a thread is first judged once it has used 0.1 s of CPU time)";
  } else if (b.cost_ps != 0) {
    line += fmt::format("; a trace point costs {:.1f} ns here, a shed function's call through the compiler hooks {:.1f} ns",
                        static_cast<double>(b.cost_ps) / 1000, static_cast<double>(b.filtered_cost_ps) / 1000);
    if (b.pass_shed_cost_ps != 0) {
      line += fmt::format(", one built with the clang pass {:.2f} ns per trace point (not counted: priced from its "
                          "rate when shed)",
                          static_cast<double>(b.pass_shed_cost_ps) / 1000);
    }
  }
  fmt::print("  budget        {}\n", line);
  for (const format::BudgetEstimate& t : b.threads) {
    std::string rates = HumanRate(static_cast<double>(t.tp_per_s)) + " trace points";
    if (t.filtered_per_s != 0) rates += " and " + HumanRate(static_cast<double>(t.filtered_per_s)) + " calls of shed functions";
    fmt::print("                thread {}: estimate {:.1f}% ({} per CPU second)\n", t.tid, t.estimate_bp / 100.0, rates);
    // What the shed functions' hook calls cost alone: no shedding lowers it.
    const double floor = static_cast<double>(t.filtered_per_s) * static_cast<double>(b.filtered_cost_ps) / 1e12;
    if (floor * 10000 >= budget_bp * 2 / 3 && budget_bp != 0) {
      fmt::print("                  calls of shed functions still cost about {:.0f}% of this thread's CPU time: each "
                 "still calls the compiler hook (or a JVM probe, until its class is retransformed); built with the "
                 "clang pass, a shed function costs a byte load (docs/performance.md, \"The overhead budget\")\n",
                 floor * 100);
    }
  }
  if (b.shed.empty()) {
    fmt::print("  shed          nothing: every call of the traced threads is recorded\n");
    return;
  }
  size_t still = 0;
  for (const format::ShedInfo& f : b.shed) still += f.until_ns == 0;
  fmt::print("  shed          {} function(s) not recorded to keep within the budget ({} still shed at the dump); "
             "their time is in their callers' self time\n",
             b.shed.size(), still);
  const uint64_t dump_ns = d.process.dump_monotonic_ns;
  auto ago = [&](uint64_t ns) { return ns <= dump_ns ? HumanNs(static_cast<double>(dump_ns - ns)) + " before the dump" : "?"; };
  constexpr size_t kShown = 20;
  for (size_t i = 0; i < b.shed.size() && i < kShown; ++i) {
    const format::ShedInfo& f = b.shed[i];
    std::string when = "since " + ago(f.at_ns);
    if (f.until_ns != 0) when = "from " + ago(f.at_ns) + " to " + ago(f.until_ns);
    // Thread 0: an earlier run of the program shed it, and this one gave it
    // no trace points from its start (the JVM agent's shed memory).
    const std::string by = f.tid != 0 ? fmt::format("thread {}", f.tid) : std::string("in an earlier run (shed memory)");
    fmt::print("                {}  {}; then {} calls/s{}, {}\n", sym.Name(f.key), when,
               HumanRate(static_cast<double>(f.calls_per_s)),
               f.mean_ns != 0 ? ", mean " + HumanNs(static_cast<double>(f.mean_ns)) : std::string(), by);
  }
  if (b.shed.size() > kShown) fmt::print("                ... {} more (lookback sql: SELECT * FROM shed)\n", b.shed.size() - kShown);
}

Outcome Run(const InfoOptions& o) {
  auto r = format::Dump::Open(o.path);
  if (!r.ok()) return Outcome::Error(o.path + ": " + r.error().ToString());
  const format::Dump& d = r.value();
  const model::ClockModel clock(d.clock);
  symbolize::Symbolizer sym(d);
  std::string cmdline = d.process.cmdline;
  for (auto& c : cmdline) c = c == '\0' ? ' ' : c;

  fmt::print("lookback dump {}\n", o.path);
  fmt::print("  format        version {} (min reader {}), {}\n", d.version, d.min_reader,
             (d.features & format::kFeatureX86Tsc) ? "x86 TSC timestamps" : "unknown clock");
  fmt::print("  process       {} (pid {}, parent {})\n", d.process.name, d.process.pid, d.process.ppid);
  if (auto host = d.metadata.find(format::metadata::kHost); host != d.metadata.end())
    fmt::print("  host          {}\n", host->second);
  fmt::print("  executable    {}\n", d.process.exe);
  fmt::print("  command line  {}\n", cmdline);
  fmt::print("  reason        {}\n", d.process.reason);
  if (const auto& t = d.trigger) {
    std::string line = t->detector;
    if (t->tid != 0) line += fmt::format(" on thread {}", t->tid);
    if (!t->subject.empty()) line += fmt::format(" ({})", t->subject);
    if (t->threshold_ns != 0)
      line += fmt::format(": measured {}, threshold {}", HumanNs(static_cast<double>(t->measured_ns)),
                          HumanNs(static_cast<double>(t->threshold_ns)));
    if (t->suppressed != 0) line += fmt::format("; {} other trigger(s) merged or rate-limited since the previous dump", t->suppressed);
    fmt::print("  trigger       {}\n", line);
    if (t->window_ns != 0) fmt::print("  window        the last {} before the snapshot\n", HumanNs(static_cast<double>(t->window_ns)));
  }
  fmt::print("  written       {} (dump #{} of this process)\n", LocalTime(d.process.dump_realtime_ns), d.process.dump_seq);
  if (!d.metadata.empty()) {
    auto ns = [&](const char* key) -> std::string {
      auto it = d.metadata.find(key);
      return it == d.metadata.end() ? "?" : HumanNs(strtod(it->second.c_str(), nullptr));
    };
    auto num = [&](const char* key) -> uint64_t {
      auto it = d.metadata.find(key);
      return it == d.metadata.end() ? 0 : strtoull(it->second.c_str(), nullptr, 10);
    };
    namespace md = format::metadata;
    std::string line = fmt::format("snapshot {} ({:.1f} MiB copied", ns(md::kSnapshotNs),
                                   static_cast<double>(num(md::kSnapshotBytes)) / (1 << 20));
    if (num(md::kSnapshotBatches) > 1) line += fmt::format(" in {} passes: memory was short", num(md::kSnapshotBatches));
    line += fmt::format("), prepare {}, encode {}, write {}{}", ns(md::kPrepareNs), ns(md::kEncodeNs), ns(md::kWriteNs),
                        num(md::kWriteDirect) ? " (O_DIRECT)" : "");
    if (num(md::kRequests) > 1) line += fmt::format("; answered {} requests at once", num(md::kRequests));
    if (num(md::kQueuedNs) != 0) line += fmt::format("; waited {} before starting", ns(md::kQueuedNs));
    fmt::print("  dump phases   {}\n", line);
  }
  if (clock.valid()) {
    fmt::print("  clock         TSC {:.4f} GHz, calibrated against CLOCK_MONOTONIC over {}, +/- {:.2f} ppm\n",
               clock.TscGhz(), HumanNs(static_cast<double>(d.clock.ns)), d.clock.uncertainty_ppb / 1000.0);
  } else {
    fmt::print("  clock         not calibrated: times are shown in ticks\n");
  }
  fmt::print("  rings         {} per thread; {} thread(s) in this dump; not traced: {} (memory cap), {} (--threads); "
             "exited rings reclaimed: {}\n",
             HumanBytes(d.stats.buffer_bytes), d.threads.size(), d.stats.untraced_memory, d.stats.untraced_pattern,
             d.stats.reclaimed);
  if (d.stats.invalid_keys) fmt::print("  invalid keys  {} dropped\n", d.stats.invalid_keys);
  for (const auto& [key, text] : d.metadata) {  // front-ends' notes (lb_set_note)
    if (key.rfind(format::metadata::kNotePrefix, 0) == 0) {
      fmt::print("  {:<13} {}\n", key.substr(std::string(format::metadata::kNotePrefix).size()), text);
    }
  }
  PrintBudget(d, sym);
  fmt::print("  modules       {}\n", d.modules.size());
  for (const auto& w : d.warnings) fmt::print("  warning       {}\n", w.ToString());
  for (const auto& p : sym.problems()) fmt::print("  symbols       {}\n", p);

  // SPAN is the time the thread's ring covers (its first to its last event in
  // the dump); TP/S its trace points per second over that span: how much
  // history a ring of this size holds at this thread's rate.
  fmt::print("\n  {:>8}  {:<16} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", "TID", "NAME", "RECORDS", "EVENTS", "LOST",
             "SPAN", "TP/S", "STATE");
  struct Where {
    uint32_t tid;
    std::string name;
    std::vector<model::CallMatcher::Open> stack;
    uint64_t snapshot_tsc;
  };
  std::vector<Where> wheres;
  std::vector<std::pair<uint32_t, double>> short_history;  // wrapped rings holding less than the history floor asks
  uint64_t history_ns = 0;
  if (d.budget.percent != "off" && d.budget.history != "off" && !d.budget.history.empty()) {
    rt::ParseDuration(d.budget.history, &history_ns);
  }
  std::vector<uint64_t> bounds;  // fast-clock threads: every event's bound width, ticks
  uint32_t fast_threads = 0;
  uint64_t off_cpu = 0;
  for (const auto& t : d.threads) {
    model::CallMatcher m(&symbolize::Symbolizer::FunctionOf, &sym);
    uint64_t first = 0, last = 0;
    const bool fast = (t.flags & format::kThreadFastClock) != 0;
    fast_threads += fast;
    auto st = model::DecodeThread(d, t, [&](const model::Event& e) {
      if (e.kind == model::EventKind::kResume) return;
      if (fast && e.kind != model::EventKind::kUnwindTo) bounds.push_back(e.hi - e.lo);
      if (first == 0) first = e.tsc;
      last = e.tsc;
      m.OnEvent(e, [](const model::Frame&) {});
    });
    std::string state = (t.flags & format::kThreadExited) ? "exited" : "running";
    if (t.flags & format::kThreadWrapped) state += ", ring wrapped";
    if (st.undecodable_prefix) state += fmt::format(", {} undecodable", st.undecodable_prefix);
    if (m.stats().unwound) state += fmt::format(", {} missing exits repaired", m.stats().unwound);
    const double span_ns = first ? static_cast<double>(clock.TicksToNs(last - first)) : 0.0;
    // Its CPU time over that span (the CPU readings or samples; docs/analyses.md "Working and waiting").
    model::CpuTimeline cpu = model::CpuTimeline::ForThread(d, static_cast<size_t>(&t - d.threads.data()), clock);
    if (cpu.known() && first != 0) {
      const int64_t on = cpu.OnCpu(clock.MonotonicNs(first), clock.MonotonicNs(last));
      state += fmt::format(", {} on CPU ({:.0f}%)", HumanNs(on), span_ns > 0 ? 100.0 * static_cast<double>(on) / span_ns : 0.0);
    }
    fmt::print("  {:>8}  {:<16} {:>10} {:>10} {:>10} {:>10} {:>8}  {}\n", t.tid, t.name, t.record_count, st.events, t.lost,
               first ? HumanNs(clock.TicksToNs(last - first)) : "-", span_ns > 0 ? HumanRate(st.events / span_ns * 1e9) : "-",
               state);
    wheres.push_back({t.tid, t.name, m.stack(), t.snapshot_tsc});
    off_cpu += st.off_cpu;
    if ((t.flags & format::kThreadWrapped) && span_ns > 0 && span_ns < static_cast<double>(history_ns)) {
      short_history.emplace_back(t.tid, span_ns);
    }
  }
  // The history floor (runtime/budget.cc) is a target, not a promise: a
  // thread is first judged after 0.1 s of its CPU time and then every 8 ms,
  // and the floor never sheds the last function a thread still records.
  for (const auto& [tid, span] : short_history) {
    fmt::print("  history       thread {}'s ring holds {} of the {} asked: the budget had not brought its rate down "
               "yet, or one function alone records faster (the floor never sheds the last function a thread records); "
               "a larger --buffer-size holds more\n",
               tid, HumanNs(static_cast<uint64_t>(span)), d.budget.history);
  }
  if (fast_threads != 0) PrintBounds(bounds, fast_threads, off_cpu, clock);
  PrintSamples(d, clock);
  fmt::print("\nWhere each thread was when the dump was taken (innermost last):\n");
  for (const auto& w : wheres) {
    fmt::print("  {} {}:{}\n", w.tid, w.name, w.stack.empty() ? " (no open call in the window)" : "");
    const size_t n = w.stack.size();
    const size_t from = n > static_cast<size_t>(o.depth) ? n - static_cast<size_t>(o.depth) : 0;
    if (from > 0) fmt::print("      ... {} outer frame(s)\n", from);
    for (size_t i = from; i < n; ++i) {
      const auto& s = sym.Lookup(w.stack[i].key);
      std::string where = s.file.empty() ? "" : fmt::format("  ({}:{})", s.file.substr(s.file.rfind('/') + 1), s.line);
      const uint64_t start = w.stack[i].start_tsc;
      const std::string running =
          w.snapshot_tsc > start ? fmt::format("  [running for {}]", HumanNs(clock.TicksToNs(w.snapshot_tsc - start))) : "";
      fmt::print("    {}{}{}{}\n", std::string(2 * (i - from), ' '), s.name, where, running);
    }
  }
  return Outcome::Ok();
}

}  // namespace

Runner SetupInfo(CLI::App* sub) {
  auto o = std::make_shared<InfoOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("--depth", o->depth, "Innermost frames shown per thread")->capture_default_str();
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
