// lookback convert DUMP --to FORMAT -o OUT: a dump into what people read.
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "exporters/exporters.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct ConvertOptions : DumpSelection {
  std::string path, to, out;
  bool quiet = false;
};

Outcome Run(const ConvertOptions& o) {
  const exporters::ExporterInfo* ex = exporters::FindExporter(o.to);
  if (ex == nullptr) {
    std::string names;
    for (const auto& e : exporters::Exporters()) names += std::string(names.empty() ? "" : ", ") + e.name;
    return Outcome::Usage("unknown format '" + o.to + "' (one of: " + names + ")");
  }
  if (Outcome out = CheckWindow(o.window); !out.ok()) return out;
  OpenedDump od;
  if (Outcome out = od.Open(o.path, o.symbols, o.thread, o.window, o.quiet); !out.ok()) return out;
  exporters::ExportOptions eo;
  eo.out = o.out;
  auto sink = ex->make(eo);
  model::WalkResult res = model::Walk(od.dump(), od.symbols(), od.Walking("converting to " + o.to), *sink);
  od.Done();
  if (!res.status.ok()) return Outcome::Of(res.status);
  if (!o.quiet) {
    uint64_t slices = 0, cut = 0, unwound = 0, open = 0, lost = 0, undecodable = 0;
    for (const auto& t : res.threads) {
      slices += t.slices, cut += t.start_cut, unwound += t.unwound, open += t.open, lost += t.lost_records;
      undecodable += t.decode.undecodable_prefix;
    }
    fprintf(stderr, "lookback: wrote %s (%s): %zu thread(s), %s calls", o.out.c_str(), o.to.c_str(), res.threads.size(),
            fmt::format("{}", slices).c_str());
    if (cut) fprintf(stderr, ", %s begun before the window", fmt::format("{}", cut).c_str());
    if (open) fprintf(stderr, ", %s still running at the end", fmt::format("{}", open).c_str());
    if (unwound) fprintf(stderr, ", %s missing exits repaired", fmt::format("{}", unwound).c_str());
    if (lost) fprintf(stderr, ", %s records overwritten before the dump", fmt::format("{}", lost).c_str());
    if (undecodable) fprintf(stderr, ", %s records undecodable", fmt::format("{}", undecodable).c_str());
    fprintf(stderr, "\n");
  }
  return Outcome::Ok();
}

}  // namespace

Runner SetupConvert(CLI::App* sub) {
  auto o = std::make_shared<ConvertOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  std::string formats;
  for (const auto& e : exporters::Exporters()) formats += fmt::format("\n  {:<11} {}", e.name, e.description);
  sub->add_option("--to", o->to, "Output format:" + formats)->required();
  sub->add_option("-o,--output", o->out, "Output file (a directory for nanoscope)")->required();
  AddDumpSelectionFlags(sub, o.get());
  sub->add_flag("-q,--quiet", o->quiet, "Print only errors");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
