#include "import/to_dump.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "format/format.h"

namespace lookback::import {
namespace {

// Where time_ns == 0 lands on the synthetic clock: one second in, so that no
// event has TSC 0 (which THREAD fields use for "none").
constexpr uint64_t kTscBase = 1'000'000'000;

uint64_t KeyOf(uint32_t method) { return format::kKeyMethodTag | method; }

struct Repairs {
  uint64_t opened_before = 0;  // entries added for frames entered before tracing began
  uint64_t closed_above = 0;   // exits added for frames an outer exit closed
  uint64_t dropped = 0;        // exits of nothing open
};

// The thread's events with the nesting repaired (see to_dump.h).
std::vector<format::BuiltEvent> ThreadEvents(const ImportedThread& th, Repairs* rep) {
  std::vector<format::BuiltEvent> out;
  if (th.events.empty()) return out;
  // Pass 1: exits with nothing open are frames entered before tracing began,
  // innermost first.
  std::vector<uint32_t> stack, before;
  for (const ImportedEvent& e : th.events) {
    if (e.action == Action::kEnter) {
      stack.push_back(e.method);
      continue;
    }
    auto it = std::find(stack.rbegin(), stack.rend(), e.method);
    if (it != stack.rend()) {
      stack.erase(std::next(it).base(), stack.end());
    } else if (stack.empty()) {
      before.push_back(e.method);
    }
  }
  const uint64_t first = kTscBase + th.events.front().time_ns;
  for (auto it = before.rbegin(); it != before.rend(); ++it) out.push_back({false, KeyOf(*it), first});
  rep->opened_before += before.size();
  stack.assign(before.rbegin(), before.rend());
  uint64_t last = first;
  for (const ImportedEvent& e : th.events) {
    const uint64_t tsc = std::max(last, kTscBase + e.time_ns);  // never backwards (to_dump.h)
    last = tsc;
    if (e.action == Action::kEnter) {
      stack.push_back(e.method);
      out.push_back({false, KeyOf(e.method), tsc});
      continue;
    }
    auto it = std::find(stack.rbegin(), stack.rend(), e.method);
    if (it == stack.rend()) {
      ++rep->dropped;
      continue;
    }
    while (stack.back() != e.method) {
      out.push_back({true, KeyOf(stack.back()), tsc});
      stack.pop_back();
      ++rep->closed_above;
    }
    stack.pop_back();
    out.push_back({true, KeyOf(e.method), tsc});
  }
  return out;
}

}  // namespace

format::BuiltDump ToDump(ImportedTrace t, const std::string& source) {
  format::BuiltDump d;
  d.pid = t.pid;
  d.process_name = t.process_name.empty() ? source : t.process_name;
  d.exe = source;
  d.reason = "imported from " + t.format;
  d.ticks = 1;
  d.ns = 1;
  d.ref_tsc = kTscBase;
  d.ref_monotonic_ns = 0;
  d.ref_realtime_ns = t.realtime_at_zero_ns;
  for (const auto& [id, name] : t.methods) d.names[KeyOf(id)] = name;
  Repairs rep;
  std::set<uint32_t> tids;
  for (ImportedThread& th : t.threads) {
    format::BuiltThread& b = d.threads.emplace_back();
    b.tid = th.tid;
    b.name = th.name;
    b.main = th.tid != 0 && th.tid == t.pid;
    b.events = ThreadEvents(th, &rep);
    for (const auto& ev : b.events) {
      if (d.names.count(ev.key) == 0) {
        char buf[48];
        snprintf(buf, sizeof buf, "unknown method %#x", static_cast<unsigned>(ev.key & 0xffffffffu));
        d.names[ev.key] = buf;
      }
    }
    uint64_t last_cpu = 0, last_tsc = 0;
    for (const auto& [time_ns, cpu_ns] : th.cpu) {
      const uint64_t tsc = kTscBase + time_ns;
      if (tsc < last_tsc || cpu_ns < last_cpu) continue;  // the CPU section wants both non-decreasing
      b.cpu.emplace_back(tsc, cpu_ns);
      last_tsc = tsc;
      last_cpu = cpu_ns;
    }
    th.events = {};
    th.cpu = {};
  }
  d.metadata = t.metadata;
  d.metadata["import.format"] = t.format;
  d.metadata["import.clock"] = t.clock;
  d.metadata["import.source"] = source;
  d.metadata["import.tsc"] = "1 GHz synthetic clock: TSC = 1e9 + ns since the trace's time zero";
  if (rep.opened_before + rep.closed_above + rep.dropped > 0) {
    d.metadata["import.repairs"] = std::to_string(rep.opened_before) + " entries added for frames entered before tracing, " +
                                   std::to_string(rep.closed_above) + " exits added for frames closed by an outer exit, " +
                                   std::to_string(rep.dropped) + " exits of no open frame dropped";
  }
  if (!t.warnings.empty()) {
    std::string w;
    for (const auto& e : t.warnings) w += e.ToString() + "\n";
    d.metadata["import.warnings"] = w;
  }
  d.metadata["note.import"] = t.format + " (" + t.clock + " clock) from " + source;
  return d;
}

}  // namespace lookback::import
