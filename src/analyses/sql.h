// `lookback sql`: a dump as an SQLite database (threads, functions, calls),
// for questions no built-in analysis answers. Schema and example queries:
// docs/analyses.md ("lookback sql").
//
// Written with the sqlite3 C library in one transaction through prepared
// statements, journal and fsync off (the database is derived data: it can be
// made again from the dump), into a temporary file beside the target that is
// renamed at the end; a failed export leaves nothing behind.
//
// Call ids are assigned at Enter, in the order calls start, and each row is
// inserted at its Exit, when its duration and self time are known: one
// INSERT per call and no UPDATE. A per-thread stack of (id, start, children
// time) gives every call its parent, so memory is bounded by the call depth.
// Indexes are built once, after the last row.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "model/walk.h"

namespace lookback::analyses {

// CREATE statements of the schema (tables, then indexes and views).
extern const char* const kSqlTables;
extern const char* const kSqlIndexes;

struct SqlExportStats {
  uint64_t threads = 0, functions = 0, calls = 0;
};

class SqlSink : public model::TraceSink {
 public:
  explicit SqlSink(std::string out_path);
  ~SqlSink() override;  // abandons (removes the temporary file) unless End() succeeded

  std::string Begin(const model::ExportContext& ctx) override;
  void BeginThread(const format::ThreadInfo& t) override;
  void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void EndThread(const model::ThreadSummary& summary) override;
  std::string End() override;

  const SqlExportStats& stats() const { return stats_; }

  // Recorded in the `dump` table: the --window given, if any (CLOCK_MONOTONIC ns).
  void SetWindow(std::optional<int64_t> start_ns, std::optional<int64_t> end_ns) {
    window_start_ = start_ns, window_end_ = end_ns;
  }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  SqlExportStats stats_;
  std::optional<int64_t> window_start_, window_end_;
};

}  // namespace lookback::analyses
