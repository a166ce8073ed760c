#include "analyses/sql.h"

#include <algorithm>

#include "model/samples.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "symbolize/symbolizer.h"

namespace lookback::analyses {

// Times are CLOCK_MONOTONIC nanoseconds, the same clock as the dump (and as
// logcat, perfetto and most Linux tracers), so rows line up with other traces.
const char* const kSqlTables = R"sql(
CREATE TABLE dump(
  pid INTEGER, process TEXT, exe TEXT, cmdline TEXT, reason TEXT,
  dump_ts INTEGER,       -- when the dump was taken
  origin_ts INTEGER,     -- the earliest call exported
  window_start INTEGER,  -- --window, when given
  window_end INTEGER
);
CREATE TABLE threads(
  id INTEGER PRIMARY KEY,
  tid INTEGER NOT NULL,
  name TEXT NOT NULL,
  start_ts INTEGER,          -- when the recorder first saw the thread
  end_ts INTEGER,            -- when it exited, or the dump time if it was alive
  exited INTEGER NOT NULL,   -- 1 if the thread had exited before the dump
  calls INTEGER NOT NULL,    -- rows in calls
  start_cut INTEGER NOT NULL,
  unwound INTEGER NOT NULL,
  open INTEGER NOT NULL,
  unmatched_exits INTEGER NOT NULL,
  lost_records INTEGER NOT NULL  -- overwritten in the ring before the dump
);
CREATE TABLE functions(
  id INTEGER PRIMARY KEY,
  key INTEGER NOT NULL,   -- the dump's function key (native: its address)
  name TEXT NOT NULL,     -- demangled, or module+0xoffset when unresolved
  module TEXT,
  file TEXT,
  line INTEGER
);
CREATE TABLE calls(
  id INTEGER PRIMARY KEY,              -- in the order calls start, thread by thread
  thread_id INTEGER NOT NULL,          -- threads.id
  function_id INTEGER NOT NULL,        -- functions.id
  ts INTEGER NOT NULL,                 -- entry
  dur INTEGER NOT NULL,                -- inclusive
  self INTEGER NOT NULL,               -- dur minus the children's dur
  depth INTEGER NOT NULL,              -- 0 = outermost frame of the thread
  parent INTEGER,                      -- calls.id of the caller, NULL at depth 0
  flags INTEGER NOT NULL               -- 1 start cut, 2 open at the dump, 4 unwound
);
-- lookback record --sample: the thread's own counters, cumulative, every
-- interval of its CPU time (or wall time with --sample=wall).
CREATE TABLE samples(
  thread_id INTEGER NOT NULL,            -- threads.id
  ts INTEGER NOT NULL,
  cpu_ns INTEGER NOT NULL,               -- thread CPU time
  minor_faults INTEGER NOT NULL,
  major_faults INTEGER NOT NULL,
  voluntary_switches INTEGER NOT NULL,
  involuntary_switches INTEGER NOT NULL,
  rss_bytes INTEGER NOT NULL,            -- process resident set (refreshed every 10 ms)
  heap_bytes INTEGER,                    -- process heap in use; NULL without --sample-alloc
  heap_objects INTEGER,
  alloc_bytes INTEGER,                   -- ever allocated by this thread
  freed_bytes INTEGER                    -- ever freed by this thread
);
-- The thread's scheduler state over time (polled from /proc).
CREATE TABLE thread_states(
  thread_id INTEGER NOT NULL,            -- threads.id
  ts INTEGER NOT NULL,
  dur INTEGER NOT NULL,                  -- until the next change, the thread's exit or the dump
  state TEXT NOT NULL,                   -- Running, Sleeping, Disk wait, ...
  code TEXT NOT NULL                     -- the kernel's letter: R, S, D, ...
);
)sql";

const char* const kSqlIndexes = R"sql(
CREATE INDEX calls_by_function ON calls(function_id, dur);
CREATE INDEX calls_by_thread_ts ON calls(thread_id, ts);
CREATE INDEX calls_by_parent ON calls(parent);
CREATE INDEX functions_by_name ON functions(name);
CREATE INDEX samples_by_thread_ts ON samples(thread_id, ts);
CREATE INDEX thread_states_by_thread_ts ON thread_states(thread_id, ts);
-- Each interval between two samples of a thread: what changed, and the CPU share.
CREATE VIEW sample_deltas AS
  SELECT thread_id, prev_ts AS ts, ts - prev_ts AS dur, cpu_ns - prev_cpu AS cpu_ns,
         CAST(cpu_ns - prev_cpu AS REAL) / NULLIF(ts - prev_ts, 0) AS cpu_share,
         minor_faults - prev_minor AS minor_faults, major_faults - prev_major AS major_faults,
         voluntary_switches - prev_vol AS voluntary_switches, involuntary_switches - prev_invol AS involuntary_switches,
         alloc_bytes - prev_alloc AS alloc_bytes, freed_bytes - prev_freed AS freed_bytes
  FROM (SELECT *, LAG(ts) OVER w AS prev_ts, LAG(cpu_ns) OVER w AS prev_cpu, LAG(minor_faults) OVER w AS prev_minor,
               LAG(major_faults) OVER w AS prev_major, LAG(voluntary_switches) OVER w AS prev_vol,
               LAG(involuntary_switches) OVER w AS prev_invol, LAG(alloc_bytes) OVER w AS prev_alloc,
               LAG(freed_bytes) OVER w AS prev_freed
        FROM samples WINDOW w AS (PARTITION BY thread_id ORDER BY ts))
  WHERE prev_ts IS NOT NULL;
CREATE VIEW call_names AS
  SELECT c.id, c.ts, c.dur, c.self, c.depth, c.parent, c.flags,
         f.name AS function, f.module, t.tid, t.name AS thread
  FROM calls c JOIN functions f ON f.id = c.function_id JOIN threads t ON t.id = c.thread_id;
)sql";

namespace {

class Statement {
 public:
  Statement() = default;
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  int Prepare(sqlite3* db, const char* sql) { return sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr); }
  sqlite3_stmt* get() const { return s_; }
  void Finalize() {
    sqlite3_finalize(s_);
    s_ = nullptr;
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

}  // namespace

struct SqlSink::Impl {
  std::string path, tmp;
  sqlite3* db = nullptr;
  Statement insert_call, insert_function, insert_thread, insert_sample, insert_state;
  std::string error;  // the first failure; later rows are skipped
  bool committed = false;

  const model::ExportContext* ctx = nullptr;
  std::unordered_map<uint64_t, int64_t> function_ids;
  int64_t next_call_id = 1;
  int64_t thread_id = 0;
  const format::ThreadInfo* thread = nullptr;

  struct Frame {
    int64_t id, function_id, start, children;
    uint8_t flags;
  };
  std::vector<Frame> stack;

  bool Check(int rc, const char* what) {
    if (rc == SQLITE_OK || rc == SQLITE_DONE || rc == SQLITE_ROW) return true;
    if (error.empty()) error = fmt::format("cannot write '{}': {}: {}", path, what, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    return false;
  }
  bool Exec(const char* sql, const char* what) { return Check(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), what); }
  bool Step(sqlite3_stmt* s, const char* what) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    return Check(rc, what);
  }

  void Abandon() {
    insert_call.Finalize();
    insert_function.Finalize();
    insert_thread.Finalize();
    if (db != nullptr) sqlite3_close(db);
    db = nullptr;
    if (!tmp.empty() && !committed) unlink(tmp.c_str());
  }

  int64_t FunctionId(uint64_t key) {
    auto [it, added] = function_ids.try_emplace(key, static_cast<int64_t>(function_ids.size() + 1));
    if (added && error.empty()) {
      sqlite3_stmt* s = insert_function.get();
      sqlite3_bind_int64(s, 1, it->second);
      sqlite3_bind_int64(s, 2, static_cast<int64_t>(key));
      if (ctx->symbols != nullptr) {
        const symbolize::Symbol& sym = ctx->symbols->Lookup(key);
        sqlite3_bind_text(s, 3, sym.name.data(), static_cast<int>(sym.name.size()), SQLITE_TRANSIENT);
        BindOptionalText(s, 4, sym.module);
        BindOptionalText(s, 5, sym.file);
        if (sym.line > 0) sqlite3_bind_int(s, 6, sym.line); else sqlite3_bind_null(s, 6);
      } else {
        const std::string hex = fmt::format("0x{:x}", key);
        sqlite3_bind_text(s, 3, hex.data(), static_cast<int>(hex.size()), SQLITE_TRANSIENT);
        for (int i = 4; i <= 6; ++i) sqlite3_bind_null(s, i);
      }
      Step(s, "inserting a function");
    }
    return it->second;
  }

  void InsertSamples(const format::ThreadSamples& ts) {
    const bool alloc = (ts.flags & format::kSampleAlloc) != 0;
    static constexpr format::SampleField kColumns[] = {
        format::kSampleCpuNs, format::kSampleMinorFaults, format::kSampleMajorFaults,
        format::kSampleVoluntarySwitches, format::kSampleInvoluntarySwitches, format::kSampleRssBytes,
        format::kSampleHeapBytes, format::kSampleHeapObjects, format::kSampleAllocBytes, format::kSampleFreedBytes};
    for (const auto& v : ts.samples) {
      if (!error.empty()) return;
      sqlite3_stmt* s = insert_sample.get();
      sqlite3_bind_int64(s, 1, thread_id);
      sqlite3_bind_int64(s, 2, ctx->clock.MonotonicNs(v[format::kSampleTsc]));
      int col = 3;
      for (format::SampleField f : kColumns) {
        const bool needs_alloc = f >= format::kSampleHeapBytes;
        if (needs_alloc && !alloc) sqlite3_bind_null(s, col++);
        else sqlite3_bind_int64(s, col++, static_cast<int64_t>(v[f]));
      }
      Step(s, "inserting a sample");
    }
    for (const model::StateSpan& span : model::StateSpans(ts, *thread)) {
      if (!error.empty()) return;
      sqlite3_stmt* s = insert_state.get();
      const int64_t begin = ctx->clock.MonotonicNs(span.begin_tsc);
      sqlite3_bind_int64(s, 1, thread_id);
      sqlite3_bind_int64(s, 2, begin);
      sqlite3_bind_int64(s, 3, std::max<int64_t>(0, ctx->clock.MonotonicNs(span.end_tsc) - begin));
      sqlite3_bind_text(s, 4, model::StateName(span.state), -1, SQLITE_STATIC);
      const char code[2] = {span.state, 0};
      sqlite3_bind_text(s, 5, code, 1, SQLITE_TRANSIENT);
      Step(s, "inserting a thread state");
    }
  }

  static void BindOptionalText(sqlite3_stmt* s, int i, const std::string& v) {
    if (v.empty()) sqlite3_bind_null(s, i);
    else sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  }
};

SqlSink::SqlSink(std::string out_path) : impl_(std::make_unique<Impl>()) { impl_->path = std::move(out_path); }

SqlSink::~SqlSink() { impl_->Abandon(); }

std::string SqlSink::Begin(const model::ExportContext& ctx) {
  Impl& m = *impl_;
  m.ctx = &ctx;
  const size_t slash = m.path.rfind('/');
  m.tmp = (slash == std::string::npos ? std::string() : m.path.substr(0, slash + 1)) + "." +
          (slash == std::string::npos ? m.path : m.path.substr(slash + 1)) + ".tmp";
  // Created here rather than by SQLite so a bad path gives the system's reason.
  int fd = open(m.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {  // left over from a crashed export
    unlink(m.tmp.c_str());
    fd = open(m.tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) {
    const std::string err = fmt::format("cannot create '{}': {}", m.tmp, strerror(errno));
    m.tmp.clear();  // not ours to remove
    return err;
  }
  close(fd);
  if (!m.Check(sqlite3_open_v2(m.tmp.c_str(), &m.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr), "opening")) {
    std::string err = m.error;
    m.Abandon();
    return err;
  }
  // Derived data, written once by one process: no journal, no fsync, no locking round trips.
  m.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
         "PRAGMA cache_size=-65536;",
         "setting up");
  m.Exec(kSqlTables, "creating tables");
  m.Exec("BEGIN", "starting the transaction");
  m.Check(m.insert_call.Prepare(m.db, "INSERT INTO calls VALUES(?,?,?,?,?,?,?,?,?)"), "preparing");
  m.Check(m.insert_function.Prepare(m.db, "INSERT INTO functions VALUES(?,?,?,?,?,?)"), "preparing");
  m.Check(m.insert_thread.Prepare(m.db, "INSERT INTO threads VALUES(?,?,?,?,?,?,?,?,?,?,?,?)"), "preparing");
  m.Check(m.insert_sample.Prepare(m.db, "INSERT INTO samples VALUES(?,?,?,?,?,?,?,?,?,?,?,?)"), "preparing");
  m.Check(m.insert_state.Prepare(m.db, "INSERT INTO thread_states VALUES(?,?,?,?,?)"), "preparing");
  if (m.error.empty()) {
    Statement dump;
    m.Check(dump.Prepare(m.db, "INSERT INTO dump VALUES(?,?,?,?,?,?,?,?,?)"), "preparing");
    sqlite3_stmt* s = dump.get();
    const format::ProcessInfo& p = ctx.dump->process;
    sqlite3_bind_int64(s, 1, p.pid);
    Impl::BindOptionalText(s, 2, p.name);
    Impl::BindOptionalText(s, 3, p.exe);
    Impl::BindOptionalText(s, 4, p.cmdline);
    Impl::BindOptionalText(s, 5, p.reason);
    sqlite3_bind_int64(s, 6, ctx.dump_ns);
    sqlite3_bind_int64(s, 7, ctx.origin_ns);
    if (window_start_) sqlite3_bind_int64(s, 8, *window_start_); else sqlite3_bind_null(s, 8);
    if (window_end_) sqlite3_bind_int64(s, 9, *window_end_); else sqlite3_bind_null(s, 9);
    m.Step(s, "writing the dump row");
  }
  if (!m.error.empty()) {
    std::string err = m.error;
    m.Abandon();
    return err;
  }
  return "";
}

void SqlSink::BeginThread(const format::ThreadInfo& t) {
  impl_->thread = &t;
  impl_->thread_id += 1;
  impl_->stack.clear();
}

void SqlSink::Enter(uint64_t key, int64_t ts_ns, uint32_t, uint8_t flags) {
  Impl& m = *impl_;
  m.stack.push_back({m.next_call_id++, m.FunctionId(key), ts_ns, 0, flags});
}

void SqlSink::Exit(uint64_t, int64_t ts_ns, uint32_t depth, uint8_t flags) {
  Impl& m = *impl_;
  if (m.stack.empty()) return;
  const Impl::Frame f = m.stack.back();
  m.stack.pop_back();
  const int64_t dur = ts_ns > f.start ? ts_ns - f.start : 0;
  if (!m.stack.empty()) m.stack.back().children += dur;
  if (!m.error.empty()) return;
  sqlite3_stmt* s = m.insert_call.get();
  sqlite3_bind_int64(s, 1, f.id);
  sqlite3_bind_int64(s, 2, m.thread_id);
  sqlite3_bind_int64(s, 3, f.function_id);
  sqlite3_bind_int64(s, 4, f.start);
  sqlite3_bind_int64(s, 5, dur);
  sqlite3_bind_int64(s, 6, dur > f.children ? dur - f.children : 0);
  sqlite3_bind_int64(s, 7, depth);
  if (m.stack.empty()) sqlite3_bind_null(s, 8); else sqlite3_bind_int64(s, 8, m.stack.back().id);
  sqlite3_bind_int64(s, 9, f.flags | flags);
  if (m.Step(s, "inserting a call")) ++stats_.calls;
}

void SqlSink::EndThread(const model::ThreadSummary& sum) {
  Impl& m = *impl_;
  if (!m.error.empty()) return;
  const format::ThreadInfo& t = *m.thread;
  const model::ClockModel& clock = m.ctx->clock;
  sqlite3_stmt* s = m.insert_thread.get();
  sqlite3_bind_int64(s, 1, m.thread_id);
  sqlite3_bind_int64(s, 2, t.tid);
  sqlite3_bind_text(s, 3, t.name.data(), static_cast<int>(t.name.size()), SQLITE_TRANSIENT);
  if (t.start_tsc != 0) sqlite3_bind_int64(s, 4, clock.MonotonicNs(t.start_tsc)); else sqlite3_bind_null(s, 4);
  const uint64_t end_tsc = t.exit_tsc != 0 ? t.exit_tsc : t.snapshot_tsc;
  if (end_tsc != 0) sqlite3_bind_int64(s, 5, clock.MonotonicNs(end_tsc)); else sqlite3_bind_null(s, 5);
  sqlite3_bind_int(s, 6, t.exit_tsc != 0 ? 1 : 0);
  sqlite3_bind_int64(s, 7, static_cast<int64_t>(sum.slices));
  sqlite3_bind_int64(s, 8, static_cast<int64_t>(sum.start_cut));
  sqlite3_bind_int64(s, 9, static_cast<int64_t>(sum.unwound));
  sqlite3_bind_int64(s, 10, static_cast<int64_t>(sum.open));
  sqlite3_bind_int64(s, 11, static_cast<int64_t>(sum.unmatched_exits));
  sqlite3_bind_int64(s, 12, static_cast<int64_t>(sum.lost_records));
  if (m.Step(s, "inserting a thread")) ++stats_.threads;
  if (const format::ThreadSamples* samples = m.ctx->dump->SamplesOf(t)) m.InsertSamples(*samples);
}

std::string SqlSink::End() {
  Impl& m = *impl_;
  if (m.db == nullptr) return m.error.empty() ? "no database open" : m.error;
  stats_.functions = m.function_ids.size();
  m.insert_call.Finalize();
  m.insert_function.Finalize();
  m.insert_thread.Finalize();
  m.insert_sample.Finalize();
  m.insert_state.Finalize();
  if (m.error.empty()) m.Exec(kSqlIndexes, "creating indexes");
  if (m.error.empty()) m.Exec("COMMIT", "committing");
  if (m.error.empty()) m.Check(sqlite3_close(m.db), "closing");
  else sqlite3_close(m.db);
  m.db = nullptr;
  if (m.error.empty() && rename(m.tmp.c_str(), m.path.c_str()) != 0)
    m.error = fmt::format("cannot write '{}': {}", m.path, strerror(errno));
  if (!m.error.empty()) {
    m.Abandon();
    return m.error;
  }
  m.committed = true;
  return "";
}

}  // namespace lookback::analyses
