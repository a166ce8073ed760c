// lookback diff A.lbk B.lbk: the functions whose self and inclusive time
// changed most from A to B, matched by name (addresses differ between
// builds); absolute and relative change, calls and average per call.
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

constexpr int kDefaultTableRows = 20;

struct DiffOptions : DumpSelection {
  std::string a, b, sort = "self", format = "table";
  int top = -1;  // -1: kDefaultTableRows for a table, everything otherwise
  bool all_threads = false;
  std::vector<std::string> wait;
};

// Reads one side.
Outcome Load(const DiffOptions& o, const std::string& path, analyses::Report* out) {
  OpenedDump od;
  if (Outcome out = od.Open(path, o.symbols, o.thread, o.window, false, path + ": "); !out.ok()) return out;
  // Threads that only waited (and a JVM's housekeeping threads) are left
  // out, as in report: a regression is ranked among the work.
  analyses::ReportOptions ro;
  ro.all_threads = o.all_threads || !o.thread.empty();
  ro.wait_globs = o.wait;
  Status s = analyses::ReportDump(od.dump(), od.symbols(), od.Walking("reading " + path), ro, out);
  od.Done();
  if (!s.ok()) return Outcome::Error(path + ": " + s.message());
  return Outcome::Ok();
}

using analyses::FunctionDiff;

std::string Json(const DiffOptions& o, const analyses::Report& ra, const analyses::Report& rb,
                 const std::vector<FunctionDiff>& rows, size_t total) {
  std::string out = "{\n";
  out += fmt::format("  \"a\": {},\n  \"b\": {},\n  \"sort\": {},\n", JsonString(o.a), JsonString(o.b),
                     JsonString(o.sort));
  out += fmt::format("  \"thread_time_a_ns\": {},\n  \"thread_time_b_ns\": {},\n  \"functions_total\": {},\n",
                     ra.thread_time_ns, rb.thread_time_ns, total);
  out += "  \"functions\": [";
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = rows[i];
    out += i ? ",\n    {" : "\n    {";
    out += fmt::format(
        "\"name\": {}, \"in_a\": {}, \"in_b\": {}, \"calls_a\": {}, \"calls_b\": {}, "
        "\"self_a_ns\": {}, \"self_b_ns\": {}, \"self_delta_ns\": {}, \"self_relative\": {}, "
        "\"inclusive_a_ns\": {}, \"inclusive_b_ns\": {}, \"inclusive_delta_ns\": {}, \"inclusive_relative\": {}, "
        "\"avg_a_ns\": {}, \"avg_b_ns\": {}, \"avg_delta_ns\": {}, \"avg_relative\": {}, "
        "\"self_cpu_a_ns\": {}, \"self_cpu_b_ns\": {}, \"self_cpu_delta_ns\": {}}}",
        JsonString(f.name), f.in_a, f.in_b, f.calls_a, f.calls_b, f.self_a, f.self_b, f.self_delta(),
        JsonNumber(FunctionDiff::Relative(f.self_a, f.self_b)), f.inclusive_a, f.inclusive_b, f.inclusive_delta(),
        JsonNumber(FunctionDiff::Relative(f.inclusive_a, f.inclusive_b)), f.avg_a, f.avg_b, f.avg_delta(),
        JsonNumber(FunctionDiff::Relative(f.avg_a, f.avg_b)), f.self_cpu_a, f.self_cpu_b, f.self_cpu_delta());
  }
  out += rows.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string Csv(const std::vector<FunctionDiff>& rows) {
  auto rel = [](int64_t a, int64_t b) {
    const double r = FunctionDiff::Relative(a, b);
    return std::isfinite(r) ? fmt::format("{:.6f}", r) : std::string();  // empty: new in B
  };
  std::string out =
      "function,in_a,in_b,calls_a,calls_b,self_a_ns,self_b_ns,self_delta_ns,self_relative,"
      "inclusive_a_ns,inclusive_b_ns,inclusive_delta_ns,inclusive_relative,avg_a_ns,avg_b_ns,avg_delta_ns,avg_relative\n";
  for (const auto& f : rows) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", CsvField(f.name), int{f.in_a},
                       int{f.in_b}, f.calls_a, f.calls_b, f.self_a, f.self_b, f.self_delta(), rel(f.self_a, f.self_b),
                       f.inclusive_a, f.inclusive_b, f.inclusive_delta(), rel(f.inclusive_a, f.inclusive_b), f.avg_a,
                       f.avg_b, f.avg_delta(), rel(f.avg_a, f.avg_b));
  }
  return out;
}

std::string TableText(const DiffOptions& o, const analyses::Report& ra, const analyses::Report& rb,
                      const std::vector<FunctionDiff>& rows, size_t total) {
  const Style style = Style::For(stdout);
  const char* by = o.sort == "self" ? "self time" : o.sort == "inclusive" ? "inclusive time"
                                                : o.sort == "avg"       ? "average call"
                                                                        : "calls";
  std::string out = fmt::format("A {}: {} calls in {}\nB {}: {} calls in {}\nlargest change in {} first\n\n", o.a,
                                Count(ra.calls), HumanNs(ra.thread_time_ns), o.b, Count(rb.calls),
                                HumanNs(rb.thread_time_ns), by);
  auto delta_color = [](int64_t d) { return d > 0 ? Style::kRed : d < 0 ? Style::kGreen : Style::kNone; };
  auto calls = [](const FunctionDiff& f) {
    return f.calls_a == f.calls_b ? Count(f.calls_a) : Count(f.calls_a) + " → " + Count(f.calls_b);
  };
  Table t;
  t.AddColumn("Δ SELF", Table::kRight);
  t.AddColumn("%", Table::kRight);
  t.AddColumn("SELF A", Table::kRight);
  t.AddColumn("SELF B", Table::kRight);
  t.AddColumn("Δ INCL", Table::kRight);
  t.AddColumn("%", Table::kRight);
  t.AddColumn("AVG A", Table::kRight);
  t.AddColumn("AVG B", Table::kRight);
  t.AddColumn("CALLS", Table::kRight);
  t.AddColumn("FUNCTION", Table::kLeft, /*elastic=*/true);
  for (const auto& f : rows) {
    t.AddRow({{SignedHumanNs(f.self_delta()), delta_color(f.self_delta())},
              {RelativeChange(f.self_a, f.self_b), delta_color(f.self_delta())},
              {HumanNs(f.self_a), Style::kDim},
              {HumanNs(f.self_b), Style::kDim},
              {SignedHumanNs(f.inclusive_delta()), delta_color(f.inclusive_delta())},
              {RelativeChange(f.inclusive_a, f.inclusive_b), delta_color(f.inclusive_delta())},
              {HumanNs(f.avg_a), Style::kDim},
              {HumanNs(f.avg_b), Style::kDim},
              calls(f),
              f.name + (!f.in_a ? " (new)" : !f.in_b ? " (gone)" : "")});
  }
  out += t.Render(style, TerminalColumns(stdout));
  if (rows.size() < total)
    out += style.Paint(fmt::format("  ... {} more (--top N)\n", total - rows.size()), Style::kDim);
  for (const auto* r : {&ra, &rb}) {
    if (r->repairs.clipped() || r->repairs.lost_records) {
      out += fmt::format("\n  {}: {} frames clipped or repaired, {} records overwritten before the dump "
                         "(`lookback report` shows which).",
                         r == &ra ? "A" : "B", Count(r->repairs.clipped()), Count(r->repairs.lost_records));
    }
  }
  if (ra.repairs.clipped() || ra.repairs.lost_records || rb.repairs.clipped() || rb.repairs.lost_records) out += "\n";
  return out;
}

Outcome Run(const DiffOptions& o) {
  analyses::DiffSortKey key;
  if (!analyses::ParseDiffSortKey(o.sort, &key))
    return Outcome::Usage("unknown sort key '" + o.sort + "' (self, cpu, inclusive, avg or calls)");
  if (o.format != "table" && o.format != "json" && o.format != "csv")
    return Outcome::Usage("unknown format '" + o.format + "' (table, json or csv)");
  if (Outcome out = CheckWindow(o.window); !out.ok()) return out;
  analyses::Report ra, rb;
  if (Outcome out = Load(o, o.a, &ra); !out.ok()) return out;
  if (Outcome out = Load(o, o.b, &rb); !out.ok()) return out;
  std::vector<FunctionDiff> rows = analyses::DiffReports(ra, rb, key);
  const size_t total = rows.size();
  const int top = o.top >= 0 ? o.top : (o.format == "table" ? kDefaultTableRows : -1);
  if (top >= 0 && rows.size() > static_cast<size_t>(top)) rows.resize(static_cast<size_t>(top));
  std::string text = o.format == "json" ? Json(o, ra, rb, rows, total)
                     : o.format == "csv" ? Csv(rows)
                                         : TableText(o, ra, rb, rows, total);
  fwrite(text.data(), 1, text.size(), stdout);
  return Outcome::Ok();
}

}  // namespace

Runner SetupDiff(CLI::App* sub) {
  auto o = std::make_shared<DiffOptions>();
  sub->add_option("a", o->a, "The dump before (.lbk)")->required();
  sub->add_option("b", o->b, "The dump after (.lbk)")->required();
  sub->add_option("--sort", o->sort,
                  "Order by the absolute change of self (default), cpu (self time on CPU), inclusive, avg or calls");
  sub->add_flag("--all-threads", o->all_threads,
                "Also compare threads that only waited and a JVM's housekeeping threads (left out by default)");
  sub->add_option("--wait", o->wait, "FUNCTION_GLOB: time inside it is waiting, not work (repeatable)");
  sub->add_option("--top", o->top, "Show the first N functions (default: 20 in a table, all in json/csv)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--format", o->format, "table (default), json or csv");
  AddDumpSelectionFlags(sub, o.get(), /*both_dumps=*/true);
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
