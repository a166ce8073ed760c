// Fleet analysis end to end (docs/fleet.md): a generated fleet — the same
// program (tests/programs/fleet.cc) built twice, a regression planted in the
// second build, run as 20 hosts (LOOKBACK_HOST via `record --host`), with
// stalls and a signature that fires on some hosts only — exported with
// `lookback export --to parquet` and `lookback sql`. DuckDB (through Node,
// tests/fleet/duckdb_queries.mjs) reads every Parquet table, and every query
// of docs/fleet.md must give DuckDB and SQLite the same answer; the answers
// must show what was planted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "../integration/doc_queries.h"
#include "../integration/harness.h"
#include "../integration/sqlite_db.h"
#include "analyses/fleet.h"
#include "duckdb.h"

namespace lookback::testing {
namespace {

constexpr int kHosts = 20;
constexpr int kFirstNewBuildHost = 9;  // hosts 1-8 run build 1, 9-20 build 2 (the regression)
const std::set<int> kStallHosts = {3, 11, 17};
const std::set<int> kBinderHosts = {2, 5, 9, 14, 20};

std::string HostName(int i) {
  char b[16];
  snprintf(b, sizeof b, "host-%02d", i);
  return b;
}

std::string Signatures() { return std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/signatures/fleet.sig"; }

std::vector<std::string> ParquetFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.push_back(std::filesystem::relative(e.path(), dir).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The corpus, made once for all tests of this binary: the build runs hosts
// one after another, build 1 first, so build 2's dumps are the newest.
struct Corpus {
  std::string dir, dumps, dataset, db;
};

const Corpus& TheCorpus() {
  static const Corpus c = [] {
    Corpus c;
    c.dir = FreshDir("fleet-corpus");
    c.dumps = c.dir + "/dumps";
    for (int i = 1; i <= kHosts; ++i) {
      const std::string program = Program(i < kFirstNewBuildHost ? "fleet-v1/fleet" : "fleet-v2/fleet");
      std::vector<std::string> argv = {Cli(), "record", "-q", "--host", HostName(i), "--dir", c.dumps + "/" + HostName(i),
                                       "--", program};
      if (kBinderHosts.count(i)) argv.push_back("binder");
      if (kStallHosts.count(i)) argv.push_back("stall");
      RunResult r = RunProgram(argv);
      EXPECT_EQ(r.exit_code, 0) << HostName(i) << ": " << r.err;
    }
    c.dataset = c.dir + "/dataset";
    RunResult r = RunProgram({Cli(), "export", "--to", "parquet", c.dumps, "-o", c.dataset, "--signatures", Signatures()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    c.db = c.dir + "/fleet.db";
    r = RunProgram({Cli(), "sql", c.dumps, "-o", c.db, "--signatures", Signatures(), "--index"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return c;
  }();
  return c;
}

const std::map<std::string, std::string>& FleetQueries() {
  static const auto q = DocQueries("docs/fleet.md", "\n## Queries a performance team asks");
  return q;
}

// The documented queries' answers from DuckDB over the Parquet dataset,
// plus every table's row count.
const std::map<std::string, Rows>& DuckDbAnswers() {
  static const std::map<std::string, Rows> answers = [] {
    std::vector<std::pair<std::string, std::string>> qs(FleetQueries().begin(), FleetQueries().end());
    for (const char* t : {"dumps", "threads", "functions", "calls", "signature_matches"})
      qs.emplace_back(std::string("count:") + t, std::string("SELECT count(*) FROM ") + t);
    return DuckDbQueries(TheCorpus().dataset, qs, TheCorpus().dir);
  }();
  return answers;
}

#define SKIP_WITHOUT_DUCKDB()                                                   \
  do {                                                                          \
    if (std::string why = DuckDbUnavailable(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(FleetCorpus, EveryHostIsRecordedUnderItsOwnName) {
  const Corpus& c = TheCorpus();
  Db db(c.db);
  const Rows hosts = db.Query("SELECT host, count(*), count(DISTINCT build_id) FROM dumps GROUP BY host ORDER BY host");
  ASSERT_EQ(hosts.size(), static_cast<size_t>(kHosts));
  for (int i = 1; i <= kHosts; ++i) EXPECT_EQ(hosts[i - 1], (std::vector<std::string>{HostName(i), "1", "1"}));
  // Two builds of one program (same name, so one partition).
  EXPECT_EQ(db.Int("SELECT count(DISTINCT build_id) FROM dumps"), 2);
  EXPECT_EQ(db.Int("SELECT count(DISTINCT program) FROM dumps"), 1);
  EXPECT_EQ(db.Query("SELECT DISTINCT program FROM dumps")[0][0], "fleet");
  EXPECT_EQ(db.Int("SELECT count(*) FROM dumps WHERE schema_version = " + std::to_string(analyses::fleet::kSchemaVersion) + " AND lookback_version = '0.1.0'"), kHosts);
  // The dump itself says it (lookback info), not only the export.
  const std::string first = Dumps(c.dumps + "/" + HostName(1)).at(0);
  RunResult info = RunProgram({Cli(), "info", first});
  EXPECT_NE(info.out.find("host          host-01"), std::string::npos) << info.out;
}

TEST(FleetExport, HostDefaultsToTheMachinesNameAndLookbackHostOverridesIt) {
  const std::string dir = FreshDir("fleet-hostname");
  RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/plain", "--", Program("fleet-v1/fleet")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Linked or preloaded without `record`: the variable alone.
  r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/env", "--", Program("fleet-v1/fleet")},
                 {{"LOOKBACK_HOST", "from-env"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunProgram({Cli(), "sql", "-q", dir + "/plain", dir + "/env", "-o", dir + "/h.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  Db db(dir + "/h.db");
  EXPECT_EQ(db.Query("SELECT host FROM dumps ORDER BY host = 'from-env'"),
            (Rows{{host}, {"from-env"}}));
}

TEST(FleetCorpus, DuckDbReadsEveryTableWithTheRowsSqliteHas) {
  SKIP_WITHOUT_DUCKDB();
  const auto& duck = DuckDbAnswers();
  Db db(TheCorpus().db);
  for (const char* t : {"dumps", "threads", "functions", "calls", "signature_matches"}) {
    const std::string tag = std::string("count:") + t;
    ASSERT_TRUE(duck.count(tag)) << tag;
    ASSERT_EQ(duck.at(tag).size(), 1u) << tag;
    EXPECT_EQ(std::stoll(duck.at(tag)[0][0]), db.Int(std::string("SELECT count(*) FROM ") + t)) << t;
    EXPECT_GT(db.Int(std::string("SELECT count(*) FROM ") + t), 0) << t;
  }
  // The whole calls table, not only its size: same sums of every column.
  const std::string sums =
      "SELECT count(*), sum(call_id), sum(thread_id), sum(function_id), sum(start_ns), sum(duration_ns), sum(self_ns), "
      "sum(depth), sum(parent), count(parent), sum(flags), sum(dump_id % 1000003) FROM calls";
  const auto got = DuckDbQueries(TheCorpus().dataset, {{"sums", sums}}, TheCorpus().dir);
  ASSERT_EQ(got.at("sums").size(), 1u);
  EXPECT_EQ(got.at("sums")[0], db.Query(sums)[0]);
}

TEST(FleetCorpus, DocumentedQueriesGiveDuckDbAndSqliteTheSameAnswers) {
  SKIP_WITHOUT_DUCKDB();
  const auto& queries = FleetQueries();
  ASSERT_GE(queries.size(), 12u) << "docs/fleet.md should document a dozen queries";
  const auto& duck = DuckDbAnswers();
  Db db(TheCorpus().db);
  for (const auto& [tag, sql] : queries) {
    const Rows lite = db.Query(sql);
    EXPECT_FALSE(lite.empty()) << tag << " returned no row";
    ASSERT_TRUE(duck.count(tag)) << tag;
    EXPECT_EQ(duck.at(tag), lite) << tag;
  }
}

TEST(FleetCorpus, RegressionQueryFindsThePlantedFunctionFirst) {
  Db db(TheCorpus().db);
  const Rows r = db.Query(FleetQueries().at("regressions"));
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r[0][0], "checksum_frame");
  // It sleeps 10 ms in build 2 and computes for microseconds in build 1.
  EXPECT_GE(std::stoll(r[0][3]), 9'000'000);
  if (DuckDbUnavailable().empty()) {
    EXPECT_EQ(DuckDbAnswers().at("regressions").at(0).at(0), "checksum_frame");
  }
}

// The render thread computes (compute_layout, 2 ms of CPU per request)
// between its sleeps on every host, fast machine or slow: it is never classed
// as a thread that only waited, and the CPU query lists the function that
// computes with all its calls. (Which of compute_layout and flush_io ranks
// first depends on the load: flush_io's nanosleep is not traced, and where a
// busy machine keeps compute_layout from a core for longer than flush_io
// sleeps, the 10 ms CPU readings cannot tell which silence was the waiting;
// docs/analyses.md, "Working and waiting".)
TEST(FleetCorpus, CpuQueryListsTheComputingFunctionWhateverTheMachinesSpeed) {
  Db db(TheCorpus().db);
  EXPECT_EQ(db.Query("SELECT d.host FROM threads t JOIN dumps d ON d.dump_id = t.dump_id "
                     "WHERE t.name = 'render' AND (t.waited != 0 OR t.cpu_ns IS NULL) ORDER BY d.host"),
            Rows{});
  const Rows r = db.Query(FleetQueries().at("cpu-by-function"));
  const auto it = std::find_if(r.begin(), r.end(), [](const std::vector<std::string>& row) { return row[0] == "compute_layout"; });
  ASSERT_NE(it, r.end());
  EXPECT_EQ((*it)[1], std::to_string(kHosts * 30));
}

TEST(FleetCorpus, SignatureMatchesOnlyOnItsHosts) {
  Db db(TheCorpus().db);
  const Rows r = db.Query(FleetQueries().at("signature-hosts"));
  std::set<std::string> hosts;
  for (const auto& row : r) {
    EXPECT_EQ(row[0], "binder-on-click");  // parse-on-click never fires
    EXPECT_EQ(row[2], "1");                // one dump per host
    EXPECT_EQ(row[3], "2");                // two clicks
    EXPECT_GE(std::stoll(row[4]), 3'000'000);  // wait_reply sleeps 3 ms
    hosts.insert(row[1]);
  }
  std::set<std::string> want;
  for (int i : kBinderHosts) want.insert(HostName(i));
  EXPECT_EQ(hosts, want);
}

TEST(FleetCorpus, StallsAreFoundOnTheHostsThatStalled) {
  Db db(TheCorpus().db);
  std::set<std::string> stalled;
  for (const auto& row : db.Query(FleetQueries().at("stalled-threads"))) {
    if (row[2] != "wait_for_lock") continue;  // a loaded machine may stretch another call past 30 ms
    EXPECT_EQ(row[1], "render");
    EXPECT_GE(std::stoll(row[3]), 60'000'000);
    stalled.insert(row[0]);
  }
  std::set<std::string> want;
  for (int i : kStallHosts) want.insert(HostName(i));
  EXPECT_EQ(stalled, want);
}

TEST(FleetCorpus, CriticalPathMostOftenSeenIsTheRegressedOne) {
  Db db(TheCorpus().db);
  const Rows r = db.Query(FleetQueries().at("critical-path"));
  ASSERT_FALSE(r.empty());
  // 12 hosts x 30 requests wait 10 ms in checksum_frame; 8 x 30 wait 2 ms in flush_io.
  EXPECT_EQ(r[0][0], "serve_request > draw > checksum_frame");
  EXPECT_GE(std::stoll(r[0][1]), 12 * 30 / 2);
}

// Dumps that are not whole are reported by name and skipped; the rest is
// exported, the exit status says some were skipped, and no partial file is
// left visible.
TEST(FleetExport, CorruptAndTruncatedDumpsAreNamedAndSkipped) {
  const Corpus& c = TheCorpus();
  const std::string dir = FreshDir("fleet-corrupt");
  mkdir((dir + "/in").c_str(), 0755);
  const std::vector<std::string> good = {Dumps(c.dumps + "/" + HostName(1)).at(0), Dumps(c.dumps + "/" + HostName(12)).at(0)};
  std::filesystem::copy_file(good[0], dir + "/in/a-good.lbk");
  std::filesystem::copy_file(good[1], dir + "/in/c-good.lbk");
  // Truncated: half of a real dump. Corrupt: a real dump with its header smashed.
  std::filesystem::copy_file(good[1], dir + "/in/b-truncated.lbk");
  truncate((dir + "/in/b-truncated.lbk").c_str(), static_cast<off_t>(std::filesystem::file_size(good[1]) / 2));
  std::filesystem::copy_file(good[0], dir + "/in/d-corrupt.lbk");
  {
    std::fstream f(dir + "/in/d-corrupt.lbk", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0);
    f.write("NOTADUMP", 8);
  }
  RunResult r = RunProgram({Cli(), "export", "--to", "parquet", dir + "/in", "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(dir + "/in/b-truncated.lbk: skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(dir + "/in/d-corrupt.lbk: skipped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 dump(s) skipped, 2 exported"), std::string::npos) << r.err;
  const auto files = ParquetFiles(dir + "/out");
  EXPECT_EQ(std::count_if(files.begin(), files.end(), [](const std::string& f) { return f.rfind("dumps/", 0) == 0; }), 2);
  for (const auto& f : files) EXPECT_EQ(f.find(".tmp"), std::string::npos) << f;
  // The SQLite export says the same and keeps the two good dumps.
  r = RunProgram({Cli(), "sql", dir + "/in", "-o", dir + "/out.db"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find(dir + "/in/b-truncated.lbk: skipped"), std::string::npos) << r.err;
  Db db(dir + "/out.db");
  EXPECT_EQ(db.Int("SELECT count(*) FROM dumps"), 2);
  EXPECT_EQ(db.Query("SELECT group_concat(file, ',') FROM (SELECT file FROM dumps ORDER BY file)")[0][0],
            "a-good.lbk,c-good.lbk");
  // Nothing readable at all: a failure.
  r = RunProgram({Cli(), "export", "--to", "parquet", dir + "/in/d-corrupt.lbk", "-o", dir + "/out2"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
}

// Killed half way (SIGKILL: no chance to clean up), an export leaves only
// hidden temporary files besides complete ones: every visible Parquet file
// reads whole, and the next export finishes the job.
TEST(FleetExport, KilledExportLeavesNoPartialFileVisible) {
  SKIP_WITHOUT_DUCKDB();
  const Corpus& c = TheCorpus();
  const std::string dir = FreshDir("fleet-killed");
  const std::string out = dir + "/out";
  // One-row row groups: a slow export, so the kill lands while files are being written.
  const std::vector<std::string> argv = {Cli(), "export", "--to", "parquet", "-q", c.dumps, "-o", out, "--row-group-rows", "1"};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  // Wait for the export to have files of its own open (it is writing), then kill it.
  bool writing = false;
  for (int i = 0; i < 60000 && !writing; ++i) {
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(out, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      writing = writing || it->is_regular_file(ec);
    }
    if (!writing) usleep(500);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(writing) << "never saw the export write";
  // Visible files are whole: DuckDB reads each one; temporaries are hidden (dot files).
  std::vector<std::pair<std::string, std::string>> reads;
  for (const auto& f : ParquetFiles(out)) {
    const std::string name = f.substr(f.rfind('/') + 1);
    if (name[0] == '.') {
      EXPECT_NE(name.find(".tmp"), std::string::npos) << f;
      continue;
    }
    reads.emplace_back(f, "SELECT count(*) FROM read_parquet('" + out + "/" + f + "')");
  }
  const auto got = DuckDbQueries("", reads, dir);
  for (const auto& [f, q] : reads) EXPECT_EQ(got.count(f) ? got.at(f).size() : 0u, 1u) << f;
  // Exporting again completes the dataset: every dump listed once.
  RunResult r = RunProgram({Cli(), "export", "--to", "parquet", "-q", c.dumps, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto after = DuckDbQueries(out, {{"dumps", "SELECT count(*), count(DISTINCT dump_id) FROM dumps"}}, dir);
  EXPECT_EQ(after.at("dumps").at(0), (std::vector<std::string>{std::to_string(kHosts), std::to_string(kHosts)}));
}

TEST(FleetExport, AppendingAddsFilesAndSkipsDumpsAlreadyThere) {
  const Corpus& c = TheCorpus();
  const std::string dir = FreshDir("fleet-append");
  const std::string out = dir + "/out";
  RunResult r = RunProgram({Cli(), "export", "--to", "parquet", c.dumps + "/" + HostName(1), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto before = ParquetFiles(out);
  std::map<std::string, std::filesystem::file_time_type> mtimes;
  for (const auto& f : before) mtimes[f] = std::filesystem::last_write_time(out + "/" + f);
  r = RunProgram({Cli(), "export", "--to", "parquet", c.dumps + "/" + HostName(1), c.dumps + "/" + HostName(2), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("already exported"), std::string::npos) << r.err;
  const auto after = ParquetFiles(out);
  EXPECT_GT(after.size(), before.size());
  for (const auto& f : before) {  // nothing rewritten
    ASSERT_TRUE(std::filesystem::exists(out + "/" + f)) << f;
    EXPECT_EQ(std::filesystem::last_write_time(out + "/" + f), mtimes[f]) << f;
  }
  // Hive layout: TABLE/program=fleet/day=YYYY-MM-DD/part-<16 hex>.parquet
  for (const auto& f : after) {
    EXPECT_NE(f.find("/program=fleet/day=20"), std::string::npos) << f;
    EXPECT_NE(f.find("/part-"), std::string::npos) << f;
  }
}

TEST(FleetExport, UnknownFormatOrNoDumpIsRefused) {
  const std::string dir = FreshDir("fleet-usage");
  RunResult r = RunProgram({Cli(), "export", "--to", "csv", TheCorpus().dumps, "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown --to 'csv' (parquet)"), std::string::npos) << r.err;
  r = RunProgram({Cli(), "export", "--to", "parquet", dir + "/nothing-here", "-o", dir + "/out"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("nothing-here: no such file or directory"), std::string::npos) << r.err;
  r = RunProgram({Cli(), "export", "--to", "parquet", TheCorpus().dumps, "-o", dir + "/out", "--signatures",
                  dir + "/missing.sig"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

TEST(FleetExport, RowGroupsAreBoundedAndStillReadWhole) {
  SKIP_WITHOUT_DUCKDB();
  const Corpus& c = TheCorpus();
  const std::string dir = FreshDir("fleet-rowgroups");
  const std::string host = c.dumps + "/" + HostName(11);
  RunResult r = RunProgram({Cli(), "export", "--to", "parquet", host, "-o", dir + "/out", "--row-group-rows", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = RunProgram({Cli(), "sql", host, "-o", dir + "/one.db"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Db db(dir + "/one.db");
  const int64_t calls = db.Int("SELECT count(*) FROM calls");
  ASSERT_GT(calls, 150);
  const auto got = DuckDbQueries(
      dir + "/out",
      {{"groups", "SELECT count(DISTINCT row_group_id), max(row_group_num_rows) FROM parquet_metadata('" + dir +
                      "/out/calls/*/*/*.parquet')"},
       {"sums", "SELECT count(*), sum(duration_ns), sum(parent), sum(self_ns) FROM calls"}},
      dir);
  ASSERT_EQ(got.at("groups").size(), 1u);
  EXPECT_EQ(std::stoll(got.at("groups")[0][0]), (calls + 49) / 50);
  EXPECT_EQ(got.at("groups")[0][1], "50");
  EXPECT_EQ(got.at("sums").at(0),
            db.Query("SELECT count(*), sum(duration_ns), sum(parent), sum(self_ns) FROM calls")[0]);
}

}  // namespace
}  // namespace lookback::testing
