// The SQLite sink of the fleet tables (`lookback sql`; fleet_parquet.h is the
// other): dumps as one SQLite database, in the fleet schema
// (analyses/fleet.h: dumps, threads, functions, calls, samples,
// thread_states, signature_matches), for questions no built-in analysis
// answers. Schema and example queries: docs/analyses.md ("lookback sql") and
// docs/fleet.md.
//
// Written with the sqlite3 C library in one transaction through prepared
// statements (one per table, bound and stepped per row), journal and fsync
// off (the database is derived data: it can be made again from the dumps),
// into a temporary file beside the target that is renamed at the end; a
// failed export leaves nothing behind. Tables have no declared keys, so an
// insert appends to a b-tree and nothing else; the indexes are built once,
// after the last row, and only when asked for (building them costs more
// than the load on large dumps). SQLite's page cache is capped, so memory
// does not grow with the dumps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "analyses/fleet.h"

namespace lookback::analyses {

// Indexes and views created after the load.
extern const char* const kSqlIndexes;
extern const char* const kSqlViews;

class SqliteTables : public fleet::DatasetSink {
 public:
  // Creates the temporary database beside `out_path`.
  static Result<std::unique_ptr<SqliteTables>> Create(const std::string& out_path);
  ~SqliteTables() override;  // abandons (removes the temporary file) unless Finish() succeeded
  SqliteTables(const SqliteTables&) = delete;
  SqliteTables& operator=(const SqliteTables&) = delete;

  Result<Start> BeginDump(const fleet::DumpIdentity& id) override;  // kAlreadyThere: a dump_id loaded before
  Status EndDump(bool ok) override;  // nothing to do: all dumps share one transaction
  Status Row(fleet::Table table, std::span<const fleet::Value> values) override;

  // Views, optionally the indexes, commit, close, rename.
  Status Finish(bool indexes);

 private:
  struct Impl;
  explicit SqliteTables(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lookback::analyses
