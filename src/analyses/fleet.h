// The fleet tables: many dumps from many machines as rows, in one schema
// shared by the SQLite export (`lookback sql`) and the Parquet dataset
// (`lookback export --to parquet`), so a query written once runs on both
// (docs/fleet.md documents every column).
//
// FleetRows walks a dump (it is a TraceSink) and hands each row to a
// TableSink; the two back-ends only store rows. Every row carries the dump's
// `dump_id`, a 63-bit hash of what identifies a dump (host, pid, dump
// sequence number, dump time, dump TSC), the same whichever back-end and
// whenever it is exported, so datasets can be appended to and re-exporting a
// dump is recognised. Ids inside a dump (thread_id, function_id, call_id)
// count from 1 in the order the walk meets them.
//
// Memory is bounded as in the walk: a call stack per thread, the function
// table of the dump, and the matcher's per-signature state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyses/signatures.h"
#include "common/cell.h"
#include "common/result.h"
#include "common/status.h"
#include "model/waiting.h"
#include "model/cpu_time.h"
#include "model/walk.h"

namespace lookback::analyses::fleet {

// Bump on any change of a table or column; recorded in dumps.schema_version
// and the Parquet files' key/value metadata.
inline constexpr int kSchemaVersion = 2;  // 2: calls.cpu_ns/self_cpu_ns, threads.cpu_ns/waited/housekeeping

struct ColumnDef {
  const char* name;
  CellType type;
  bool nullable;
  bool dictionary;  // Parquet: dictionary-encoded (repetitive values)
  bool partition;   // Parquet: a Hive partition key (in the path, not in the file)
};

enum Table : uint8_t { kDumps, kThreads, kFunctions, kCalls, kSamples, kThreadStates, kSignatureMatches, kShed, kTableCount };

struct TableDef {
  const char* name;
  std::span<const ColumnDef> columns;
};
const TableDef& TableOf(Table t);

// One cell (common/cell.h). Text points into memory that lives until Row()
// returns.
using Value = Cell;

// Where rows go: a database, Parquet files. Rows of a table arrive with one
// value per column of TableOf(table), in order.
class TableSink {
 public:
  virtual ~TableSink() = default;
  // An error lets the walk go on, but its rows are then dropped and End
  // reports it.
  virtual Status Row(Table table, std::span<const Value> values) = 0;
};

// What identifies a dump and where it partitions; read from the dump alone.
struct DumpIdentity {
  int64_t dump_id = 0;
  std::string host, program, build_id, day;  // day: UTC date of the dump, YYYY-MM-DD
};
DumpIdentity IdentityOf(const format::Dump& dump);

// A destination for whole dumps (fleet_sqlite.h, fleet_parquet.h): it sees
// where each dump begins and ends, so it can make a dump's rows visible all
// at once, or not at all, and recognise a dump it already holds.
class DatasetSink : public TableSink {
 public:
  enum class Start { kExport, kAlreadyThere };
  // Before a dump's first row. kAlreadyThere skips the dump (appending the
  // same dump twice); an error skips it too and is reported.
  virtual Result<Start> BeginDump(const DumpIdentity& id) = 0;
  // After its last row: `ok` false drops what it wrote.
  virtual Status EndDump(bool ok) = 0;
};


struct FleetOptions {
  std::string file;  // the dump's path, recorded in dumps.file
  std::optional<int64_t> window_start_ns, window_end_ns;  // --window, recorded in dumps
  const std::vector<Signature>* signatures = nullptr;     // --signatures: fills signature_matches
  std::vector<std::string> wait_globs;                     // more waiting functions (model/waiting.h)
};

struct FleetStats {
  uint64_t threads = 0, functions = 0, calls = 0, samples = 0, states = 0, matches = 0;
};

class FleetRows : public model::TraceSink {
 public:
  FleetRows(TableSink& out, FleetOptions options);
  ~FleetRows() override;

  Status Begin(const model::ExportContext& ctx) override;
  void BeginThread(const format::ThreadInfo& t) override;
  void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void EndThread(const model::ThreadSummary& summary) override;
  Status End() override;  // the first error of the table sink, if any

  const FleetStats& stats() const { return stats_; }

 private:
  struct Frame {
    int64_t id, function_id, start, children;
    uint8_t flags;
  };
  int64_t thread_first_ = -1, thread_last_ = 0;
  model::WaitTracker waiting_;  // the thread being walked (model/cpu_time.h)
  model::WaitFunctions waits_;
  bool jvm_ = false;
  void Put(Table t, std::span<const Value> values);
  int64_t FunctionId(uint64_t key);
  void PutSamples(const format::ThreadSamples& samples);

  TableSink& out_;
  FleetOptions options_;
  std::unique_ptr<SignatureMatcher> matcher_;
  const model::ExportContext* ctx_ = nullptr;
  DumpIdentity id_;
  std::unordered_map<uint64_t, int64_t> function_ids_;
  struct IdSlot {
    uint64_t key = ~0ull;  // no key: keys are below 2^56
    int64_t id = 0;
  };
  IdSlot id_cache_[1024];
  std::vector<Frame> stack_;
  int64_t next_call_id_ = 1, thread_id_ = 0;
  const format::ThreadInfo* thread_ = nullptr;
  // The dump's threads rows, put at End(): whether a thread only waited
  // depends on the others' CPU time too (model::StillOnlyWaited), as in report.
  struct PendingThread {
    std::vector<Value> row;
    int64_t cpu_ns = 0;  // the row's cpu_ns, also where it is NULL (no readings: its span less its waiting)
  };
  std::vector<PendingThread> threads_rows_;
  Status error_;
  FleetStats stats_;
};

}  // namespace lookback::analyses::fleet
