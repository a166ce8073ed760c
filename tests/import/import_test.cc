// `lookback import`: Android's method traces into dumps, end to end.
//   - traces recorded on devices (tests/data/android, AOSP's perflib test
//     traces: versions 1 and 3, dual and thread-CPU clocks, exceptions, a
//     trace that starts and ends inside calls), a streaming trace, a trace
//     cut short and files that are not traces;
//   - faithfulness: a JVM program recorded by lookback, exported as ART and
//     Nanoscope, imported back: same threads, nesting and names, times to
//     the exported format's resolution;
//   - the fleet path: two "app builds" as .trace folders, imported, exported
//     to Parquet, the regressed method ranked first by DuckDB (SQLite when
//     node is absent).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../exporters/art_reader.h"
#include "../fleet/duckdb.h"
#include "../integration/harness.h"
#include "../integration/sqlite_db.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

std::string Data(const std::string& name) { return std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/android/" + name; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteAll(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

bool HaveJava() {
  return std::string(LOOKBACK_TEST_JAVA).size() > 0 &&
         access((std::string(LOOKBACK_TEST_JAVA_CLASSES) + "/CallTree.class").c_str(), R_OK) == 0;
}
#define REQUIRE_JAVA() \
  if (!HaveJava()) GTEST_SKIP() << "no JDK: the Java test programs were not built"

// A call as the exporters see it (model::Walk: decoded, matched, repaired),
// in the order of its entry: what the comparisons compare. Times in ns
// relative to the earliest call of the dump.
struct Call {
  std::string name;
  uint32_t depth;
  int64_t start, end;
};

class CallCollector : public model::TraceSink {
 public:
  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo& t) override {
    calls_ = &out[t.tid];
    names[t.tid] = t.name;
    open_.clear();
  }
  void Enter(uint64_t key, int64_t ts, uint32_t depth, uint8_t) override {
    auto it = ctx_->dump->names.find(key);
    open_.push_back(calls_->size());
    calls_->push_back({it == ctx_->dump->names.end() ? "?" : it->second, depth, ts, ts});
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t) override {
    if (open_.empty()) return;
    (*calls_)[open_.back()].end = ts;
    open_.pop_back();
  }
  void EndThread(const model::ThreadSummary&) override {}
  Status End() override { return Status::Ok(); }

  std::map<uint32_t, std::vector<Call>> out;
  std::map<uint32_t, std::string> names;

 private:
  const model::ExportContext* ctx_ = nullptr;
  std::vector<Call>* calls_ = nullptr;
  std::vector<size_t> open_;
};

// tid -> calls in entry order, for the threads that have calls.
std::map<uint32_t, std::vector<Call>> Calls(const format::Dump& d, std::map<uint32_t, std::string>* names = nullptr) {
  symbolize::Symbolizer sym(d);
  CallCollector c;
  EXPECT_TRUE(model::Walk(d, sym, {}, c).status.ok());
  int64_t origin = INT64_MAX;
  for (auto it = c.out.begin(); it != c.out.end();) {
    if (it->second.empty()) {
      it = c.out.erase(it);
      continue;
    }
    if (names) (*names)[it->first] = c.names[it->first];
    for (const Call& call : it->second) origin = std::min(origin, call.start);
    ++it;
  }
  for (auto& [tid, calls] : c.out) {
    for (Call& call : calls) call.start -= origin, call.end -= origin;
  }
  return c.out;
}

RunResult Import(const std::vector<std::string>& inputs, const std::string& out, std::vector<std::string> extra = {}) {
  std::vector<std::string> argv = {Cli(), "import"};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  argv.insert(argv.end(), {"-o", out});
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunProgram(argv);
}

std::string Meta(const format::Dump& d, const std::string& key) {
  auto it = d.metadata.find(key);
  return it == d.metadata.end() ? "" : it->second;
}

bool HasName(const format::Dump& d, const std::string& name) {
  for (const auto& [key, n] : d.names) {
    if (n == name) return true;
  }
  return false;
}

size_t Lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

TEST(ImportArt, DeviceTraceKeepsJavaNamesThreadsAndBothClocks) {
  const std::string dir = FreshDir("import-basic");
  const RunResult r = Import({Data("basic.trace")}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump d = MustOpen(dir + "/basic.lbk");
  EXPECT_EQ(Meta(d, "import.format"), "art-trace");
  EXPECT_EQ(Meta(d, "import.clock"), "dual");
  EXPECT_EQ(Meta(d, "import.version"), "3");
  EXPECT_EQ(Meta(d, "import.art.vm"), "dalvik");
  // PrettyMethod names, as the JVM agent writes them.
  EXPECT_TRUE(HasName(d, "void com.test.android.traceview.Basic.foo()"));
  EXPECT_TRUE(HasName(d, "int com.test.android.traceview.Basic.bar()"));
  EXPECT_TRUE(HasName(d, "void android.os.Debug.startMethodTracing(java.lang.String)"));

  // An independent reading of the file: every record is an event of its
  // thread, and the thread-CPU column is the CPU section, to the µs.
  const ArtTrace art = ParseArtTrace(ReadAll(Data("basic.trace")));
  ASSERT_EQ(art.error, "");
  ASSERT_EQ(art.record_size, 14);
  std::map<uint32_t, std::vector<uint64_t>> cpu_us;
  for (const auto& rec : art.records) cpu_us[rec.thread].push_back(rec.cpu_us);
  ASSERT_FALSE(cpu_us.empty());
  for (const auto& [tid, readings] : cpu_us) {
    const format::ThreadInfo* t = nullptr;
    for (const auto& th : d.threads) t = th.tid == tid ? &th : t;
    ASSERT_NE(t, nullptr) << "thread " << tid;
    EXPECT_EQ(t->name, art.threads.at(tid));
    const format::ThreadCpu* c = nullptr;
    for (const auto& tc : d.cpu) c = tc.tid == tid ? &tc : c;
    ASSERT_NE(c, nullptr) << "no CPU readings for thread " << tid;
    ASSERT_EQ(c->readings.size(), readings.size());
    for (size_t i = 0; i < readings.size(); ++i) EXPECT_EQ(c->readings[i].cpu_ns, readings[i] * 1000);
  }
}

TEST(ImportArt, EveryDumpCommandWorksOnAnImportedTrace) {
  const std::string dir = FreshDir("import-commands");
  ASSERT_EQ(Import({Data("basic.trace"), Data("exception.trace")}, dir).exit_code, 0);
  const std::string dump = dir + "/exception.lbk";
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {Cli(), "info", dump},
           {Cli(), "verify", dump},
           {Cli(), "report", dump},
           {Cli(), "chains", dump},
           {Cli(), "diff", dir + "/basic.lbk", dump},
           {Cli(), "sql", dump, "-o", dir + "/t.db"},
           {Cli(), "export", "--to", "parquet", dump, "-o", dir + "/dataset"},
           {Cli(), "convert", dump, "--to", "perfetto", "-o", dir + "/t.perfetto"},
           {Cli(), "convert", dump, "--to", "art", "-o", dir + "/again.trace"},
       }) {
    const RunResult r = RunProgram(argv);
    EXPECT_EQ(r.exit_code, 0) << argv[1] << ": " << r.err;
  }
  const RunResult report = RunProgram({Cli(), "report", dump});
  EXPECT_NE(report.out.find("java.lang.Throwable.fillInStackTrace"), std::string::npos) << report.out;
  // Signatures in Java names match the device's calls.
  WriteAll(dir + "/exc.sig",
           "name: exception-in-foo\nchain: *Exceptions.foo() >> *Throwable.fillInStackTrace()\n");
  const RunResult match = RunProgram({Cli(), "match", dump, "--signatures", dir + "/exc.sig"});
  EXPECT_EQ(match.exit_code, 0) << match.err;
  EXPECT_NE(match.out.find("exception-in-foo        1"), std::string::npos) << match.out;
}

TEST(ImportArt, VersionOneThreadCpuTraceFromAndroid23) {
  const std::string dir = FreshDir("import-v1");
  const RunResult r = Import({Data("basic-api10.trace")}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump d = MustOpen(dir + "/basic-api10.lbk");
  EXPECT_EQ(Meta(d, "import.version"), "1");
  EXPECT_EQ(Meta(d, "import.clock"), "thread-cpu");
  EXPECT_TRUE(d.cpu.empty());  // the CPU clock is the records' time itself
  EXPECT_TRUE(HasName(d, "void com.test.android.traceview.Basic.foo()"));
  const auto calls = Calls(d);
  ASSERT_FALSE(calls.empty());
}

TEST(ImportArt, ExceptionUnrollsAndCallsBegunBeforeTracingNestProperly) {
  const std::string dir = FreshDir("import-nesting");
  ASSERT_EQ(Import({Data("exception.trace"), Data("mismatched.trace")}, dir).exit_code, 0);
  for (const char* name : {"exception.lbk", "mismatched.lbk"}) {
    SCOPED_TRACE(name);
    const format::Dump d = MustOpen(dir + "/" + name);
    for (const auto& [tid, calls] : Calls(d)) {
      // Nested: a call at depth n+1 lies within the latest call at depth n.
      std::vector<const Call*> open;
      for (const Call& c : calls) {
        open.resize(std::min<size_t>(open.size(), c.depth));
        ASSERT_EQ(open.size(), c.depth) << c.name;
        if (!open.empty()) {
          EXPECT_GE(c.start, open.back()->start);
          EXPECT_LE(c.end, open.back()->end);
        }
        open.push_back(&c);
      }
    }
  }
  // The mismatched trace starts inside calls: the importer opens them at
  // the thread's first event and says so.
  EXPECT_NE(Meta(MustOpen(dir + "/mismatched.lbk"), "import.repairs"), "");
}

TEST(ImportArt, TraceCutShortIsReadAsFarAsItGoesWithAWarning) {
  const std::string dir = FreshDir("import-cut");
  const std::string whole = ReadAll(Data("basic.trace"));
  WriteAll(dir + "/cut.trace", whole.substr(0, whole.size() - 14 * 3 - 5));
  const RunResult r = Import({dir + "/cut.trace"}, dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: " + dir + "/cut.trace: the trace is cut short"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset"), std::string::npos) << r.err;
  const format::Dump cut = MustOpen(dir + "/out/cut.lbk");
  EXPECT_NE(Meta(cut, "import.warnings"), "");
  const ArtTrace art = ParseArtTrace(whole);
  EXPECT_EQ(Meta(cut, "import.records"), std::to_string(art.records.size() - 4));
}

TEST(ImportArt, BadFilesGiveOneErrorLineWithTheOffsetAndNoDump) {
  const std::string dir = FreshDir("import-bad");
  WriteAll(dir + "/garbage.trace", "hello, not a trace\n");
  const std::string whole = ReadAll(Data("basic.trace"));
  WriteAll(dir + "/nokey.trace", whole.substr(0, whole.find("*end")));  // the key never ends
  for (const std::string& bad : {Data("header.trace"), dir + "/garbage.trace", dir + "/nokey.trace"}) {
    SCOPED_TRACE(bad);
    const std::string out = dir + "/out-" + std::filesystem::path(bad).stem().string();
    const RunResult r = Import({bad}, out);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(Lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("lookback: " + bad + ": ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("offset"), std::string::npos) << r.err;
    EXPECT_TRUE(ListFiles(out).empty()) << "left behind: " << ListFiles(out).size() << " file(s)";
  }
  // header.trace: a text key, then "SLOW\ndata section follows..": the
  // magic, then text where the version should be (after the key's 557 bytes).
  const RunResult r = Import({Data("header.trace")}, dir + "/h");
  EXPECT_NE(r.err.find("unsupported ART trace version"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("offset 561"), std::string::npos) << r.err;
}

// The streaming layout of the same trace, written here from art_reader's
// reading of it (art/runtime/trace.cc: the header with version | 0xF0, a
// thread record and method records before first use, the summary last).
std::string Streaming(const ArtTrace& t, bool with_summary) {
  auto put = [](std::string* out, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
  };
  std::string out;
  put(&out, 0x574f4c53, 4);
  put(&out, 0xF3, 2);
  put(&out, 32, 2);
  put(&out, t.start_us, 8);
  put(&out, 14, 2);
  out.resize(32, '\0');
  std::set<uint32_t> threads, methods;
  for (const auto& rec : t.records) {
    if (threads.insert(rec.thread).second) {
      const std::string& name = t.threads.at(rec.thread);
      put(&out, 0, 2), put(&out, 2, 1), put(&out, rec.thread, 2), put(&out, name.size(), 2);
      out += name;
    }
    if (methods.insert(rec.method).second) {
      const ArtMethod& m = t.methods.at(rec.method);
      char id[16];
      snprintf(id, sizeof id, "%#x", rec.method);
      const std::string line = std::string(id) + "\t" + m.cls + "\t" + m.name + "\t" + m.signature + "\t" + m.file + "\n";
      put(&out, 0, 2), put(&out, 1, 1), put(&out, line.size(), 2);
      out += line;
    }
    put(&out, rec.thread, 2), put(&out, rec.method | rec.action, 4), put(&out, rec.cpu_us, 4), put(&out, rec.wall_us, 4);
  }
  if (with_summary) {
    std::string summary = "*version\n3\ndata-file-overflow=false\nclock=dual\nvm=art\npid=1234\n*threads\n";
    for (const auto& [tid, name] : t.threads) summary += std::to_string(tid) + "\t" + name + "\n";
    summary += "*methods\n*end\n";
    put(&out, 0, 2), put(&out, 3, 1), put(&out, summary.size(), 4);
    out += summary;
  }
  return out;
}

TEST(ImportArt, StreamingTraceImportsAsTheSameCalls) {
  const std::string dir = FreshDir("import-streaming");
  const ArtTrace art = ParseArtTrace(ReadAll(Data("exception.trace")));
  ASSERT_EQ(art.error, "");
  WriteAll(dir + "/streaming.trace", Streaming(art, true));
  WriteAll(dir + "/unfinished.trace", Streaming(art, false));
  const RunResult r = Import({Data("exception.trace"), dir + "/streaming.trace", dir + "/unfinished.trace"}, dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump plain = MustOpen(dir + "/out/exception.lbk");
  const format::Dump streaming = MustOpen(dir + "/out/streaming.lbk");
  EXPECT_EQ(Meta(streaming, "import.streaming"), "1");
  EXPECT_EQ(Meta(streaming, "import.clock"), "dual");
  EXPECT_EQ(Meta(streaming, "import.art.pid"), "1234");
  std::map<uint32_t, std::string> plain_names, streaming_names;
  const auto a = Calls(plain, &plain_names), b = Calls(streaming, &streaming_names);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(plain_names, streaming_names);
  for (const auto& [tid, calls] : a) {
    ASSERT_EQ(b.at(tid).size(), calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(b.at(tid)[i].name, calls[i].name);
      EXPECT_EQ(b.at(tid)[i].start, calls[i].start);
      EXPECT_EQ(b.at(tid)[i].end, calls[i].end);
    }
  }
  // Without its summary (the app died while tracing): every record read, a warning.
  EXPECT_NE(r.err.find("unfinished.trace: the trace has no summary"), std::string::npos) << r.err;
  EXPECT_EQ(Meta(MustOpen(dir + "/out/unfinished.lbk"), "import.records"), std::to_string(art.records.size()));
}

// The exported calls, imported back, against the original dump's calls.
void ExpectSameCalls(const format::Dump& original, const format::Dump& imported, int64_t tolerance_ns, bool by_tid) {
  std::map<uint32_t, std::string> names_a, names_b;
  const auto a = Calls(original, &names_a), b = Calls(imported, &names_b);
  ASSERT_EQ(a.size(), b.size());
  size_t compared = 0;
  for (const auto& [tid, want] : a) {
    // ART ids are 16 bits: a larger tid is renamed "<name> (tid N)" (exporters/art.cc).
    uint32_t other = tid;
    if (!by_tid) {
      other = 0;
      for (const auto& [t, n] : names_b) {
        if (n == names_a[tid] || n == names_a[tid] + " (tid " + std::to_string(tid) + ")") other = t;
      }
    }
    SCOPED_TRACE("thread " + names_a[tid]);
    ASSERT_TRUE(b.count(other));
    const auto& got = b.at(other);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].name, want[i].name) << "call " << i;
      ASSERT_EQ(got[i].depth, want[i].depth) << "call " << i << " " << want[i].name;
      ASSERT_LE(std::abs(got[i].start - want[i].start), tolerance_ns) << "call " << i << " " << want[i].name;
      ASSERT_LE(std::abs(got[i].end - want[i].end), tolerance_ns) << "call " << i << " " << want[i].name;
    }
    compared += want.size();
  }
  EXPECT_GT(compared, 200u);
}

TEST(ImportFaithful, JvmDumpThroughArtAndNanoscopeComesBackTheSame) {
  REQUIRE_JAVA();
  const std::string dir = FreshDir("import-faithful");
  RunResult r = RunProgram({Cli(), "record", "-q", "--dir", dir + "/dumps", "--jvm-include", "CallTree.*", "--",
                            LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "CallTree", "2", "60", "42",
                            dir + "/ground-truth.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  for (const char* to : {"art", "nanoscope"}) {
    const std::string out = dir + (std::string(to) == "art" ? "/calltree.trace" : "/calltree-nanoscope");
    r = RunProgram({Cli(), "convert", dumps[0], "--to", to, "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  r = Import({dir + "/calltree.trace", dir + "/calltree-nanoscope"}, dir + "/imported");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump original = MustOpen(dumps[0]);
  const format::Dump art = MustOpen(dir + "/imported/calltree.lbk");
  const format::Dump nanoscope = MustOpen(dir + "/imported/calltree-nanoscope.lbk");
  {
    SCOPED_TRACE("ART: µs");
    ExpectSameCalls(original, art, 999, false);
  }
  {
    SCOPED_TRACE("Nanoscope: ns");
    ExpectSameCalls(original, nanoscope, 1, true);
  }
  // Both clocks of the .trace are kept: the wall clock as the records' time,
  // the thread-CPU column as a reading per event in the CPU section.
  EXPECT_EQ(Meta(art, "import.clock"), "dual");
  size_t events = 0, readings = 0;
  for (const auto& [tid, calls] : Calls(art)) events += 2 * calls.size();
  for (const auto& c : art.cpu) readings += c.readings.size();
  EXPECT_EQ(readings, events);
  EXPECT_EQ(Meta(nanoscope, "import.format"), "nanoscope");
}

// A .trace pulled from a device running build BUILD of the app; the dump
// keeps the name (dumps.file), which is how the query tells the builds apart.
std::string Trace(int build, int run) { return "build-" + std::to_string(build) + "-run-" + std::to_string(run) + ".trace"; }

// The query runs on the Parquet dataset with DuckDB when node is there,
// else on the same rows through `lookback sql` and SQLite.
TEST(ImportFleet, TwoAppBuildsRankTheRegressedMethodFirst) {
  REQUIRE_JAVA();
  const std::string dir = FreshDir("import-fleet");
  for (int build = 1; build <= 2; ++build) {
    for (int run = 1; run <= 2; ++run) {
      const std::string rec = dir + "/rec-" + std::to_string(build) + "-" + std::to_string(run);
      RunResult r = RunProgram({Cli(), "record", "-q", "--dir", rec, "--jvm-include", "AppBuild.*", "--",
                                LOOKBACK_TEST_JAVA, "-cp", LOOKBACK_TEST_JAVA_CLASSES, "AppBuild", std::to_string(build), "20"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const auto dumps = Dumps(rec);
      ASSERT_EQ(dumps.size(), 1u);
      const std::string traces = dir + "/build-" + std::to_string(build);
      std::filesystem::create_directories(traces);
      r = RunProgram({Cli(), "convert", dumps[0], "--to", "art", "-o", traces + "/" + Trace(build, run)});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    const std::string traces = dir + "/build-" + std::to_string(build);
    const RunResult r = Import({traces + "/" + Trace(build, 1), traces + "/" + Trace(build, 2)}, dir + "/dumps/build-" + std::to_string(build),
                               {"--process", "com.example.app", "--host", "pixel-" + std::to_string(build)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  RunResult r = RunProgram({Cli(), "export", "--to", "parquet", dir + "/dumps", "-o", dir + "/dataset"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // What grew per call, among the methods called at least 10 times per build:
  // main() runs once per process, and its self time (class loading, the JIT)
  // moves by tens of ms with the machine's load (a soak run saw it shrink by
  // 14 ms and top a ranking by absolute change).
  const std::string query =
      "WITH per AS (SELECT CASE WHEN d.file LIKE 'build-2-%' THEN 2 ELSE 1 END AS build, f.name, "
      "avg(c.self_ns) AS self_ns FROM calls c JOIN dumps d ON d.dump_id = c.dump_id "
      "JOIN functions f ON f.dump_id = c.dump_id AND f.function_id = c.function_id GROUP BY 1, 2 "
      "HAVING count(*) >= 10) "
      "SELECT a.name, CAST(b.self_ns - a.self_ns AS BIGINT) AS grew_ns FROM per a JOIN per b "
      "ON a.name = b.name AND a.build = 1 AND b.build = 2 ORDER BY b.self_ns - a.self_ns DESC LIMIT 3";
  // The thread-CPU clock came through too (lookback's CPU readings, the
  // .trace's thread-CPU column, the imported CPU section): decode() sleeps.
  const std::string waiting =
      "SELECT CAST(sum(c.cpu_ns) AS BIGINT), CAST(sum(c.duration_ns) AS BIGINT) FROM calls c "
      "JOIN functions f ON f.dump_id = c.dump_id AND f.function_id = c.function_id "
      "JOIN dumps d ON d.dump_id = c.dump_id WHERE f.name = 'void AppBuild.decode(int)' AND d.file LIKE 'build-2-%'";
  Rows rows, cpu;
  if (DuckDbUnavailable().empty()) {
    const auto got = DuckDbQueries(dir + "/dataset", {{"rank", query}, {"cpu", waiting}}, dir);
    rows = got.at("rank");
    cpu = got.at("cpu");
  } else {
    r = RunProgram({Cli(), "sql", dir + "/dumps", "-o", dir + "/fleet.db"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    rows = Db(dir + "/fleet.db").Query(query);
    cpu = Db(dir + "/fleet.db").Query(waiting);
  }
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0][0], "void AppBuild.decode(int)");
  EXPECT_GE(std::stoll(rows[0][1]), 5'000'000);  // 12 ms against 2 ms of sleep per call
  ASSERT_EQ(cpu.size(), 1u);
  EXPECT_LT(std::stoll(cpu[0][0]) * 2, std::stoll(cpu[0][1])) << "decode()'s time on CPU against its duration";
}

TEST(ImportNanoscope, ThreadFilesWithTimerSideFilesGiveCpuReadings) {
  const std::string dir = FreshDir("import-nanoscope");
  std::filesystem::create_directories(dir + "/trace");
  WriteAll(dir + "/trace/4242-main.txt",
           "1000:void a.B.run()\n1500:int a.B.work(int)\n2500:POP\n3000:POP\n");
  WriteAll(dir + "/trace/4242-main.txt.timer", "1000, 100, 0, 0, 0, 0, 0, 0, 0\n3000, 1900, 0, 0, 1, 0, 0, 0, 0\n");
  WriteAll(dir + "/trace/4242-main.txt.state", "1000:Running\n");
  const RunResult r = Import({dir + "/trace"}, dir + "/out");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump d = MustOpen(dir + "/out/trace.lbk");
  EXPECT_EQ(Meta(d, "import.clock"), "monotonic+thread-cpu");
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].tid, 4242u);
  EXPECT_EQ(d.threads[0].name, "main");
  ASSERT_EQ(d.cpu.size(), 1u);
  EXPECT_EQ(d.cpu[0].readings.size(), 2u);
  const auto calls = Calls(d).at(4242);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[1].name, "int a.B.work(int)");
  EXPECT_EQ(calls[1].start, 500);
  EXPECT_EQ(calls[1].end, 1500);

  WriteAll(dir + "/bad.txt", "1000:void a.B.run()\nnot a line\n");
  const RunResult bad = Import({dir + "/bad.txt"}, dir + "/bad-out");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("bad.txt: not a Nanoscope line"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("offset 20"), std::string::npos) << bad.err;
  EXPECT_TRUE(ListFiles(dir + "/bad-out").empty());
}

}  // namespace
}  // namespace lookback::testing
