// Sampling (lookback record --sample, docs/sampling.md) on tests/programs/
// sampling.cc, whose threads each do one known thing: spin, sleep, touch
// fresh pages, sleep in a loop, allocate. The dump's samples must show it,
// and the Nanoscope .timer/.state files, the Perfetto counters and the SQL
// tables must say the same.
#include <gtest/gtest.h>

#include <filesystem>
#include <sqlite3.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "format/reader.h"
#include "../fleet/duckdb.h"
#include "../integration/harness.h"
#include "model/clock_model.h"
#include "proto_reader.h"

namespace lookback::testing {
namespace {

using Sample = std::array<uint64_t, format::kSampleFields>;

struct Recording {
  std::string dir, dump;
  RunResult run;
  std::map<std::string, uint64_t> truth;  // the program's "key=value" line
};

Recording Record(const std::string& name, std::vector<std::string> flags, const std::string& ms = "300",
                 std::vector<std::string> wrapper = {}) {
  Recording r;
  r.dir = FreshDir(name);
  std::vector<std::string> argv = wrapper;
  argv.push_back(Cli());
  argv.insert(argv.end(), {"record", "--dir", r.dir + "/dumps"});
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", Program("sampling"), ms});
  r.run = RunProgram(argv);
  std::istringstream in(r.run.out);
  std::string word;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq != std::string::npos) r.truth[word.substr(0, eq)] = std::stoull(word.substr(eq + 1));
  }
  const auto dumps = Dumps(r.dir + "/dumps");
  if (dumps.size() == 1) r.dump = dumps[0];
  return r;
}

const format::ThreadSamples* SamplesOf(const format::Dump& d, const std::string& thread) {
  const format::ThreadInfo* t = FindThread(d, thread);
  return t ? d.SamplesOf(*t) : nullptr;
}

uint64_t Delta(const format::ThreadSamples& s, format::SampleField f) {
  return s.samples.back()[f] - s.samples.front()[f];
}

// Thread CPU ns over wall ns, first sample to last.
double CpuShare(const format::Dump& d, const format::ThreadSamples& s) {
  const model::ClockModel clock(d.clock);
  const double wall = clock.TicksToNs(s.samples.back()[format::kSampleTsc] - s.samples.front()[format::kSampleTsc]);
  return static_cast<double>(Delta(s, format::kSampleCpuNs)) / wall;
}

// Share of the state timeline spent in `state`, up to the thread's exit.
double StateShare(const format::Dump& d, const std::string& thread, char state) {
  const format::ThreadInfo* t = FindThread(d, thread);
  const format::ThreadSamples* s = d.SamplesOf(*t);
  uint64_t in = 0, total = 0;
  for (size_t i = 0; i < s->states.size(); ++i) {
    const uint64_t end = i + 1 < s->states.size() ? s->states[i + 1].tsc : t->exit_tsc;
    total += end - s->states[i].tsc;
    if (s->states[i].state == state) in += end - s->states[i].tsc;
  }
  return total ? static_cast<double>(in) / static_cast<double>(total) : 0;
}

class Sampling : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // The allocation interposer replaces malloc, which ASan owns in sanitized runs.
    std::vector<std::string> flags = {"--sample"};
    if (!LOOKBACK_TEST_SANITIZED) flags.push_back("--sample-alloc");
    rec_ = new Recording(Record("sampling-cpu", flags));
  }
  static void TearDownTestSuite() { delete rec_; }
  void SetUp() override {
    ASSERT_EQ(rec_->run.exit_code, 0) << rec_->run.err;
    ASSERT_FALSE(rec_->dump.empty()) << rec_->run.err;
    dump_ = MustOpen(rec_->dump);
  }
  static Recording* rec_;
  format::Dump dump_;
};
Recording* Sampling::rec_ = nullptr;

TEST_F(Sampling, SpinningThreadShowsFullCpuAndSleepingThreadNone) {
  const auto* spinner = SamplesOf(dump_, "spinner");
  const auto* sleeper = SamplesOf(dump_, "sleeper");
  ASSERT_TRUE(spinner && sleeper);
  // One sample per ms of the spinner's CPU time (up to 300 ms: it may share a core with other tests).
  EXPECT_GE(static_cast<double>(spinner->samples.size()), 0.8 * static_cast<double>(Delta(*spinner, format::kSampleCpuNs)) / 1e6);
  EXPECT_GE(Delta(*spinner, format::kSampleCpuNs), 30000000u);
  // About a core, or what the spinner measured itself when tests share the machine.
  const double truth = static_cast<double>(rec_->truth.at("spinner_cpu_permille")) / 1000;
  EXPECT_NEAR(CpuShare(dump_, *spinner), truth, 0.1);
  EXPECT_LE(CpuShare(dump_, *sleeper), 0.05);
  EXPECT_FALSE(spinner->flags & format::kSampleWall);
  // The control thread's view of the scheduler agrees. A state lasts from the
  // poll that saw it to the poll that saw the next one, so on a loaded machine a
  // poll that caught the sleeper between naps, followed by a late poll, counts
  // that gap as running (a soak saw 22 %): most of its time, not nearly all.
  EXPECT_GE(StateShare(dump_, "spinner", 'R'), 0.8);
  EXPECT_GE(StateShare(dump_, "sleeper", 'S'), 0.5);
}

TEST_F(Sampling, FreshPagesShowAsMinorFaults) {
  const auto* s = SamplesOf(dump_, "faulter");
  ASSERT_TRUE(s);
  const uint64_t pages = rec_->truth.at("pages");
  ASSERT_EQ(pages, 8192u);
  EXPECT_GE(Delta(*s, format::kSampleMinorFaults), pages);
  // ASan's shadow memory (one byte per eight) adds a fault per eight pages touched.
  EXPECT_LT(Delta(*s, format::kSampleMinorFaults), pages + pages / 8 + 1000);
  EXPECT_EQ(Delta(*s, format::kSampleMajorFaults), 0u);  // anonymous memory: nothing to read from disk
}

TEST_F(Sampling, SleepLoopShowsVoluntaryContextSwitches) {
  const auto* s = SamplesOf(dump_, "switcher");
  ASSERT_TRUE(s);
  // Every nap is a voluntary switch, but the first and last samples bound
  // the count: a nap that straddles one of them (seen with both cores
  // busy) falls outside.
  EXPECT_GE(Delta(*s, format::kSampleVoluntarySwitches) + 2, rec_->truth.at("naps"));
  EXPECT_LT(Delta(*s, format::kSampleVoluntarySwitches), rec_->truth.at("naps") + 50);
  const auto* spinner = SamplesOf(dump_, "spinner");
  EXPECT_LT(Delta(*spinner, format::kSampleVoluntarySwitches), 10u);  // it never blocked
}

TEST_F(Sampling, AllocationCountersMatchTheAllocationPattern) {
  if (LOOKBACK_TEST_SANITIZED) GTEST_SKIP() << "allocation counting replaces malloc, which ASan owns";
  const auto* s = SamplesOf(dump_, "allocator");
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->flags & format::kSampleAlloc);
  // The first sample is taken at the thread's first trace point, the last in its exit hook.
  EXPECT_EQ(Delta(*s, format::kSampleAllocBytes), rec_->truth.at("alloc_bytes"));
  EXPECT_EQ(Delta(*s, format::kSampleFreedBytes), rec_->truth.at("freed_bytes"));
  // 500 blocks stay allocated: the process's heap grew by about that much while this thread ran.
  const int64_t objects = static_cast<int64_t>(s->samples.back()[format::kSampleHeapObjects]) -
                          static_cast<int64_t>(s->samples.front()[format::kSampleHeapObjects]);
  EXPECT_GE(objects, 490);
  EXPECT_LE(objects, 520);
  // The spinner allocated nothing.
  EXPECT_EQ(Delta(*SamplesOf(dump_, "spinner"), format::kSampleAllocBytes), 0u);
}

// The exit dump is written by the exiting main thread, which spent the run
// joining its workers (no CPU, so no timer samples): it takes one more sample
// just before the dump, so its counters cover the whole run.
TEST_F(Sampling, ExitingThreadTakesAFinalSampleBeforeTheExitDump) {
  uint64_t last_worker_exit = 0;
  const format::ThreadSamples* main_samples = nullptr;
  for (const auto& s : dump_.samples) {
    const format::ThreadInfo& t = dump_.threads[s.thread_index];
    if (t.flags & format::kThreadMain) main_samples = &s;
    last_worker_exit = std::max(last_worker_exit, t.exit_tsc);
  }
  ASSERT_NE(main_samples, nullptr);
  ASSERT_GE(main_samples->samples.size(), 2u);
  EXPECT_GE(main_samples->samples.back()[format::kSampleTsc], last_worker_exit);
}

TEST_F(Sampling, SamplesAreInTimeOrderCumulativeAndWithinTheThreadsLife) {
  ASSERT_GE(dump_.samples.size(), 6u);  // main + five workers
  for (const auto& s : dump_.samples) {
    const format::ThreadInfo& t = dump_.threads[s.thread_index];
    SCOPED_TRACE(t.name);
    ASSERT_GE(s.samples.size(), 2u);  // the first and the last at least
    EXPECT_GE(s.samples.front()[format::kSampleTsc], t.start_tsc);
    if (t.exit_tsc) {
      EXPECT_LE(s.samples.back()[format::kSampleTsc], t.exit_tsc);
    }
    EXPECT_GT(s.samples.back()[format::kSampleRssBytes], 1u << 20);
    for (size_t i = 1; i < s.samples.size(); ++i) {
      for (uint32_t f : {format::kSampleTsc, format::kSampleCpuNs, format::kSampleMinorFaults,
                         format::kSampleVoluntarySwitches, format::kSampleInvoluntarySwitches, format::kSampleAllocBytes})
        ASSERT_GE(s.samples[i][f], s.samples[i - 1][f]) << "field " << f << " sample " << i;
    }
    for (size_t i = 1; i < s.states.size(); ++i) {
      EXPECT_GE(s.states[i].tsc, s.states[i - 1].tsc);
      EXPECT_NE(s.states[i].state, s.states[i - 1].state);  // only changes are logged
    }
  }
}

// Counter values per (tid, track name), in file order, from a Perfetto trace.
std::map<std::pair<uint64_t, std::string>, std::vector<double>> PerfettoCounters(const std::string& path,
                                                                                 std::map<uint64_t, std::vector<std::string>>* states) {
  std::ifstream f(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::map<uint64_t, uint64_t> thread_tid;             // thread track uuid -> tid
  std::map<uint64_t, std::pair<uint64_t, std::string>> tracks;  // child track uuid -> (parent, name)
  std::map<std::pair<uint64_t, std::string>, std::vector<double>> out;
  std::vector<ProtoField> top, packet, fields, inner;
  EXPECT_EQ(ParseMessage(bytes, &top), "");
  for (const ProtoField& p : top) {
    if (ParseMessage(p.bytes, &packet) != "") continue;
    if (const ProtoField* desc = FindField(packet, 60)) {
      ParseMessage(desc->bytes, &fields);
      const uint64_t uuid = FindField(fields, 1)->value;
      if (const ProtoField* thread = FindField(fields, 4)) {
        ParseMessage(thread->bytes, &inner);
        thread_tid[uuid] = FindField(inner, 2)->value;
      } else if (const ProtoField* name = FindField(fields, 2); name && FindField(fields, 5)) {
        tracks[uuid] = {FindField(fields, 5)->value, std::string(name->bytes)};
      }
    }
    if (const ProtoField* ev = FindField(packet, 11)) {
      ParseMessage(ev->bytes, &fields);
      const ProtoField* type = FindField(fields, 9);
      const ProtoField* track = FindField(fields, 11);
      if (!type || !track || !tracks.count(track->value)) continue;
      const auto& [parent, name] = tracks[track->value];
      const uint64_t tid = thread_tid[parent];
      if (type->value == 4) {  // TYPE_COUNTER
        double v = 0;
        if (const ProtoField* i = FindField(fields, 30)) v = static_cast<double>(i->value);
        if (const ProtoField* d = FindField(fields, 44)) memcpy(&v, &d->value, sizeof v);
        out[{tid, name}].push_back(v);
      } else if (type->value == 1 && name == "state") {
        (*states)[tid].push_back(std::string(FindField(fields, 23)->bytes));
      }
    }
  }
  return out;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(f, line);) out.push_back(line);
  return out;
}

TEST_F(Sampling, TimerFileHasNineColumnsAndMatchesThePerfettoCounters) {
  const std::string nano = rec_->dir + "/nanoscope", trace = rec_->dir + "/trace.pftrace";
  ASSERT_EQ(RunProgram({Cli(), "convert", "-q", "--to", "nanoscope", "-o", nano, rec_->dump}).exit_code, 0);
  ASSERT_EQ(RunProgram({Cli(), "convert", "-q", "--to", "perfetto", "-o", trace, rec_->dump}).exit_code, 0);
  std::map<uint64_t, std::vector<std::string>> perfetto_states;
  const auto counters = PerfettoCounters(trace, &perfetto_states);
  const model::ClockModel clock(dump_.clock);
  size_t files = 0;
  for (const auto& s : dump_.samples) {
    const format::ThreadInfo& t = dump_.threads[s.thread_index];
    SCOPED_TRACE(t.name);
    const std::string base = nano + "/" + std::to_string(t.tid) + "-" + t.name + ".txt";
    const auto rows = Lines(base + ".timer");
    ASSERT_EQ(rows.size(), s.samples.size());
    ++files;
    const auto& minor = counters.at({t.tid, "minor faults"});
    const auto& major = counters.at({t.tid, "major faults"});
    const auto& vol = counters.at({t.tid, "voluntary context switches"});
    const auto& invol = counters.at({t.tid, "involuntary context switches"});
    ASSERT_EQ(minor.size(), rows.size());
    EXPECT_EQ(counters.at({t.tid, "CPU %"}).size(), rows.size() - 1);  // one per interval
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<uint64_t> col;
      std::istringstream in(rows[i]);
      for (std::string cell; std::getline(in, cell, ',');) {
        ASSERT_TRUE(col.empty() || cell.rfind(' ', 0) == 0) << "columns are separated by \", \": " << rows[i];
        col.push_back(std::stoull(cell));
      }
      ASSERT_EQ(col.size(), 9u) << rows[i];
      EXPECT_EQ(static_cast<int64_t>(col[0]), clock.MonotonicNs(s.samples[i][format::kSampleTsc]));  // the trace's ns base
      EXPECT_EQ(col[1], s.samples[i][format::kSampleCpuNs]);
      EXPECT_EQ(col[2], major[i]);
      EXPECT_EQ(col[3], minor[i]);
      EXPECT_EQ(col[4], vol[i] + invol[i]);
      if (s.flags & format::kSampleAlloc) {
        EXPECT_EQ(col[5], counters.at({t.tid, "heap bytes"})[i]);
        EXPECT_EQ(col[7], counters.at({t.tid, "allocated bytes"})[i]);
        EXPECT_EQ(col[8], counters.at({t.tid, "freed bytes"})[i]);
      } else {
        EXPECT_EQ(col[5], counters.at({t.tid, "RSS"})[i]);
      }
    }
    // .state: one "<ns>:<state>" line per change, the same states as the Perfetto state track.
    const auto states = Lines(base + ".state");
    ASSERT_EQ(states.size(), s.states.size());
    for (size_t i = 0; i < states.size(); ++i) {
      const size_t colon = states[i].find(':');
      ASSERT_NE(colon, std::string::npos);
      EXPECT_EQ(static_cast<int64_t>(std::stoull(states[i].substr(0, colon))), clock.MonotonicNs(s.states[i].tsc));
      EXPECT_EQ(states[i].substr(colon + 1), perfetto_states[t.tid].at(i));
    }
  }
  EXPECT_EQ(files, dump_.samples.size());
  // CPU % of the spinner's intervals, as Perfetto shows it: at least the share it measured
  // itself in a typical interval (when the machine is shared, the time it waits piles up in
  // a few intervals), never more than 100 (plus clock granularity). (In cpu mode every
  // interval that ends at a timer sample holds one interval of CPU time, even the sleeper's.)
  const auto& cpu = counters.at({FindThread(dump_, "spinner")->tid, "CPU %"});
  std::vector<double> sorted = cpu;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_GE(sorted[sorted.size() / 2], static_cast<double>(rec_->truth.at("spinner_cpu_permille")) / 10 - 20);
  EXPECT_LE(sorted.back(), 110.0);

}

TEST_F(Sampling, SqlTablesHoldTheSamplesAndStates) {
  const std::string db_path = rec_->dir + "/calls.db";
  ASSERT_EQ(RunProgram({Cli(), "sql", "-q", "-o", db_path, rec_->dump}).exit_code, 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto query = [&](const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    double v = -1;
    if (st && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
  };
  for (const auto& s : dump_.samples) {
    const format::ThreadInfo& t = dump_.threads[s.thread_index];
    const std::string where = " JOIN threads t USING (dump_id, thread_id) WHERE t.tid = " + std::to_string(t.tid);
    EXPECT_EQ(query("SELECT count(*) FROM samples" + where), static_cast<double>(s.samples.size())) << t.name;
    EXPECT_EQ(query("SELECT count(*) FROM thread_states" + where), static_cast<double>(s.states.size())) << t.name;
  }
  EXPECT_EQ(query("SELECT sum(minor_faults) FROM sample_deltas JOIN threads t USING (dump_id, thread_id) WHERE t.name = 'faulter'"),
            static_cast<double>(Delta(*SamplesOf(dump_, "faulter"), format::kSampleMinorFaults)));
  // The spans' durations are the dump's own (ns, rounded per span).
  struct Expect {
    const char* thread;
    const char* state;
    char code;
  };
  for (const Expect& e : {Expect{"sleeper", "Sleeping", 'S'}, Expect{"spinner", "Running", 'R'}}) {
    const std::string of_thread = " FROM thread_states JOIN threads t USING (dump_id, thread_id) WHERE t.name = '" + std::string(e.thread) + "'";
    EXPECT_NEAR(query("SELECT sum(duration_ns) * 1.0 / (SELECT sum(duration_ns)" + of_thread + ")" + of_thread + " AND state = '" + e.state + "'"),
                StateShare(dump_, e.thread, e.code), 1e-4)
        << e.thread;
  }
  sqlite3_close(db);
}

// The fleet export carries samples and states too (docs/fleet.md): DuckDB
// reads in the Parquet files what the SQLite export holds.
TEST_F(Sampling, ParquetDatasetHoldsTheSameSamplesAndStatesAsSqlite) {
  if (std::string why = DuckDbUnavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string out = rec_->dir + "/dataset", db_path = rec_->dir + "/fleet.db";
  std::filesystem::remove_all(out);
  ASSERT_EQ(RunProgram({Cli(), "export", "--to", "parquet", "-q", rec_->dump, "-o", out}).exit_code, 0);
  ASSERT_EQ(RunProgram({Cli(), "sql", "-q", rec_->dump, "-o", db_path}).exit_code, 0);
  const std::vector<std::pair<std::string, std::string>> queries = {
      {"samples", "SELECT t.name, count(*), sum(s.cpu_ns), sum(s.minor_faults), sum(s.rss_bytes), count(s.heap_bytes), "
                  "min(s.ts_ns) FROM samples s JOIN threads t USING (dump_id, thread_id) GROUP BY t.name ORDER BY t.name"},
      {"states", "SELECT t.name, s.state, s.code, count(*), sum(s.duration_ns) FROM thread_states s "
                 "JOIN threads t USING (dump_id, thread_id) GROUP BY t.name, s.state, s.code ORDER BY 1, 2, 3"},
  };
  const auto duck = DuckDbQueries(out, queries, rec_->dir);
  Db db(db_path);
  for (const auto& [tag, sql] : queries) {
    const Rows lite = db.Query(sql);
    EXPECT_FALSE(lite.empty()) << tag;
    EXPECT_EQ(duck.at(tag), lite) << tag;
  }
}

TEST(SamplingModes, WallClockModeSamplesASleepingThreadEveryInterval) {
  const Recording r = Record("sampling-wall", {"--sample=wall"});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_FALSE(r.dump.empty());
  const format::Dump d = MustOpen(r.dump);
  const auto* sleeper = SamplesOf(d, "sleeper");
  ASSERT_TRUE(sleeper);
  EXPECT_TRUE(sleeper->flags & format::kSampleWall);
  // 300 ms asleep, a sample every ms of wall time (cpu mode gives it 2: first and last).
  EXPECT_GE(sleeper->samples.size(), 100u);
  EXPECT_LE(CpuShare(d, *sleeper), 0.1);
  EXPECT_NEAR(CpuShare(d, *SamplesOf(d, "spinner")), static_cast<double>(r.truth.at("spinner_cpu_permille")) / 1000, 0.1);
}

TEST(SamplingModes, FallsBackToAPosixTimerAndSaysSoOnceWhenPerfEventOpenIsDenied) {
  const Recording r = Record("sampling-noperf", {"--sample"}, "300", {Program("deny-perf")});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_FALSE(r.dump.empty());
  size_t said = 0;
  for (size_t at = 0; (at = r.run.err.find("perf_event_open is not available", at)) != std::string::npos; ++at) ++said;
  EXPECT_EQ(said, 1u) << r.run.err;
  const format::Dump d = MustOpen(r.dump);
  const auto* spinner = SamplesOf(d, "spinner");
  ASSERT_TRUE(spinner);
  EXPECT_FALSE(spinner->flags & format::kSamplePerf);
  // POSIX CPU timers fire on the scheduler tick (4 ms at HZ=250): fewer, but regular, samples
  // (at least one per 8 ms of the CPU time the spinner got).
  EXPECT_GE(static_cast<double>(spinner->samples.size()), static_cast<double>(Delta(*spinner, format::kSampleCpuNs)) / 8e6);
  EXPECT_GE(spinner->samples.size(), 5u);
  EXPECT_NEAR(CpuShare(d, *spinner), static_cast<double>(r.truth.at("spinner_cpu_permille")) / 1000, 0.1);
}

TEST(SamplingModes, OffUnlessAskedForAndBadValuesAreRefused) {
  const Recording r = Record("sampling-off", {});
  ASSERT_EQ(r.run.exit_code, 0) << r.run.err;
  ASSERT_FALSE(r.dump.empty());
  EXPECT_TRUE(MustOpen(r.dump).samples.empty());
  const Recording bad = Record("sampling-bad", {"--sample=sometimes"});
  EXPECT_EQ(bad.run.exit_code, 2);
  EXPECT_NE(bad.run.err.find("--sample: LOOKBACK_SAMPLE='sometimes'"), std::string::npos) << bad.run.err;
  const Recording fast = Record("sampling-bad-interval", {"--sample", "--sample-interval", "1us"});
  EXPECT_EQ(fast.run.exit_code, 2);
  EXPECT_NE(fast.run.err.find("100us to 10s"), std::string::npos) << fast.run.err;
}

}  // namespace
}  // namespace lookback::testing
