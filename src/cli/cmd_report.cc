// lookback report DUMP: per function calls, self and inclusive time, average
// and longest call, share of the traced time; as a table, JSON or CSV.
// The numbers come from analyses::ReportBuilder (definitions in report.h).
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "analyses/report.h"
#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "cli/table.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

constexpr int kDefaultTableRows = 25;

struct ReportOptions : DumpSelection {
  std::string path, sort = "auto", format = "table";
  int top = -1;  // -1: kDefaultTableRows for a table, everything otherwise
  bool per_thread = false;
  bool all_threads = false;
  std::vector<std::string> wait;
};

const char* SortName(analyses::SortKey key) {
  using K = analyses::SortKey;
  switch (key) {
    case K::kSelf: return "self";
    case K::kInclusive: return "inclusive";
    case K::kCalls: return "calls";
    case K::kMax: return "max";
    case K::kAvg: return "avg";
    case K::kName: return "name";
    case K::kCpu: return "cpu";
    case K::kWait: return "wait";
  }
  return "self";
}

// One line: "3 threads set aside (--all-threads ranks them): Common-Cleaner
// (JVM housekeeping), sleeper-1, sleeper-2 (only waited); 6.1 s traced,
// 28 µs on CPU". JSON has each one's figures and where it spent its time.
std::string SetAsideText(const analyses::Report& r) {
  if (r.set_aside.empty()) return "";
  std::string housekeeping, waited;
  int64_t span = 0, cpu = 0;
  for (const auto& t : r.set_aside) {
    std::string& list = t.why == "housekeeping" ? housekeeping : waited;
    list += (list.empty() ? "" : ", ") + (t.name.empty() ? std::to_string(t.tid) : t.name);
    span += t.span_ns;
    cpu += t.cpu_ns;
  }
  std::string who;
  if (!housekeeping.empty()) who += housekeeping + " (JVM housekeeping)";
  if (!waited.empty()) who += (who.empty() ? "" : "; ") + waited + " (only waited)";
  return fmt::format("\n  {} thread{} set aside (--all-threads ranks them): {}; {} traced, {} on CPU.\n", r.set_aside.size(),
                     r.set_aside.size() == 1 ? "" : "s", who, HumanNs(span), HumanNs(cpu));
}

std::string SetAsideJson(const analyses::Report& r) {
  std::string out = "[";
  for (size_t i = 0; i < r.set_aside.size(); ++i) {
    const auto& t = r.set_aside[i];
    out += fmt::format("{}{{\"tid\": {}, \"thread\": {}, \"why\": {}, \"span_ns\": {}, \"cpu_ns\": {}, \"top\": {}, "
                       "\"top_self_ns\": {}}}",
                       i ? ", " : "", t.tid, JsonString(t.name), JsonString(t.why), t.span_ns, t.cpu_ns, JsonString(t.top),
                       t.top_self_ns);
  }
  return out + "]";
}

double Share(int64_t part, int64_t whole) { return whole > 0 ? static_cast<double>(part) / whole : 0.0; }

std::string Json(const ReportOptions& o, const analyses::Report& r, const std::vector<analyses::FunctionStats>& rows,
                 const std::string& shed, const std::string& sort, const std::string& lead) {
  std::string out = "{\n";
  out += fmt::format("  \"dump\": {},\n  \"sort\": {},\n", JsonString(o.path), JsonString(sort));
  out += fmt::format("  \"threads\": {},\n  \"calls\": {},\n  \"functions_total\": {},\n", r.threads, r.calls,
                     r.functions.size());
  out += fmt::format("  \"thread_time_ns\": {},\n  \"window_start_ns\": {},\n  \"window_end_ns\": {},\n",
                     r.thread_time_ns, r.window_start_ns, r.window_end_ns);
  out += fmt::format(
      "  \"repairs\": {{\"start_cut\": {}, \"open\": {}, \"unwound\": {}, \"unmatched_exits\": {}, "
      "\"lost_records\": {}}},\n",
      r.repairs.start_cut, r.repairs.open, r.repairs.unwound, r.repairs.unmatched_exits, r.repairs.lost_records);
  out += "  \"shed\": " + shed + ",\n";
  out += fmt::format("  \"thread_cpu_ns\": {},\n  \"cpu_known\": {},\n  \"set_aside\": {},\n", r.thread_cpu_ns,
                     r.cpu_known ? "true" : "false", SetAsideJson(r));
  if (!lead.empty()) out += "  \"trigger_thread\": " + lead + ",\n";
  out += "  \"functions\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = rows[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format("\"name\": {}, \"module\": {}, ", JsonString(f.name), JsonString(f.module));
    if (o.per_thread) out += fmt::format("\"tid\": {}, \"thread\": {}, ", f.tid, JsonString(f.thread));
    out += fmt::format(
        "\"calls\": {}, \"outer_calls\": {}, \"self_ns\": {}, \"inclusive_ns\": {}, \"avg_ns\": {}, \"max_ns\": {}, "
        "\"self_share\": {}, \"inclusive_share\": {}, \"clipped\": {}, \"self_cpu_ns\": {}, \"self_wait_ns\": {}, "
        "\"inclusive_cpu_ns\": {}}}",
        f.calls, f.outer_calls, f.self_ns, f.inclusive_ns, f.avg_ns(), f.max_ns,
        JsonNumber(Share(f.self_ns, r.thread_time_ns)), JsonNumber(Share(f.inclusive_ns, r.thread_time_ns)),
        f.clipped, f.self_cpu_ns, f.self_wait_ns(), f.inclusive_cpu_ns);
    if (f.inclusive_bound_ns != 0) {  // fast clock only
      out.pop_back();
      out += fmt::format(", \"inclusive_bound_ns\": {}, \"uncertain_calls\": {}}}", f.inclusive_bound_ns, f.uncertain);
    }
  }
  out += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string Csv(const ReportOptions& o, const analyses::Report& r, const std::vector<analyses::FunctionStats>& rows) {
  std::string out = o.per_thread ? "tid,thread," : "";
  out += "function,module,calls,outer_calls,self_ns,inclusive_ns,avg_ns,max_ns,self_share,inclusive_share,clipped,"
         "self_cpu_ns,self_wait_ns,inclusive_cpu_ns\n";
  for (const auto& f : rows) {
    if (o.per_thread) out += fmt::format("{},{},", f.tid, CsvField(f.thread));
    out += fmt::format("{},{},{},{},{},{},{},{},{:.6f},{:.6f},{},{},{},{}\n", CsvField(f.name), CsvField(f.module), f.calls,
                       f.outer_calls, f.self_ns, f.inclusive_ns, f.avg_ns(), f.max_ns,
                       Share(f.self_ns, r.thread_time_ns), Share(f.inclusive_ns, r.thread_time_ns), f.clipped,
                       f.self_cpu_ns, f.self_wait_ns(), f.inclusive_cpu_ns);
  }
  return out;
}

std::string TableText(const ReportOptions& o, const analyses::Report& r,
                      const std::vector<analyses::FunctionStats>& rows, analyses::SortKey key, const std::string& shed,
                      const std::string& lead) {
  const Style style = Style::For(stdout);
  using K = analyses::SortKey;
  const char* by = key == K::kSelf        ? "self time"
                   : key == K::kInclusive ? "inclusive time"
                   : key == K::kCalls     ? "calls"
                   : key == K::kMax       ? "longest call"
                   : key == K::kAvg       ? "average call"
                   : key == K::kCpu       ? "self time on CPU (CPU; WAIT: self time blocked or waiting)"
                   : key == K::kWait      ? "self time waiting (WAIT; CPU: self time on CPU)"
                                          : "name";
  std::string out = fmt::format("{} thread{}, {} calls of {} functions in {} of traced thread time", r.threads,
                                r.threads == 1 ? "" : "s", Count(r.calls), Count(r.functions.size()),
                                HumanNs(r.thread_time_ns));
  out += r.cpu_known ? fmt::format(" ({} on CPU)", HumanNs(r.thread_cpu_ns)) : "";
  out += fmt::format("; by {}\n", by);
  if (!r.cpu_known && r.threads != 0)
    out += "  (CPU readings missing for some threads: only waiting functions' time counts as WAIT there)\n";
  out += lead + "\n";
  Table t;
  if (o.per_thread) t.AddColumn("THREAD", Table::kLeft);
  t.AddColumn("CALLS", Table::kRight);
  t.AddColumn("SELF", Table::kRight);
  t.AddColumn("SELF%", Table::kRight);
  t.AddColumn("CPU", Table::kRight);
  t.AddColumn("WAIT", Table::kRight);
  t.AddColumn("INCLUSIVE", Table::kRight);
  t.AddColumn("INCL%", Table::kRight);
  t.AddColumn("AVG", Table::kRight);
  t.AddColumn("MAX", Table::kRight);
  t.AddColumn("FUNCTION", Table::kLeft, /*elastic=*/true);
  auto hl = [&](K k) { return key == k ? Style::kCyan : Style::kNone; };
  bool marked = false, uncertain = false;
  for (const auto& f : rows) {
    std::vector<Table::Cell> cells;
    if (o.per_thread) cells.emplace_back(f.thread.empty() ? std::to_string(f.tid) : fmt::format("{} ({})", f.thread, f.tid));
    const double whole = static_cast<double>(r.thread_time_ns);
    cells.emplace_back(Count(f.calls), hl(K::kCalls));
    cells.emplace_back(HumanNs(f.self_ns), hl(K::kSelf));
    cells.emplace_back(Percent(static_cast<double>(f.self_ns), whole), Style::kDim);
    cells.emplace_back(HumanNs(f.self_cpu_ns), hl(K::kCpu));
    cells.emplace_back(HumanNs(f.self_wait_ns()), hl(K::kWait));
    cells.emplace_back(HumanNs(f.inclusive_ns), hl(K::kInclusive));
    cells.emplace_back(Percent(static_cast<double>(f.inclusive_ns), whole), Style::kDim);
    cells.emplace_back(HumanNs(f.avg_ns()), hl(K::kAvg));
    cells.emplace_back(HumanNs(f.max_ns), hl(K::kMax));
    std::string name = f.name;
    if (f.clipped) name += " *", marked = true;
    if (f.Uncertain()) name += " ~", uncertain = true;
    cells.emplace_back(name, key == K::kName ? Style::kCyan : Style::kNone);
    t.AddRow(std::move(cells));
  }
  out += t.Render(style, TerminalColumns(stdout));
  if (rows.size() < r.functions.size())
    out += style.Paint(fmt::format("  ... {} more (--top N)\n", r.functions.size() - rows.size()), Style::kDim);
  // Footer: what was clipped or repaired, so nobody trusts a cut number blindly.
  const auto& rp = r.repairs;
  if (rp.clipped() || rp.unmatched_exits || rp.lost_records) {
    std::string parts;
    auto part = [&](uint64_t n, const char* what) {
      if (n) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", Count(n), what);
    };
    part(rp.start_cut, "begun before the window (counted from its start)");
    part(rp.open, "still running at the end (counted up to it)");
    part(rp.unwound, "with a missing exit (closed where their caller moved on)");
    out += fmt::format("\n  {} frame{} clipped or repaired: {}.", Count(rp.clipped()), rp.clipped() == 1 ? "" : "s",
                       parts.empty() ? "none" : parts);
    if (marked) out += " Functions marked * include some.";
    out += "\n";
    if (rp.unmatched_exits) out += fmt::format("  {} exits matched no entry and were dropped.\n", Count(rp.unmatched_exits));
    if (rp.lost_records)
      out += fmt::format("  {} records were overwritten in the ring before the dump: older calls are missing.\n",
                         Count(rp.lost_records));
  } else {
    out += style.Paint("\n  No frame clipped or repaired: every call was traced whole.\n", Style::kDim);
  }
  out += shed;
  out += SetAsideText(r);
  if (uncertain)
    out += "  Functions marked ~ were traced with the fast clock and their inclusive time may be off by more than 1 %:\n"
           "  the timestamps of their calls are bounds wider than that (lookback info shows the dump's bounds).\n";
  return out;
}

// The thread a trigger is about (a stall, a slow scope or call) leads the
// report: its own top functions over the trigger's window (what it measured,
// up to when it fired), so the first lines answer "what was it doing".
struct Lead {
  std::string text, json;
};
Lead LeadThread(const ReportOptions& o, OpenedDump& od, analyses::SortKey key) {
  const format::Dump& d = od.dump();
  if (!d.trigger || d.trigger->tid == 0 || !o.thread.empty()) return {};
  const format::ThreadInfo* t = nullptr;
  for (const auto& th : d.threads) {
    if (th.tid == d.trigger->tid) t = &th;
  }
  if (t == nullptr) return {};
  model::WalkOptions walk = od.Walking("");
  od.Done();
  walk.progress = nullptr;
  walk.progress_ctx = nullptr;
  walk.thread = std::to_string(t->tid);
  const model::ClockModel clock(d.clock);
  const int64_t at = clock.MonotonicNs(d.trigger->tsc);
  if (d.trigger->measured_ns != 0 && d.trigger->measured_ns < static_cast<uint64_t>(at)) {
    walk.window_start_ns = std::max<int64_t>(walk.window_start_ns.value_or(0), at - static_cast<int64_t>(d.trigger->measured_ns));
    walk.window_end_ns = std::min<int64_t>(walk.window_end_ns.value_or(at), at);
    if (*walk.window_start_ns >= *walk.window_end_ns) return {};
  }
  analyses::ReportOptions ro;
  ro.all_threads = true;
  ro.wait_globs = o.wait;
  analyses::Report r;
  if (!analyses::ReportDump(d, od.symbols(), walk, ro, &r).ok() || r.functions.empty()) return {};
  analyses::SortFunctions(&r.functions, key == analyses::SortKey::kWait ? analyses::SortKey::kSelf : key);
  const size_t n = std::min<size_t>(r.functions.size(), 5);
  Lead lead;
  const std::string name = t->name.empty() ? std::to_string(t->tid) : fmt::format("{} ({})", t->name, t->tid);
  lead.text = fmt::format("\n  {} fired on thread {}: over its {} before, {} on CPU; its top functions:\n",
                          d.trigger->detector, name, HumanNs(r.thread_time_ns), HumanNs(r.thread_cpu_ns));
  Table tb;
  tb.AddColumn("CPU", Table::kRight);
  tb.AddColumn("WAIT", Table::kRight);
  tb.AddColumn("SELF", Table::kRight);
  tb.AddColumn("CALLS", Table::kRight);
  tb.AddColumn("FUNCTION", Table::kLeft, /*elastic=*/true);
  lead.json = fmt::format("{{\"tid\": {}, \"thread\": {}, \"detector\": {}, \"window_start_ns\": {}, \"window_end_ns\": {}, "
                          "\"cpu_ns\": {}, \"functions\": [",
                          t->tid, JsonString(t->name), JsonString(d.trigger->detector), r.window_start_ns, r.window_end_ns,
                          r.thread_cpu_ns);
  for (size_t i = 0; i < n; ++i) {
    const auto& f = r.functions[i];
    tb.AddRow({Table::Cell(HumanNs(f.self_cpu_ns)), Table::Cell(HumanNs(f.self_wait_ns())), Table::Cell(HumanNs(f.self_ns)),
               Table::Cell(Count(f.calls)), Table::Cell(f.name)});
    lead.json += fmt::format("{}{{\"name\": {}, \"self_ns\": {}, \"self_cpu_ns\": {}, \"calls\": {}}}", i ? ", " : "",
                             JsonString(f.name), f.self_ns, f.self_cpu_ns, f.calls);
  }
  lead.json += "]}";
  std::string body = tb.Render(Style::For(stdout), TerminalColumns(stdout));
  // Indented under its heading.
  std::string indented;
  size_t from = 0;
  while (from < body.size()) {
    const size_t nl = body.find('\n', from);
    indented += "  " + body.substr(from, nl == std::string::npos ? std::string::npos : nl + 1 - from);
    if (nl == std::string::npos) break;
    from = nl + 1;
  }
  lead.text += indented + "\n  All threads:\n";
  return lead;
}

Outcome Run(const ReportOptions& o) {
  analyses::SortKey key = analyses::SortKey::kSelf;
  if (o.sort != "auto" && !analyses::ParseSortKey(o.sort, &key))
    return Outcome::Usage("unknown sort key '" + o.sort + "' (self, cpu, wait, inclusive, calls, max, avg or name)");
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    return Outcome::Usage("unknown format '" + o.format + "' (table, json or csv)");
  if (Outcome out = CheckWindow(o.window); !out.ok()) return out;
  OpenedDump od;
  if (Outcome out = od.Open(o.path, o.symbols, o.thread, o.window); !out.ok()) return out;
  analyses::Report report;
  const std::string shed_json = ShedJson(od.dump(), od.symbols()), shed_footer = ShedFooter(od.dump(), od.symbols());
  analyses::ReportOptions ro;
  ro.per_thread = o.per_thread;
  ro.all_threads = o.all_threads || !o.thread.empty();  // a thread asked for by name is never set aside
  ro.wait_globs = o.wait;
  Status s = analyses::ReportDump(od.dump(), od.symbols(), od.Walking("reporting"), ro, &report);
  od.Done();
  if (!s.ok()) return Outcome::Of(s);
  // By default: by time on CPU where every ranked thread's is known, else by self time.
  if (o.sort == "auto") key = report.cpu_known ? analyses::SortKey::kCpu : analyses::SortKey::kSelf;
  const Lead lead = LeadThread(o, od, key);

  std::vector<analyses::FunctionStats> rows = report.functions;
  analyses::SortFunctions(&rows, key);
  const int top = o.top >= 0 ? o.top : (o.format == "table" ? kDefaultTableRows : -1);
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  std::string text = o.format == "json"  ? Json(o, report, rows, shed_json, SortName(key), lead.json)
                     : o.format == "csv" ? Csv(o, report, rows)
                                         : TableText(o, report, rows, key, shed_footer, lead.text);
  fwrite(text.data(), 1, text.size(), stdout);
  return Outcome::Ok();
}

}  // namespace

Runner SetupReport(CLI::App* sub) {
  auto o = std::make_shared<ReportOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("--sort", o->sort,
                  "Order by cpu (self time on CPU; the default when CPU readings cover every thread), self (the "
                  "default otherwise), wait, inclusive, calls, max, avg or name");
  sub->add_option("--top", o->top, "Show the first N functions (default: 25 in a table, all in json/csv)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--format", o->format, "table (default), json or csv");
  sub->add_flag("--per-thread", o->per_thread, "One row per thread and function instead of merging threads");
  sub->add_flag("--all-threads", o->all_threads,
                "Rank every thread, also those that only waited and a JVM's housekeeping threads (by default listed "
                "once at the end)");
  sub->add_option("--wait", o->wait,
                  "FUNCTION_GLOB: time inside it is waiting, not work (repeatable; added to the built-in blocking "
                  "calls and the dump's --stall-idle globs)");
  AddDumpSelectionFlags(sub, o.get());
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
