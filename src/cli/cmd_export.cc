// lookback export --to parquet DUMP_OR_DIR... -o OUT/: dumps appended to a
// Parquet dataset (analyses/fleet_parquet.h says how; docs/fleet.md).
#include <fmt/format.h>

#include <string>

#include "analyses/fleet_parquet.h"
#include "cli/commands.h"
#include "cli/fleet_input.h"
#include "common/directories.h"

namespace lookback::cli {
namespace {

namespace fleet = analyses::fleet;

struct ExportOptions {
  FleetInput in;
  std::string to, out;
  size_t row_group_rows = 1 << 20;
};

Outcome Run(const ExportOptions& o) {
  if (o.to != "parquet") return Outcome::Usage("unknown --to '" + o.to + "' (parquet)");
  if (o.row_group_rows == 0) return Outcome::Usage("--row-group-rows must be at least 1");
  std::string out = o.out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (Status s = MakeDirectories(out); !s.ok()) return Outcome::Of(s);
  analyses::ParquetDataset dataset(out, o.row_group_rows);
  Outcome exported = ExportFleet(o.in, dataset, "exporting to Parquet");
  if (!o.in.quiet && dataset.files() > 0)
    fprintf(stderr, "lookback: wrote %llu file(s), %s bytes, under %s/\n", static_cast<unsigned long long>(dataset.files()),
            fmt::format("{}", dataset.bytes()).c_str(), out.c_str());
  return exported;
}

}  // namespace

Runner SetupExport(CLI::App* sub) {
  auto o = std::make_shared<ExportOptions>();
  AddFleetOptions(sub, &o->in);
  sub->add_option("--to", o->to, "Output format: parquet")->required();
  sub->add_option("-o,--output", o->out, "The dataset directory (created; appended to if it exists)")->required();
  sub->add_option("--row-group-rows", o->row_group_rows, "Rows per Parquet row group (default 1048576): bounds memory");
  sub->footer("Tables: dumps, threads, functions, calls, samples, thread_states, signature_matches, each under "
              "OUT/<table>/program=<program>/day=<YYYY-MM-DD>/. Exit status 3: some dumps could not be read and were "
              "skipped. See docs/fleet.md.");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
