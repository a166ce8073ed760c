// lookback sql DUMP_OR_DIR... -o fleet.db: dumps as one SQLite database in
// the fleet schema (docs/analyses.md "lookback sql", docs/fleet.md).
#include <set>
#include <string>

#include "analyses/sql.h"
#include "cli/commands.h"
#include "cli/fleet_input.h"

namespace lookback::cli {
namespace {

struct SqlOptions {
  FleetInput in;
  std::string out;
  bool index = false;
};

// Every dump into one transaction; a dump that fails half way cannot leave
// rows behind because the walk fails before its first row (a dump is
// checked whole when it is opened). A dump given twice (the same file under
// two names, a directory and a file in it) goes in once, as in a dataset.
class SqliteTarget : public FleetTarget {
 public:
  explicit SqliteTarget(analyses::SqliteTables& db) : db_(db) {}
  Start BeginDump(const analyses::fleet::DumpIdentity& id, std::string*) override {
    return seen_.insert(id.dump_id).second ? Start::kExport : Start::kAlreadyThere;
  }
  std::string EndDump(bool) override { return ""; }
  std::string Row(analyses::fleet::Table t, std::span<const analyses::fleet::Value> v) override { return db_.Row(t, v); }

 private:
  analyses::SqliteTables& db_;
  std::set<int64_t> seen_;
};

int Run(const SqlOptions& o) {
  auto db = analyses::SqliteTables::Create(o.out);
  if (!db.ok()) return Fail(db.error().message), kExitError;
  SqliteTarget target(*db.value());
  const int rc = ExportFleet(o.in, target, "exporting to SQLite");
  if (rc != kExitOk && rc != kExitPartial) return rc;  // the temporary database goes with `db`
  if (std::string err = db.value()->Finish(o.index); !err.empty()) return Fail(err), kExitError;
  if (!o.in.quiet) fprintf(stderr, "lookback: wrote %s\n", o.out.c_str());
  return rc;
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
