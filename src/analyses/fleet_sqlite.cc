#include "analyses/fleet_sqlite.h"

#include "common/atomic_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

namespace lookback::analyses {

// Times are CLOCK_MONOTONIC nanoseconds, the same clock as the dump (and as
// logcat, perfetto and most Linux tracers), so rows line up with other traces.
const char* const kSqlIndexes = R"sql(
CREATE INDEX calls_by_call ON calls(dump_id, call_id);
CREATE INDEX calls_by_function ON calls(dump_id, function_id, duration_ns);
CREATE INDEX calls_by_parent ON calls(dump_id, parent);
CREATE INDEX functions_by_id ON functions(dump_id, function_id);
CREATE INDEX threads_by_id ON threads(dump_id, thread_id);
CREATE INDEX samples_by_thread_ts ON samples(dump_id, thread_id, ts_ns);
CREATE INDEX thread_states_by_thread_ts ON thread_states(dump_id, thread_id, start_ns);
)sql";

const char* const kSqlViews = R"sql(
-- Each interval between two samples of a thread: what changed, and the CPU share.
CREATE VIEW sample_deltas AS
  SELECT dump_id, thread_id, prev_ts AS ts_ns, ts_ns - prev_ts AS duration_ns, cpu_ns - prev_cpu AS cpu_ns,
         CAST(cpu_ns - prev_cpu AS REAL) / NULLIF(ts_ns - prev_ts, 0) AS cpu_share,
         minor_faults - prev_minor AS minor_faults, major_faults - prev_major AS major_faults,
         voluntary_switches - prev_vol AS voluntary_switches, involuntary_switches - prev_invol AS involuntary_switches,
         alloc_bytes - prev_alloc AS alloc_bytes, freed_bytes - prev_freed AS freed_bytes
  FROM (SELECT *, LAG(ts_ns) OVER w AS prev_ts, LAG(cpu_ns) OVER w AS prev_cpu, LAG(minor_faults) OVER w AS prev_minor,
               LAG(major_faults) OVER w AS prev_major, LAG(voluntary_switches) OVER w AS prev_vol,
               LAG(involuntary_switches) OVER w AS prev_invol, LAG(alloc_bytes) OVER w AS prev_alloc,
               LAG(freed_bytes) OVER w AS prev_freed
        FROM samples WINDOW w AS (PARTITION BY dump_id, thread_id ORDER BY ts_ns))
  WHERE prev_ts IS NOT NULL;
CREATE VIEW call_names AS
  SELECT c.dump_id, c.call_id, c.start_ns, c.duration_ns, c.self_ns, c.depth, c.parent, c.flags,
         f.name AS function, f.module, t.tid, t.name AS thread
  FROM calls c JOIN functions f ON f.dump_id = c.dump_id AND f.function_id = c.function_id
  JOIN threads t ON t.dump_id = c.dump_id AND t.thread_id = c.thread_id;
)sql";

namespace {

// CREATE TABLE statements from the fleet tables' definitions (partition keys
// are ordinary columns here).
std::string CreateTables() {
  std::string sql;
  for (int i = 0; i < fleet::kTableCount; ++i) {
    const fleet::TableDef& t = fleet::TableOf(static_cast<fleet::Table>(i));
    sql += fmt::format("CREATE TABLE {}(\n", t.name);
    for (size_t c = 0; c < t.columns.size(); ++c) {
      const fleet::ColumnDef& col = t.columns[c];
      sql += fmt::format("  {} {}{}{}\n", col.name, col.type == CellType::kString ? "TEXT" : "INTEGER",
                         col.nullable ? "" : " NOT NULL", c + 1 < t.columns.size() ? "," : "");
    }
    sql += ");\n";
  }
  return sql;
}

class Statement {
 public:
  Statement() = default;
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  int Prepare(sqlite3* db, const std::string& sql) {
    return sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
  }
  sqlite3_stmt* get() const { return s_; }
  void Finalize() {
    sqlite3_finalize(s_);
    s_ = nullptr;
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

// Rows go in kBatchRows at a time through one multi-row INSERT: SQLite's
// cost per statement run (cursor, halt, reset) is paid once per batch rather
// than per row, which is most of the load's time. The rows of a batch wait
// in `cells`, texts copied into `texts` (a Row()'s texts die when it returns).
constexpr int kBatchRows = 64;

struct Pending {
  std::vector<fleet::Value> cells;  // texts: i = offset in `texts`, length in text_lengths
  std::vector<size_t> text_lengths;  // of the text cells, in order
  std::string texts;
  int rows = 0;
};

struct SqliteTables::Impl {
  std::string path;
  AtomicFile file;  // the database is built in file's temporary, then renamed
  sqlite3* db = nullptr;
  Statement insert[fleet::kTableCount], insert_batch[fleet::kTableCount];
  Pending pending[fleet::kTableCount];
  Status error;  // the first failure
  std::set<int64_t> seen;  // dump_ids loaded

  // Binds `rows` pending rows from `first_row` to `s` and runs it;
  // `*text` counts the text cells bound so far.
  void Run(fleet::Table table, sqlite3_stmt* s, int first_row, int rows, size_t* text) {
    const Pending& p = pending[table];
    const size_t columns = fleet::TableOf(table).columns.size();
    int param = 1;
    for (size_t k = first_row * columns; k < (first_row + rows) * columns; ++k, ++param) {
      const fleet::Value& v = p.cells[k];
      switch (v.kind) {
        case fleet::Value::kNull: sqlite3_bind_null(s, param); break;
        case fleet::Value::kInt: sqlite3_bind_int64(s, param, v.i); break;
        case fleet::Value::kText:
          sqlite3_bind_text(s, param, p.texts.data() + v.i, static_cast<int>(p.text_lengths[(*text)++]), SQLITE_STATIC);
          break;
      }
    }
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    Check(rc, "inserting rows");
  }
  // Writes what is pending: a whole batch at once, a remainder row by row.
  void Flush(fleet::Table table) {
    Pending& p = pending[table];
    size_t text = 0;
    if (p.rows == kBatchRows) {
      Run(table, insert_batch[table].get(), 0, kBatchRows, &text);
    } else {
      for (int r = 0; r < p.rows && error.ok(); ++r) Run(table, insert[table].get(), r, 1, &text);
    }
    p.cells.clear();
    p.text_lengths.clear();
    p.texts.clear();
    p.rows = 0;
  }

  bool Check(int rc, const char* what) {
    if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return true;
    if (error.ok())
      error = Status::Error(
          fmt::format("cannot write '{}': {}: {}", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    return false;
  }
  bool Exec(const char* sql, const char* what) { return Check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), what); }

  void Abandon() {
    for (auto& s : insert) s.Finalize();
    for (auto& s : insert_batch) s.Finalize();
    if (db != nullptr) sqlite3_close(db);
    db = nullptr;
    file.Abandon();
  }
};

SqliteTables::SqliteTables(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SqliteTables::~SqliteTables() { impl_->Abandon(); }

Result<std::unique_ptr<SqliteTables>> SqliteTables::Create(const std::string& out_path) {
  auto m = std::make_unique<Impl>();
  m->path = out_path;
  // Created here rather than by SQLite so a bad path gives the system's
  // reason; SQLite then opens the (empty) temporary by name.
  if (Status st = m->file.Create(out_path); !st.ok()) return Error{st.message()};
  close(m->file.ReleaseFd());
  // One thread writes: no allocator statistics (a global mutex per malloc).
  // Process-wide and only before SQLite starts; later calls fail harmlessly.
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  std::unique_ptr<SqliteTables> t(new SqliteTables(std::move(m)));
  Impl& s = *t->impl_;
  if (!s.Check(sqlite3_open_v2(s.file.temp_path().c_str(), &s.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr), "opening"))
    return Error{s.error.message()};
  // Derived data, written once by one process: no journal, no fsync, no
  // locking round trips. A 16 MiB page cache: the tables are appended to, so
  // a larger one buys nothing but memory.
  s.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
         "PRAGMA page_size=65536; PRAGMA cache_size=-16384; PRAGMA temp_store=FILE;",
         "setting up");
  s.Exec(CreateTables().c_str(), "creating tables");
  s.Exec("BEGIN", "starting the transaction");
  for (int i = 0; i < fleet::kTableCount; ++i) {
    const fleet::TableDef& def = fleet::TableOf(static_cast<fleet::Table>(i));
    std::string row = "(";
    for (size_t c = 0; c < def.columns.size(); ++c) row += c == 0 ? "?" : ",?";
    row += ")";
    std::string batch = fmt::format("INSERT INTO {} VALUES{}", def.name, row);
    s.Check(s.insert[i].Prepare(s.db, batch), "preparing");
    for (int r = 1; r < kBatchRows; ++r) batch += "," + row;
    s.Check(s.insert_batch[i].Prepare(s.db, batch), "preparing");
  }
  if (!s.error.ok()) return Error{s.error.message()};
  return t;
}

// Every dump goes into one transaction; a dump that fails half way cannot
// leave rows behind because the walk fails before its first row (a dump is
// checked whole when it is opened). A dump given twice (the same file under
// two names, a directory and a file in it) goes in once, as in a dataset.
Result<fleet::DatasetSink::Start> SqliteTables::BeginDump(const fleet::DumpIdentity& id) {
  return impl_->seen.insert(id.dump_id).second ? Start::kExport : Start::kAlreadyThere;
}

Status SqliteTables::EndDump(bool) { return Status::Ok(); }

Status SqliteTables::Row(fleet::Table table, std::span<const fleet::Value> values) {
  Impl& m = *impl_;
  if (!m.error.ok()) return m.error;
  Pending& p = m.pending[table];
  for (const fleet::Value& v : values) {
    if (v.kind != fleet::Value::kText) {
      p.cells.push_back(v);
      continue;
    }
    p.cells.push_back({fleet::Value::kText, static_cast<int64_t>(p.texts.size()), {}});
    p.text_lengths.push_back(v.s.size());
    p.texts.append(v.s);
  }
  if (++p.rows == kBatchRows) m.Flush(table);
  return m.error;
}

Status SqliteTables::Finish(bool indexes) {
  Impl& m = *impl_;
  if (m.db == nullptr) return m.error.ok() ? Status::Error("no database open") : m.error;
  for (int t = 0; t < fleet::kTableCount && m.error.ok(); ++t) m.Flush(static_cast<fleet::Table>(t));
  for (auto& s : m.insert) s.Finalize();
  for (auto& s : m.insert_batch) s.Finalize();
  if (m.error.ok() && indexes) m.Exec(kSqlIndexes, "creating indexes");
  if (m.error.ok()) m.Exec(kSqlViews, "creating views");
  if (m.error.ok()) m.Exec("COMMIT", "committing");
  if (m.error.ok()) m.Check(sqlite3_close(m.db), "closing");
  else sqlite3_close(m.db);
  m.db = nullptr;
  if (m.error.ok()) m.error = m.file.Commit();
  if (!m.error.ok()) {
    m.Abandon();
    return m.error;
  }
  return Status::Ok();
}

}  // namespace lookback::analyses
