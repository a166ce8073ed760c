// lookback sql DUMP_OR_DIR... -o fleet.db: dumps as one SQLite database in
// the fleet schema (docs/analyses.md "lookback sql", docs/fleet.md).
#include <string>

#include "analyses/fleet_sqlite.h"
#include "cli/commands.h"
#include "cli/fleet_input.h"

namespace lookback::cli {
namespace {

struct SqlOptions {
  FleetInput in;
  std::string out;
  bool index = false;
};

Outcome Run(const SqlOptions& o) {
  auto db = analyses::SqliteTables::Create(o.out);
  if (!db.ok()) return Outcome::Error(db.error().message);
  Outcome exported = ExportFleet(o.in, *db.value(), "exporting to SQLite");
  if (!exported.ok() && exported.kind() != Outcome::Kind::kPartial) return exported;  // the temporary goes with `db`
  if (Status s = db.value()->Finish(o.index); !s.ok()) return Outcome::Of(s);
  if (!o.in.quiet) fprintf(stderr, "lookback: wrote %s\n", o.out.c_str());
  return exported;
}

}  // namespace

Runner SetupSql(CLI::App* sub) {
  auto o = std::make_shared<SqlOptions>();
  AddFleetOptions(sub, &o->in);
  sub->add_option("-o,--output", o->out, "The SQLite database to write (replaced if it exists)")->required();
  sub->add_flag("--index", o->index,
                "Also build indexes (by call, function, parent, thread) after the load: faster joins, slower export");
  sub->footer("Tables: dumps, threads, functions, calls, samples, thread_states, signature_matches (+ views call_names, "
              "sample_deltas); times in ns. Exit status 3: some dumps could not be read and were skipped. "
              "See docs/analyses.md and docs/fleet.md for the schema and example queries.");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
