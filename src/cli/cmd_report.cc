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
  std::string path, sort = "self", format = "table";
  int top = -1;  // -1: kDefaultTableRows for a table, everything otherwise
  bool per_thread = false;
};

double Share(int64_t part, int64_t whole) { return whole > 0 ? static_cast<double>(part) / whole : 0.0; }

std::string Json(const ReportOptions& o, const analyses::Report& r, const std::vector<analyses::FunctionStats>& rows,
                 const std::string& shed) {
  std::string out = "{\n";
  out += fmt::format("  \"dump\": {},\n  \"sort\": {},\n", JsonString(o.path), JsonString(o.sort));
  out += fmt::format("  \"threads\": {},\n  \"calls\": {},\n  \"functions_total\": {},\n", r.threads, r.calls,
                     r.functions.size());
  out += fmt::format("  \"thread_time_ns\": {},\n  \"window_start_ns\": {},\n  \"window_end_ns\": {},\n",
                     r.thread_time_ns, r.window_start_ns, r.window_end_ns);
  out += fmt::format(
      "  \"repairs\": {{\"start_cut\": {}, \"open\": {}, \"unwound\": {}, \"unmatched_exits\": {}, "
      "\"lost_records\": {}}},\n",
      r.repairs.start_cut, r.repairs.open, r.repairs.unwound, r.repairs.unmatched_exits, r.repairs.lost_records);
  out += "  \"shed\": " + shed + ",\n";
  out += "  \"functions\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = rows[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format("\"name\": {}, \"module\": {}, ", JsonString(f.name), JsonString(f.module));
    if (o.per_thread) out += fmt::format("\"tid\": {}, \"thread\": {}, ", f.tid, JsonString(f.thread));
    out += fmt::format(
        "\"calls\": {}, \"outer_calls\": {}, \"self_ns\": {}, \"inclusive_ns\": {}, \"avg_ns\": {}, \"max_ns\": {}, "
        "\"self_share\": {}, \"inclusive_share\": {}, \"clipped\": {}}}",
        f.calls, f.outer_calls, f.self_ns, f.inclusive_ns, f.avg_ns(), f.max_ns,
        JsonNumber(Share(f.self_ns, r.thread_time_ns)), JsonNumber(Share(f.inclusive_ns, r.thread_time_ns)),
        f.clipped);
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
  out += "function,module,calls,outer_calls,self_ns,inclusive_ns,avg_ns,max_ns,self_share,inclusive_share,clipped\n";
  for (const auto& f : rows) {
    if (o.per_thread) out += fmt::format("{},{},", f.tid, CsvField(f.thread));
    out += fmt::format("{},{},{},{},{},{},{},{},{:.6f},{:.6f},{}\n", CsvField(f.name), CsvField(f.module), f.calls,
                       f.outer_calls, f.self_ns, f.inclusive_ns, f.avg_ns(), f.max_ns,
                       Share(f.self_ns, r.thread_time_ns), Share(f.inclusive_ns, r.thread_time_ns), f.clipped);
  }
  return out;
}

std::string TableText(const ReportOptions& o, const analyses::Report& r,
                      const std::vector<analyses::FunctionStats>& rows, analyses::SortKey key, const std::string& shed) {
  const Style style = Style::For(stdout);
  using K = analyses::SortKey;
  const char* by = key == K::kSelf        ? "self time"
                   : key == K::kInclusive ? "inclusive time"
                   : key == K::kCalls     ? "calls"
                   : key == K::kMax       ? "longest call"
                   : key == K::kAvg       ? "average call"
                                          : "name";
  std::string out = fmt::format("{} thread{}, {} calls of {} functions in {} of traced thread time; by {}\n\n",
                                r.threads, r.threads == 1 ? "" : "s", Count(r.calls), Count(r.functions.size()),
                                HumanNs(r.thread_time_ns), by);
  Table t;
  if (o.per_thread) t.AddColumn("THREAD", Table::kLeft);
  t.AddColumn("CALLS", Table::kRight);
  t.AddColumn("SELF", Table::kRight);
  t.AddColumn("SELF%", Table::kRight);
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
  if (uncertain)
    out += "  Functions marked ~ were traced with the fast clock and their inclusive time may be off by more than 1 %:\n"
           "  the timestamps of their calls are bounds wider than that (lookback info shows the dump's bounds).\n";
  return out;
}

int Run(const ReportOptions& o) {
  analyses::SortKey key;
  if (!analyses::ParseSortKey(o.sort, &key))
    return Fail("unknown sort key '" + o.sort + "' (self, inclusive, calls, max, avg or name)"), kExitUsage;
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    return Fail("unknown format '" + o.format + "' (table, json or csv)"), kExitUsage;
  if (int rc = CheckWindow(o.window); rc != kExitOk) return rc;
  OpenedDump od;
  if (int rc = od.Open(o.path, o.symbols, o.thread, o.window); rc != kExitOk) return rc;
  analyses::Report report;
  const std::string shed_json = ShedJson(od.dump(), od.symbols()), shed_footer = ShedFooter(od.dump(), od.symbols());
  std::string err = analyses::ReportDump(od.dump(), od.symbols(), od.Walking("reporting"),
                                         analyses::ReportOptions{o.per_thread}, &report);
  od.Done();
  if (!err.empty()) return Fail(err), kExitError;

  std::vector<analyses::FunctionStats> rows = report.functions;
  analyses::SortFunctions(&rows, key);
  const int top = o.top >= 0 ? o.top : (o.format == "table" ? kDefaultTableRows : -1);
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  std::string text = o.format == "json"  ? Json(o, report, rows, shed_json)
                     : o.format == "csv" ? Csv(o, report, rows)
                                         : TableText(o, report, rows, key, shed_footer);
  fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

}  // namespace

Runner SetupReport(CLI::App* sub) {
  auto o = std::make_shared<ReportOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("--sort", o->sort, "Order by self (default), inclusive, calls, max, avg or name");
  sub->add_option("--top", o->top, "Show the first N functions (default: 25 in a table, all in json/csv)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--format", o->format, "table (default), json or csv");
  sub->add_flag("--per-thread", o->per_thread, "One row per thread and function instead of merging threads");
  AddDumpSelectionFlags(sub, o.get());
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
