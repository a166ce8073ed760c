// lookback sql DUMP -o trace.db: the dump's threads, functions and calls as
// an SQLite database (schema and example queries in docs/analyses.md).
#include <fmt/format.h>

#include <string>

#include "analyses/sql.h"
#include "cli/commands.h"
#include "cli/opened_dump.h"
#include "cli/progress.h"
#include "format/reader.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::cli {
namespace {

struct SqlOptions {
  std::string path, out, thread, window;
  std::vector<std::string> symbols;
  bool quiet = false;
};

int Run(const SqlOptions& o) {
  if (int rc = CheckWindow(o.window); rc != kExitOk) return rc;
  OpenedDump od;
  if (int rc = od.Open(o.path, o.symbols, o.thread, o.window, o.quiet); rc != kExitOk) return rc;
  analyses::SqlSink sink(o.out);
  const model::WalkOptions& wo = od.Walking("exporting to SQLite");
  sink.SetWindow(wo.window_start_ns, wo.window_end_ns);
  model::WalkResult res = model::Walk(od.dump(), od.symbols(), wo, sink);
  od.Done();
  if (!res.error.empty()) return Fail(res.error), kExitError;
  if (!o.quiet) {
    uint64_t lost = 0;
    for (const auto& t : res.threads) lost += t.lost_records;
    const auto& s = sink.stats();
    fprintf(stderr, "lookback: wrote %s: %s thread(s), %s function(s), %s calls", o.out.c_str(),
            fmt::format("{}", s.threads).c_str(), fmt::format("{}", s.functions).c_str(),
            fmt::format("{}", s.calls).c_str());
    if (lost) fprintf(stderr, ", %s records overwritten before the dump", fmt::format("{}", lost).c_str());
    fprintf(stderr, "\n");
  }
  return kExitOk;
}

}  // namespace

Runner SetupSql(CLI::App* sub) {
  auto o = std::make_shared<SqlOptions>();
  sub->add_option("dump", o->path, "A .lbk dump file")->required();
  sub->add_option("-o,--output", o->out, "The SQLite database to write (replaced if it exists)")->required();
  sub->add_option("--thread", o->thread, "Only this thread (tid or name)");
  sub->add_option("--window", o->window,
                  "Only START..END: signed times are relative to the dump (-2s.. = the last two seconds), "
                  "unsigned ones to the first event (0..500ms); units ns, us, ms, s");
  sub->add_option("--symbols", o->symbols, "Extra directories to look for the traced binaries in (by name or build id)");
  sub->add_flag("-q,--quiet", o->quiet, "Print only errors");
  sub->footer("Tables: dump, threads, functions, calls, samples, thread_states (+ views call_names, sample_deltas); times in CLOCK_MONOTONIC ns. "
              "See docs/analyses.md for the schema and example queries.");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
