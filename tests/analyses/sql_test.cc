// `lookback sql` on a real program with a known timing structure
// (tests/programs/timing.cc): the database holds what the decoder sees, its
// parent links and self times are consistent, the example queries of
// docs/analyses.md run and answer sensibly, and a bad output path fails
// cleanly.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../integration/harness.h"
#include "../integration/doc_queries.h"
#include "../integration/sqlite_db.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

constexpr int64_t kMs = 1000000;

std::string TestName() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return std::string(info->test_suite_name()) + "-" + info->name();
}

// Records tests/programs/timing.cc under `lookback record`; returns the dump.
std::string RecordTiming(const std::string& dir) {
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", Program("timing")}, {}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto dumps = Dumps(dir + "/dumps");
  EXPECT_EQ(dumps.size(), 1u) << r.err;
  return dumps.size() == 1 ? dumps[0] : std::string();
}

// The reference: calls and durations per function, straight from model::Walk.
class CountingSink : public model::TraceSink {
 public:
  struct PerFunction {
    int64_t calls = 0, dur = 0;
  };
  std::map<std::string, PerFunction> by_name;
  int64_t calls = 0;

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo&) override { starts_.clear(); }
  void Enter(uint64_t, int64_t ts, uint32_t, uint8_t) override { starts_.push_back(ts); }
  void Exit(uint64_t key, int64_t ts, uint32_t, uint8_t) override {
    auto& f = by_name[ctx_->symbols->Name(key)];
    f.calls += 1;
    f.dur += ts - starts_.back();
    starts_.pop_back();
    ++calls;
  }
  void EndThread(const model::ThreadSummary&) override {}
  Status End() override { return Status::Ok(); }

 private:
  const model::ExportContext* ctx_ = nullptr;
  std::vector<int64_t> starts_;
};

// The ```sql blocks of docs/analyses.md's "## lookback sql" section, by tag.
std::map<std::string, std::string> DocumentedQueries() { return DocQueries("docs/analyses.md", "\n## lookback sql"); }

struct Exported {
  std::string dir, dump, db;
};

Exported RecordAndExport(const std::vector<std::string>& extra = {}) {
  Exported e;
  e.dir = FreshDir("sql-" + TestName());
  e.dump = RecordTiming(e.dir);
  e.db = e.dir + "/trace.db";
  std::vector<std::string> argv = {Cli(), "sql", e.dump, "-o", e.db};
  argv.insert(argv.end(), extra.begin(), extra.end());
  RunResult r = RunProgram(argv);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return e;
}

TEST(SqlExport, CallCountsAndDurationsEqualTheDecoders) {
  Exported e = RecordAndExport();
  ASSERT_FALSE(e.dump.empty());
  format::Dump d = MustOpen(e.dump);
  symbolize::Symbolizer sym(d);
  CountingSink ref;
  model::WalkResult res = model::Walk(d, sym, {}, ref);
  ASSERT_TRUE(res.status.ok());

  Db db(e.db);
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls"), ref.calls);
  EXPECT_EQ(db.Int("SELECT count(*) FROM threads"), static_cast<int64_t>(d.threads.size()));
  EXPECT_EQ(db.Int("SELECT sum(calls) FROM threads"), ref.calls);
  const Rows rows = db.Query(
      "SELECT f.name, count(*), sum(c.duration_ns) FROM calls c JOIN functions f ON f.function_id = c.function_id GROUP BY f.function_id");
  std::map<std::string, std::pair<int64_t, int64_t>> got;
  for (const auto& r : rows) got[r[0]] = {std::stoll(r[1]), std::stoll(r[2])};
  EXPECT_EQ(got.size(), ref.by_name.size());
  for (const auto& [name, f] : ref.by_name) {
    EXPECT_EQ(got[name].first, f.calls) << name;
    EXPECT_EQ(got[name].second, f.dur) << name;
  }
  const std::map<std::string, int64_t> known = {{"handle_request", 3}, {"render", 3},    {"slow_parse", 3},
                                                {"fast_parse", 15},    {"on_click", 2},  {"binder_call", 2},
                                                {"wait_reply", 2},     {"idle_tick", 50}};
  for (const auto& [name, n] : known) EXPECT_EQ(got[name].first, n) << name;
  // slow_parse spins 30 ms three times (longer if preempted on a loaded machine).
  EXPECT_GE(got["slow_parse"].second, 90 * kMs);
  EXPECT_LE(got["slow_parse"].second, 400 * kMs);
  // Every function row is resolved to a name and module.
  EXPECT_EQ(db.Int("SELECT count(*) FROM functions WHERE name LIKE '%+0x%' OR module IS NULL"), 0);
  EXPECT_EQ(db.Int("SELECT count(*) FROM dumps WHERE pid > 0 AND dump_ns >= origin_ns AND window_start_ns IS NULL"), 1);
}

TEST(SqlExport, ParentLinksDepthsAndSelfTimesAreConsistent) {
  Exported e = RecordAndExport();
  Db db(e.db);
  ASSERT_GT(db.Int("SELECT count(*) FROM calls"), 0);
  // A child lies inside its parent, one level deeper, on the same thread.
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls c JOIN calls p ON p.call_id = c.parent "
                   "WHERE p.depth != c.depth - 1 OR c.start_ns < p.start_ns OR c.start_ns + c.duration_ns > p.start_ns + p.duration_ns "
                   "OR p.thread_id != c.thread_id OR p.call_id >= c.call_id"),
            0);
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls WHERE (parent IS NULL) != (depth = 0)"), 0);
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls c LEFT JOIN calls p ON p.call_id = c.parent "
                   "WHERE c.parent IS NOT NULL AND p.call_id IS NULL"),
            0);
  // self = dur - the children's dur, and the self times add up to the roots' time.
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls c LEFT JOIN (SELECT parent, sum(duration_ns) AS d FROM calls GROUP BY parent) k "
                   "ON k.parent = c.call_id WHERE c.self_ns != c.duration_ns - coalesce(k.d, 0)"),
            0);
  EXPECT_EQ(db.Int("SELECT sum(self_ns) FROM calls"), db.Int("SELECT sum(duration_ns) FROM calls WHERE depth = 0"));
  // The known structure: render under handle_request, wait_reply under binder_call.
  const Rows callers = db.Query(
      "SELECT f.name, pf.name, count(*) FROM calls c JOIN functions f ON f.function_id = c.function_id "
      "JOIN calls p ON p.call_id = c.parent JOIN functions pf ON pf.function_id = p.function_id "
      "WHERE f.name IN ('render', 'wait_reply', 'fast_parse') GROUP BY 1, 2 ORDER BY 1");
  ASSERT_EQ(callers.size(), 3u);
  EXPECT_EQ(callers[0], (std::vector<std::string>{"fast_parse", "render", "15"}));
  EXPECT_EQ(callers[1], (std::vector<std::string>{"render", "handle_request", "3"}));
  EXPECT_EQ(callers[2], (std::vector<std::string>{"wait_reply", "binder_call", "2"}));
  // Ids follow start order, so the view lists a thread's calls as a tree, in order.
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls a JOIN calls b ON b.call_id = a.call_id + 1 "
                   "WHERE a.thread_id = b.thread_id AND b.start_ns < a.start_ns"),
            0);
  EXPECT_EQ(db.Int("SELECT count(*) FROM call_names"), db.Int("SELECT count(*) FROM calls"));
}

TEST(SqlExport, DocumentedQueriesRunAndAnswerSensibly) {
  const auto queries = DocumentedQueries();
  for (const char* tag : {"top-self", "top-cpu", "self-from-parents", "slow-calls", "before-dump", "slowest-tree", "threads"})
    ASSERT_TRUE(queries.count(tag)) << "docs/analyses.md has no ```sql block starting with '-- " << tag << ":'";
  Exported e = RecordAndExport();
  Db db(e.db);
  for (const auto& [tag, q] : queries) EXPECT_FALSE(db.Query(q).empty()) << tag << " returned no row";

  // Top self time: slow_parse (3 x 30 ms), wait_reply (2 x 20 ms), fast_parse
  // (15 x 2 ms) and render (3 x 10 ms), in an order a loaded machine may
  // shuffle (preemption stretches spins); everything else is ~0.
  const Rows top = db.Query(queries.at("top-self"));
  ASSERT_GE(top.size(), 5u);
  EXPECT_EQ((std::set<std::string>{top[0][0], top[1][0], top[2][0], top[3][0]}),
            (std::set<std::string>{"slow_parse", "wait_reply", "fast_parse", "render"}));
  for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(std::stod(top[i - 1][2]), std::stod(top[i][2])) << i;
  EXPECT_GE(std::stod(top[0][2]), 90);
  // Work and waiting split self time: wait_reply sleeps, slow_parse spins.
  const Rows cpu = db.Query(queries.at("top-cpu"));
  ASSERT_GE(cpu.size(), 5u);
  double slow_cpu = -1, wait_cpu = -1, wait_wait = -1;
  for (const auto& r : cpu) {
    if (r[0] == "slow_parse") slow_cpu = std::stod(r[2]);
    if (r[0] == "wait_reply") wait_cpu = std::stod(r[2]), wait_wait = std::stod(r[3]);
  }
  EXPECT_GT(slow_cpu, wait_cpu);
  EXPECT_GE(wait_wait, 35);  // 2 x 20 ms asleep
  // The same ranking computed from the parent links alone.
  const Rows from_parents = db.Query(queries.at("self-from-parents"));
  ASSERT_EQ(from_parents.size(), top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    EXPECT_EQ(from_parents[i][0], top[i][0]);
    EXPECT_EQ(from_parents[i][1], top[i][2]) << top[i][0];
  }

  // Calls over 25 ms: main, 3 handle_request, 3 render, 3 slow_parse.
  std::map<std::string, int> slow;
  for (const auto& r : db.Query(queries.at("slow-calls"))) slow[r[0]]++;
  EXPECT_EQ(slow["slow_parse"], 3);
  EXPECT_EQ(slow["handle_request"], 3);
  EXPECT_EQ(slow["render"], 3);
  // The short calls (on_click ~20 ms, fast_parse ~2 ms) are in it exactly when
  // the dump measured them over 25 ms (a loaded machine can stretch them).
  for (const char* name : {"on_click", "fast_parse"}) {
    const Rows n = db.Query(std::string("SELECT count(*) FROM calls c JOIN functions f ON f.function_id = c.function_id "
                                        "WHERE f.name = '") + name + "' AND c.duration_ns > 25000000");
    ASSERT_EQ(n.size(), 1u);
    EXPECT_EQ(slow.count(name) ? slow[name] : 0, std::stoi(n[0][0])) << name;
  }

  // The last 100 ms before the dump: the two clicks and the idle ticks are
  // all in it (they ran last, for ~40 ms), as is main.
  std::map<std::string, std::vector<std::string>> before;
  for (const auto& r : db.Query(queries.at("before-dump"))) before[r[0]] = r;
  ASSERT_TRUE(before.count("on_click"));
  EXPECT_EQ(before["on_click"][1], "2");
  EXPECT_EQ(before["wait_reply"][1], "2");
  EXPECT_EQ(before["idle_tick"][1], "50");
  EXPECT_TRUE(before.count("main"));
  EXPECT_GE(std::stod(before["wait_reply"][2]), 20);
  EXPECT_LE(std::stod(before["wait_reply"][2]), 100);

  // The slowest handle_request's tree: itself, render, slow_parse, 5 fast_parse.
  const Rows tree = db.Query(queries.at("slowest-tree"));
  ASSERT_EQ(tree.size(), 8u);
  EXPECT_EQ(tree[0][0], "handle_request");
  EXPECT_EQ(tree[1][0], "  render");
  EXPECT_EQ(tree[2][0], "    slow_parse");
  EXPECT_EQ(tree[7][0], "    fast_parse");
}

TEST(SqlExport, WindowKeepsOnlyItsCallsAndIsRecorded) {
  Exported e = RecordAndExport({"--window", "-30ms.."});
  Db db(e.db);
  EXPECT_EQ(db.Int("SELECT count(*) FROM dumps WHERE window_start_ns = dump_ns - 30000000 AND window_end_ns IS NULL"), 1);
  // Only the last click's wait and the idle ticks fit; main and the click began before.
  EXPECT_EQ(db.Int("SELECT count(*) FROM call_names WHERE function = 'idle_tick'"), 50);
  EXPECT_EQ(db.Int("SELECT count(*) FROM call_names WHERE function = 'handle_request'"), 0);
  EXPECT_GE(db.Int("SELECT count(*) FROM call_names WHERE function = 'main' AND flags & 1"), 1);
  EXPECT_EQ(db.Int("SELECT count(*) FROM calls WHERE start_ns < (SELECT window_start_ns FROM dumps)"), 0);
}

TEST(SqlExport, BadOutputPathFailsAndLeavesNothing) {
  const std::string dir = FreshDir("sql-" + TestName());
  const std::string dump = RecordTiming(dir);
  ASSERT_FALSE(dump.empty());
  // A directory that does not exist.
  RunResult r = RunProgram({Cli(), "sql", dump, "-o", dir + "/missing/trace.db"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot create"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
  // A path that is a directory: the rename at the end fails, the temporary goes.
  mkdir((dir + "/out").c_str(), 0755);
  r = RunProgram({Cli(), "sql", dump, "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot write '" + dir + "/out'"), std::string::npos) << r.err;
  EXPECT_EQ(ListFiles(dir), (std::vector<std::string>{"dumps", "out"}));
  EXPECT_TRUE(ListFiles(dir + "/out").empty());
  // No -o at all is a usage error.
  r = RunProgram({Cli(), "sql", dump});
  EXPECT_EQ(r.exit_code, 2);
  // An existing database is replaced, not appended to.
  const std::string db_path = dir + "/trace.db";
  ASSERT_EQ(RunProgram({Cli(), "sql", dump, "-o", db_path, "-q"}).exit_code, 0);
  ASSERT_EQ(RunProgram({Cli(), "sql", dump, "-o", db_path, "-q"}).exit_code, 0);
  Db db(db_path);
  EXPECT_EQ(db.Int("SELECT count(*) FROM call_names WHERE function = 'idle_tick'"), 50);
}

TEST(SqlExport, ManyDumpsShareOneDatabaseAndKeepTheirRowsApart) {
  const std::string dir = FreshDir("sql-" + TestName());
  mkdir((dir + "/a").c_str(), 0755);
  mkdir((dir + "/b").c_str(), 0755);
  const std::string a = RecordTiming(dir + "/a"), b = RecordTiming(dir + "/b");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  RunResult r = RunProgram({Cli(), "sql", dir + "/a/dumps", b, "-o", dir + "/both.db", "--index"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(RunProgram({Cli(), "sql", a, "-o", dir + "/a.db"}).exit_code, 0);
  Db both(dir + "/both.db"), one(dir + "/a.db");
  EXPECT_EQ(both.Int("SELECT count(DISTINCT dump_id) FROM dumps"), 2);
  EXPECT_EQ(both.Int("SELECT count(DISTINCT dump_id) FROM calls"), 2);
  // Dump a's rows are the same whichever database holds them (same dump_id, same ids).
  const std::string per_dump = "SELECT dump_id, count(*), sum(call_id), sum(duration_ns), sum(parent) FROM calls GROUP BY dump_id";
  const Rows only_a = one.Query(per_dump);
  ASSERT_EQ(only_a.size(), 1u);
  bool found = false;
  for (const auto& row : both.Query(per_dump)) found = found || row == only_a[0];
  EXPECT_TRUE(found);
  // Parents never point into another dump.
  EXPECT_EQ(both.Int("SELECT count(*) FROM calls c LEFT JOIN calls p ON p.dump_id = c.dump_id AND p.call_id = c.parent "
                     "WHERE c.parent IS NOT NULL AND p.call_id IS NULL"),
            0);
  EXPECT_EQ(both.Int("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'calls_by_call'"), 1);
  // The same dump given twice goes in once.
  r = RunProgram({Cli(), "sql", a, dir + "/a/dumps", "-o", dir + "/twice.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("already exported"), std::string::npos) << r.err;
  EXPECT_EQ(Db(dir + "/twice.db").Query(per_dump), only_a);
  EXPECT_EQ(one.Int("SELECT count(*) FROM sqlite_master WHERE type = 'index'"), 0);  // only on request
}

}  // namespace
}  // namespace lookback::testing
