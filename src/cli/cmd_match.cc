// lookback match DUMP --signatures FILE: find known-bad call chains (the
// file format is in src/analyses/signatures.h and docs/analyses.md).
#include <fmt/format.h>

#include <string>

#include "analyses/signatures.h"
#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "exporters/json_util.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct MatchOptions : DumpSelection {
  std::string path, signatures, format = "table";
  bool quiet = false;
};

std::string Ns(int64_t ns) {
  const double v = static_cast<double>(ns);
  if (ns < 0) return "-" + Ns(-ns);
  if (ns < 1000) return fmt::format("{}ns", ns);
  if (ns < 1000000) return fmt::format("{:.1f}us", v / 1e3);
  if (ns < 1000000000) return fmt::format("{:.2f}ms", v / 1e6);
  return fmt::format("{:.3f}s", v / 1e9);
}

std::string ThreadLabel(const analyses::MatchWorst& w) {
  return w.thread.empty() ? fmt::format("thread {}", w.tid) : fmt::format("{} ({})", w.thread, w.tid);
}

std::string MatchTable(const analyses::SignatureMatcher& m) {
  const auto& sigs = m.signatures();
  const auto& stats = m.stats();
  size_t width = 9;
  for (const auto& s : sigs) width = std::max(width, s.name.size());
  std::string out = fmt::format("{:<{}}  {:>7}  {:>10}  {:>10}  {:>10}  {}\n", "signature", width, "matches", "total",
                                "avg", "max", "chain");
  for (size_t i = 0; i < sigs.size(); ++i) {
    const auto& s = sigs[i];
    const auto& st = stats[i];
    std::string chain = analyses::ChainText(s);
    if (s.min_last_ns > 0) chain += fmt::format("  (last >= {})", Ns(s.min_last_ns));
    if (s.min_top_ns > 0) chain += fmt::format("  (first >= {})", Ns(s.min_top_ns));
    if (st.matches == 0) {
      out += fmt::format("{:<{}}  {:>7}  {:>10}  {:>10}  {:>10}  {}\n", s.name, width, 0, "-", "-", "-", chain);
      continue;
    }
    out += fmt::format("{:<{}}  {:>7}  {:>10}  {:>10}  {:>10}  {}\n", s.name, width, st.matches, Ns(st.total_ns),
                       Ns(st.total_ns / static_cast<int64_t>(st.matches)), Ns(st.max_ns), chain);
    const auto& w = st.worst;
    std::string stack;
    for (const auto& f : w.stack) {  // the JSON output has the full names
      stack += stack.empty() ? "" : " > ";
      stack += analyses::WithoutParameters(f);
    }
    out += fmt::format("{:<{}}  slowest: {} at +{} ({} before the dump): {}\n", "", width, ThreadLabel(w),
                       Ns(w.ts_ns - m.origin_ns()), Ns(m.dump_ns() - w.ts_ns), stack);
    if (st.open > 0) out += fmt::format("{:<{}}  {} still running at the dump\n", "", width, st.open);
  }
  return out;
}

std::string Json(const analyses::SignatureMatcher& m, const format::Dump& d, const std::string& path) {
  using exporters::AppendJsonString;
  std::string out = "{\"dump\":";
  AppendJsonString(&out, path);
  out += ",\"process\":";
  AppendJsonString(&out, d.process.name);
  out += fmt::format(",\"pid\":{},\"origin_ns\":{},\"dump_ns\":{},\"signatures\":[", d.process.pid, m.origin_ns(),
                     m.dump_ns());
  const auto& sigs = m.signatures();
  for (size_t i = 0; i < sigs.size(); ++i) {
    const auto& s = sigs[i];
    const auto& st = m.stats()[i];
    out += i ? ",\n{" : "\n{";
    out += "\"name\":";
    AppendJsonString(&out, s.name);
    out += ",\"chain\":";
    AppendJsonString(&out, analyses::ChainText(s));
    if (!s.description.empty()) {
      out += ",\"description\":";
      AppendJsonString(&out, s.description);
    }
    out += fmt::format(",\"min_ns\":{},\"min_top_ns\":{},\"matches\":{},\"open\":{},\"total_ns\":{},\"avg_ns\":{},\"max_ns\":{}",
                       s.min_last_ns, s.min_top_ns, st.matches, st.open, st.total_ns,
                       st.matches ? st.total_ns / static_cast<int64_t>(st.matches) : 0, st.max_ns);
    if (st.matches > 0) {
      const auto& w = st.worst;
      out += fmt::format(",\"slowest\":{{\"tid\":{},\"thread\":", w.tid);
      AppendJsonString(&out, w.thread);
      out += fmt::format(",\"ts_ns\":{},\"dur_ns\":{},\"stack\":[", w.ts_ns, w.dur_ns);
      for (size_t k = 0; k < w.stack.size(); ++k) {
        if (k) out += ",";
        AppendJsonString(&out, w.stack[k]);
      }
      out += "]}";
    }
    out += "}";
  }
  out += "\n]}\n";
  return out;
}

Outcome Run(const MatchOptions& o) {
  if (o.format != "table" && o.format != "json") return Outcome::Usage("unknown --format '" + o.format + "' (table or json)");
  if (Outcome out = CheckWindow(o.window); !out.ok()) return out;
  auto file = analyses::LoadSignatures(o.signatures);
  if (!file.ok()) return Outcome::Usage(file.error().message);
  OpenedDump od;
  if (Outcome out = od.Open(o.path, o.symbols, o.thread, o.window, o.quiet); !out.ok()) return out;
  analyses::SignatureMatcher matcher(std::move(file.value()));
  model::WalkResult res = model::Walk(od.dump(), od.symbols(), od.Walking("matching"), matcher);
  od.Done();
  if (!res.status.ok()) return Outcome::Of(res.status);
  const std::string text = o.format == "json" ? Json(matcher, od.dump(), o.path) : MatchTable(matcher);
  fwrite(text.data(), 1, text.size(), stdout);
  if (!o.quiet && o.format == "table") {
    uint64_t lost = 0;
    for (const auto& t : res.threads) lost += t.lost_records;
    if (lost) fprintf(stderr, "lookback: %s records were overwritten before the dump: older matches are gone\n",
                      fmt::format("{}", lost).c_str());
  }
  return Outcome::Ok();
}

}  // namespace

Runner SetupMatch(CLI::App* sub) {
  auto o = std::make_shared<MatchOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("-s,--signatures", o->signatures,
                  "Signature file: blocks of 'name: NAME', 'chain: A >> B > C' ('>' direct child, '>>' any "
                  "descendant), optional 'min: 10ms' (last frame), 'min-top: 50ms' (first frame)")
      ->required();
  sub->add_option("--format", o->format, "table (default) or json");
  AddDumpSelectionFlags(sub, o.get());
  sub->add_flag("-q,--quiet", o->quiet, "Print only errors");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
