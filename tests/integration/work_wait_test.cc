// Working and waiting (issue 28; model/waiting.h, model/cpu_time.h): the
// report ranks what threads did on CPU, not where they slept, and sets aside
// threads that only waited. Real programs: a native event loop
// (tests/programs/event_loop.cc) and a Java program (WorkAndWait.java). The
// assertions compare the dump with itself (CPU readings against the traced
// times), so a loaded machine changes the figures, not the verdicts.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>

#include "analyses/report.h"
#include "harness.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

struct Recorded {
  RunResult run;
  std::string dump_path;
  format::Dump dump;
};

Recorded Record(const std::string& test, const std::vector<std::string>& command) {
  Recorded r;
  const std::string dir = FreshDir(test);
  std::vector<std::string> argv = {Cli(), "record", "--dir", dir + "/dumps", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  r.run = RunProgram(argv, {}, dir);
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  EXPECT_EQ(dumps.size(), 1u) << r.run.err;
  if (!dumps.empty()) {
    r.dump_path = dumps[0];
    r.dump = MustOpen(dumps[0]);
  }
  return r;
}

analyses::Report ReportOf(const format::Dump& d, bool all_threads) {
  symbolize::Symbolizer sym(d);
  analyses::ReportOptions o;
  o.all_threads = all_threads;
  analyses::Report r;
  EXPECT_TRUE(analyses::ReportDump(d, sym, model::WalkOptions{}, o, &r).ok());
  analyses::SortFunctions(&r.functions, analyses::SortKey::kCpu);
  return r;
}

const analyses::FunctionStats* Row(const analyses::Report& r, const std::string& name) {
  for (const auto& f : r.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool SetAside(const analyses::Report& r, const std::string& top) {
  return std::any_of(r.set_aside.begin(), r.set_aside.end(), [&](const auto& t) { return t.top == top; });
}

TEST(WorkWait, EveryThreadOfADumpHasItsCpuTimeLogged) {
  Recorded rec = Record("work_wait_cpu_log", {Program("event-loop"), "100", "500"});
  ASSERT_EQ(rec.run.exit_code, 0) << rec.run.err;
  ASSERT_FALSE(rec.dump.cpu.empty()) << "no CPU section";
  size_t with_readings = 0;
  for (const auto& c : rec.dump.cpu) {
    ASSERT_LT(c.thread_index, rec.dump.threads.size());
    EXPECT_EQ(rec.dump.threads[c.thread_index].tid, c.tid);
    for (size_t i = 1; i < c.readings.size(); ++i) {
      EXPECT_GE(c.readings[i].tsc, c.readings[i - 1].tsc);
      EXPECT_GE(c.readings[i].cpu_ns, c.readings[i - 1].cpu_ns);
    }
    if (c.readings.size() >= 2) ++with_readings;
  }
  // The loop and the two sleepers live for half a second: 10 ms readings.
  EXPECT_GE(with_readings, 3u);
}

TEST(WorkWait, AnEventLoopsWorkTopsTheReportAndItsWaitingDoesNot) {
  Recorded rec = Record("work_wait_native", {Program("event-loop"), "200", "2000"});
  ASSERT_EQ(rec.run.exit_code, 0) << rec.run.err;
  const analyses::Report r = ReportOf(rec.dump, false);
  ASSERT_TRUE(r.cpu_known);
  ASSERT_FALSE(r.functions.empty());
  const std::string top = r.functions[0].name;
  EXPECT_TRUE(top == "crunch" || top == "handle_event") << top;
  const analyses::FunctionStats* wait = Row(r, "wait_for_event");
  ASSERT_NE(wait, nullptr);
  // Its poll() is untraced: the readings and the silence tell it waited.
  EXPECT_GT(wait->self_wait_ns(), wait->self_cpu_ns * 4) << wait->self_ns;
  const analyses::FunctionStats* crunch = Row(r, "crunch");
  ASSERT_NE(crunch, nullptr);
  EXPECT_GT(crunch->self_cpu_ns, wait->self_cpu_ns);
  // The sleepers are set aside, with what they slept in.
  EXPECT_EQ(Row(r, "sleep_for_a_while"), nullptr);
  EXPECT_TRUE(SetAside(r, "sleep_for_a_while"));
  size_t sleepers = 0;
  for (const auto& t : r.set_aside) {
    if (t.top == "sleep_for_a_while") {
      ++sleepers;
      EXPECT_EQ(t.why, "waited");
      EXPECT_LT(t.cpu_ns * model::kWaitingShareDivisor, t.span_ns);
    }
  }
  EXPECT_EQ(sleepers, 2u);
  // --all-threads ranks them again.
  const analyses::Report all = ReportOf(rec.dump, true);
  EXPECT_TRUE(all.set_aside.empty());
  ASSERT_NE(Row(all, "sleep_for_a_while"), nullptr);
  EXPECT_EQ(Row(all, "sleep_for_a_while")->calls, 2u);

  // The table says what ranks it and lists the set-aside threads.
  RunResult table = RunProgram({Cli(), "report", rec.dump_path});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("by self time on CPU"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("set aside"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("only waited"), std::string::npos) << table.out;
  RunResult json = RunProgram({Cli(), "report", "--format", "json", rec.dump_path});
  EXPECT_NE(json.out.find("\"sort\": \"cpu\""), std::string::npos) << json.out.substr(0, 400);
  EXPECT_NE(json.out.find("\"self_cpu_ns\""), std::string::npos);
  EXPECT_NE(json.out.find("\"set_aside\": [{"), std::string::npos);
}

// A pool's workers: a burst of work at their start, then parked until the
// end. Each is on CPU for under 2 % of its span, yet their bursts are the
// program's work: ranked, with their CPU time (the CPU log's first reading
// is the ring's set-up, not the control thread's first tick, which may come
// after the burst), while the sleeper is set aside. Before, the workers
// were set aside as "only waited" and a burst before the first tick showed
// no time on CPU.
TEST(WorkWait, APoolWorkersBurstIsRankedWithItsCpuTimeAndASleeperIsSetAside) {
  Recorded rec = Record("work_wait_pool", {Program("pool-worker"), "5", "100", "1000"});
  ASSERT_EQ(rec.run.exit_code, 0) << rec.run.err;
  // Every thread has readings. (Each usually starts where its ring did: the
  // reading taken at set-up. Once, under ASan in CI, a worker's first reading
  // was the control thread's, 1.8 ms after its ring's start, for a reason not
  // found yet; what the user sees, checked below, held.)
  size_t workers = 0;
  for (const auto& c : rec.dump.cpu) {
    const format::ThreadInfo& t = rec.dump.threads[c.thread_index];
    ASSERT_FALSE(c.readings.empty()) << t.name;
    EXPECT_GE(c.readings.front().tsc, t.start_tsc) << t.name;
    if (t.name == "worker") ++workers;
  }
  EXPECT_EQ(workers, 2u);
  const analyses::Report all = ReportOf(rec.dump, true);
  const analyses::Report r = ReportOf(rec.dump, false);
  ASSERT_TRUE(r.cpu_known);
  const analyses::FunctionStats* burst = Row(r, "burst");
  ASSERT_NE(burst, nullptr) << "the workers were set aside";
  EXPECT_EQ(burst->calls, 2u);
  // On CPU (under load it also waits for a core, which the readings show
  // as waiting: how much is the machine's).
  EXPECT_GT(burst->inclusive_cpu_ns, 0) << burst->inclusive_ns;
  ASSERT_NE(Row(all, "burst"), nullptr);
  EXPECT_EQ(Row(all, "burst")->inclusive_cpu_ns, burst->inclusive_cpu_ns);
  ASSERT_NE(Row(r, "main_work"), nullptr);
  EXPECT_EQ(Row(r, "sleep_for_a_while"), nullptr);
  EXPECT_TRUE(SetAside(r, "sleep_for_a_while"));
  for (const auto& t : r.set_aside) EXPECT_NE(t.name, "worker");
  // chains tells them apart by the same rule.
  const RunResult chains = RunProgram({Cli(), "chains", "--format", "json", rec.dump_path});
  ASSERT_EQ(chains.exit_code, 0) << chains.err;
  size_t working = 0, waiting = 0;
  // Each thread's object: {"tid": N, "name": "...", "span_ns": ..., "cpu_ns": ..., "waited": ...
  for (size_t tid = chains.out.find("{\"tid\": "); tid != std::string::npos;
       tid = chains.out.find("{\"tid\": ", tid + 1)) {
    const size_t at = chains.out.find("\"name\": \"", tid);
    const size_t w = chains.out.find("\"waited\": ", tid);
    ASSERT_NE(at, std::string::npos);
    ASSERT_NE(w, std::string::npos);
    const bool waited = chains.out.compare(w + 10, 4, "true") == 0;
    if (chains.out.compare(at + 9, 7, "worker\"") == 0) working += waited ? 0 : 1;
    if (chains.out.compare(at + 9, 8, "sleeper\"") == 0) waiting += waited ? 1 : 0;
  }
  EXPECT_EQ(working, 2u) << chains.out.substr(0, 2000);
  EXPECT_EQ(waiting, 1u) << chains.out.substr(0, 2000);
  // And so do `sql` and the fleet export (their threads.waited, which the
  // documented queries leave out).
  const std::string db = rec.dump_path + ".db";
  const RunResult sql = RunProgram({Cli(), "sql", "-q", "-o", db, rec.dump_path});
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT name, waited FROM threads", -1, &q, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  std::map<std::string, std::string> waited_of;  // name -> its rows' waited values
  while (sqlite3_step(q) == SQLITE_ROW) {
    waited_of[reinterpret_cast<const char*>(sqlite3_column_text(q, 0))] += std::to_string(sqlite3_column_int(q, 1));
  }
  sqlite3_finalize(q);
  sqlite3_close(h);
  EXPECT_EQ(waited_of["worker"], "00");
  EXPECT_EQ(waited_of["sleeper"], "1");
}

TEST(WorkWait, AWaitGlobMakesAFunctionsTimeWaiting) {
  Recorded rec = Record("work_wait_glob", {Program("event-loop"), "50", "300"});
  ASSERT_EQ(rec.run.exit_code, 0) << rec.run.err;
  symbolize::Symbolizer sym(rec.dump);
  analyses::ReportOptions o;
  o.all_threads = true;
  o.wait_globs = {"handle_*"};
  analyses::Report r;
  ASSERT_TRUE(analyses::ReportDump(rec.dump, sym, model::WalkOptions{}, o, &r).ok());
  const analyses::FunctionStats* h = Row(r, "handle_event");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->self_cpu_ns, 0);
  EXPECT_EQ(h->inclusive_cpu_ns, 0);
  EXPECT_EQ(h->self_wait_ns(), h->self_ns);
}

TEST(WorkWaitJvm, AJavaWorkersMethodTopsTheReportAndTheSleepersAreSetAside) {
  // Not under the sanitizers: their runtimes and HotSpot's signal handling do not mix (jvm_test.cc).
  if (LOOKBACK_TEST_SANITIZED || std::string(LOOKBACK_TEST_JAVA).empty() ||
      access((std::string(LOOKBACK_TEST_JAVA_CLASSES) + "/WorkAndWait.class").c_str(), R_OK) != 0) {
    GTEST_SKIP() << "no JDK, no JVM agent, or a sanitized build";
  }
  Recorded rec = Record("work_wait_jvm", {LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "WorkAndWait", "200", "2000"});
  ASSERT_EQ(rec.run.exit_code, 0) << rec.run.err;
  const analyses::Report r = ReportOf(rec.dump, false);
  ASSERT_FALSE(r.functions.empty());
  const std::string top = r.functions[0].name;
  EXPECT_TRUE(top == "long WorkAndWait.mix(long)" || top == "void WorkAndWait.crunch(long)") << top;
  std::vector<std::string> names;
  for (const auto& t : r.set_aside) names.push_back(t.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "sleeper-1"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "sleeper-2"), names.end());
  EXPECT_EQ(Row(r, "void WorkAndWait.nap(long)"), nullptr);
  // Housekeeping threads, when traced, are set aside under their whole names.
  for (const auto& t : rec.dump.threads) {
    EXPECT_NE(t.name, "Reference Handl");
    EXPECT_NE(t.name, "Signal Dispatch");
  }
  for (const auto& t : r.set_aside) {
    if (t.name == "Common-Cleaner" || t.name == "Reference Handler" || t.name == "Finalizer") {
      EXPECT_EQ(t.why, "housekeeping");
    }
  }
}

}  // namespace
}  // namespace lookback::testing
