// The clang pass front-end (src/frontends/pass): what a user of the plugin
// relies on beyond the exact round trip (roundtrip_test.cc) and non-local
// exits (lifecycle_test.cc): trace points really are inlined, a program runs
// without the runtime, a preload-only build still records, and the options
// exclude what they say.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "harness.h"
#include "model/walk.h"
#include "runtime/ring_abi.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

bool Built(const std::string& name) { return access(Program(name).c_str(), X_OK) == 0; }

#define REQUIRE_PASS_PROGRAM(name) \
  if (!Built(name)) GTEST_SKIP() << name << " not built (no clang 14 / llvm-14-dev)"

// Function names in a dump, symbolized by the CLI.
std::multiset<std::string> EnteredFunctions(const std::string& dump) {
  RunResult ev = RunProgram({Cli(), "events", dump});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  std::multiset<std::string> out;
  size_t pos = 0;
  while (pos < ev.out.size()) {
    size_t end = ev.out.find('\n', pos);
    if (end == std::string::npos) end = ev.out.size();
    const std::string line = ev.out.substr(pos, end - pos);
    pos = end + 1;
    if (line.find("\tENTER\t") == std::string::npos) continue;
    out.insert(line.substr(line.rfind('\t') + 1));
  }
  return out;
}

// The body of `symbol` (demangled) in a program's disassembly.
std::string Disassembly(const std::string& program, const std::string& symbol) {
  RunResult dis = RunProgram({"objdump", "-d", "-C", "--no-show-raw-insn", Program(program)});
  EXPECT_EQ(dis.exit_code, 0) << dis.err;
  const size_t body = dis.out.find("<" + symbol + ">:\n");
  if (body == std::string::npos) return "";
  return dis.out.substr(body, dis.out.find("\n\n", body) - body);
}

TEST(Pass, CheckShapeInlinesTheTestAndCallsTheRecordOutOfLine) {
  REQUIRE_PASS_PROGRAM("roundtrip-pass-O2");
  const std::string f3 = Disassembly("roundtrip-pass-O2", "(anonymous namespace)::f3(int, unsigned int*)");
  ASSERT_FALSE(f3.empty());
  EXPECT_EQ(f3.find("__cyg_profile_func"), std::string::npos) << f3;
  EXPECT_NE(f3.find("%fs:"), std::string::npos) << f3;  // the thread's ring pointer
  EXPECT_EQ(f3.find("rdtsc"), std::string::npos) << f3;
  const std::string abi = "_abi" LOOKBACK_RING_ABI_STR(LOOKBACK_RING_ABI);
  EXPECT_NE(f3.find("<lb_pass_enter_on" + abi + ">"), std::string::npos) << f3;
  EXPECT_NE(f3.find("<lb_pass_exit_on" + abi + ">"), std::string::npos) << f3;
  EXPECT_NE(Disassembly("roundtrip-pass-O2", "lb_pass_enter_on" + abi).find("rdtsc"), std::string::npos);
}

TEST(Pass, FullShapeInlinesTheWholeFastPath) {
  REQUIRE_PASS_PROGRAM("roundtrip-pass-full-O2");
  const std::string f3 = Disassembly("roundtrip-pass-full-O2", "(anonymous namespace)::f3(int, unsigned int*)");
  ASSERT_FALSE(f3.empty());
  EXPECT_NE(f3.find("%fs:"), std::string::npos) << f3;
  size_t rdtsc = 0;
  for (size_t at = f3.find("rdtsc"); at != std::string::npos; at = f3.find("rdtsc", at + 1)) ++rdtsc;
  // Entry and exit, each with its exact reading and a dense fast ring's
  // reading (two inlined copies, one of which runs).
  EXPECT_GE(rdtsc, 2u) << f3;
  EXPECT_LE(rdtsc, 4u) << f3;
  EXPECT_EQ(f3.find("<lb_pass_enter_on"), std::string::npos) << f3;
}

TEST(Pass, ProgramRunsWithoutTheRuntimeAndRecordsNothing) {
  REQUIRE_PASS_PROGRAM("roundtrip-pass-O2");
  const std::string dir = FreshDir("pass-no-runtime");
  RunResult dyn = RunProgram({"readelf", "-d", Program("roundtrip-pass-O2")});
  EXPECT_EQ(dyn.out.find("liblookback"), std::string::npos) << "the program must not need liblookback";
  const std::string gt = dir + "/gt.txt";
  RunResult r = RunProgram({Program("roundtrip-pass-O2"), "4", "300", "42", gt}, {{"LOOKBACK_DIR", dir + "/dumps"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  size_t events = 0;
  for (const auto& [tid, evs] : GroundTruth(gt)) events += evs.size();
  EXPECT_GT(events, 1000u);  // it ran its calls
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
}

TEST(Pass, PreloadWithoutExportedRingRecordsAndSaysHowToFix) {
  REQUIRE_PASS_PROGRAM("roundtrip-pass-unexported");
  const std::string dir = FreshDir("pass-unexported");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", Program("roundtrip-pass-unexported"), "1",
                            "50", "3", dir + "/gt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--export-dynamic-symbol='lb_tls_ring*'"), std::string::npos) << r.err;
  EXPECT_EQ(Dumps(dir + "/dumps").size(), 1u);
}

// A program built by a pass of another ring ABI (ring ABI 99, whose Ring has
// another first cache line: tests/CMakeLists.txt) meets this runtime: it must
// run exactly as without lookback, say so in one line, and leave no trace
// records at all, never garbage.
void ExpectForeignProgramRunsUntraced(const std::vector<std::string>& launcher, const std::string& program,
                                      const std::string& dir) {
  const std::string gt = dir + "/gt.txt";
  std::vector<std::string> argv = launcher;
  for (const std::string& a : {Program(program), std::string("4"), std::string("300"), std::string("42"), gt}) {
    argv.push_back(a);
  }
  RunResult r = RunProgram(argv, {{"LOOKBACK_DIR", dir + "/dumps"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t events = 0;
  for (const auto& [tid, evs] : GroundTruth(gt)) events += evs.size();
  EXPECT_GT(events, 1000u) << "the program ran all its calls";
  const std::string line = "built for lookback ring ABI 99, this runtime has ABI " LOOKBACK_RING_ABI_STR(LOOKBACK_RING_ABI)
                           ": tracing is off for the whole process";
  const size_t at = r.err.find(line);
  EXPECT_NE(at, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(line, at + 1), std::string::npos) << "said once, not per thread: " << r.err;
  for (const std::string& dump : Dumps(dir + "/dumps")) {
    RunResult verify = RunProgram({Cli(), "verify", dump});
    EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    const format::Dump d = MustOpen(dump);
    for (const auto& [tid, evs] : DumpEvents(d)) EXPECT_TRUE(evs.empty()) << "thread " << tid << " has records";
  }
}

TEST(PassAbi, ForeignLayoutPreloadedRunsWithTracingOffAndOneLine) {
  REQUIRE_PASS_PROGRAM("pass-foreign-abi");
  const std::string dir = FreshDir("pass-foreign-preload");
  ExpectForeignProgramRunsUntraced({Cli(), "record", "--dir", dir + "/dumps", "--"}, "pass-foreign-abi", dir);
}

TEST(PassAbi, ForeignLayoutLinkedRunsWithTracingOffAndOneLine) {
  REQUIRE_PASS_PROGRAM("pass-foreign-abi-linked");
  const std::string dir = FreshDir("pass-foreign-linked");
  ExpectForeignProgramRunsUntraced({}, "pass-foreign-abi-linked", dir);
}

// Objects built by passes of two ABIs in one program: each keeps its own
// check-shape recorder (its symbol carries the ABI), so neither object's calls
// reach the other's code; the program computes what it should, and the
// runtime, meeting the foreign object's first trace point, turns tracing off
// for the process and says so once.
TEST(PassAbi, ObjectsOfTwoAbisInOneProgramEachKeepTheirOwnRecorder) {
  REQUIRE_PASS_PROGRAM("pass-mixed-abi");
  RunResult syms = RunProgram({"nm", Program("pass-mixed-abi")});
  EXPECT_NE(syms.out.find("lb_pass_enter_on_abi" LOOKBACK_RING_ABI_STR(LOOKBACK_RING_ABI)), std::string::npos) << syms.out;
  EXPECT_NE(syms.out.find("lb_pass_enter_on_abi99"), std::string::npos) << syms.out;
  const int n = 5000;
  int own = 0, other = 0;
  for (int i = 0; i < n; ++i) own += (i ^ 5) & 3, other += (i * 3 + 1) % 7;
  const std::string want = "mixed " + std::to_string(own) + " " + std::to_string(other) + " " + std::to_string(own) + "\n";
  for (const bool preload : {true, false}) {
    SCOPED_TRACE(preload ? "under lookback record" : "linked only, no runtime");
    const std::string dir = FreshDir(preload ? "pass-mixed-abi-record" : "pass-mixed-abi-plain");
    std::vector<std::string> argv;
    if (preload) argv = {Cli(), "record", "--dir", dir + "/dumps", "--"};
    argv.push_back(Program("pass-mixed-abi"));
    argv.push_back(std::to_string(n));
    RunResult r = RunProgram(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    if (!preload) continue;
    const std::string line = "built for lookback ring ABI 99, this runtime has ABI " LOOKBACK_RING_ABI_STR(
        LOOKBACK_RING_ABI) ": tracing is off for the whole process";
    const size_t at = r.err.find(line);
    EXPECT_NE(at, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find(line, at + 1), std::string::npos) << r.err;
    // With one shared copy, one object's calls reach the other's recorder and
    // stub with misplaced arguments: the refusal above is missing, and the
    // runtime is handed a ring pointer that is not the thread's.
    EXPECT_EQ(r.err.find("cannot see lookback's thread state"), std::string::npos) << r.err;
    for (const std::string& dump : Dumps(dir + "/dumps")) {
      RunResult verify = RunProgram({Cli(), "verify", dump});
      EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
    }
  }
}

TEST(PassAbi, ThreadLocalSymbolCarriesTheAbiNumber) {
  REQUIRE_PASS_PROGRAM("pass-foreign-abi");
  REQUIRE_PASS_PROGRAM("roundtrip-pass-O2");
  RunResult foreign = RunProgram({"nm", "-D", Program("pass-foreign-abi")});
  EXPECT_NE(foreign.out.find("lb_tls_ring_abi99"), std::string::npos) << foreign.out;
  RunResult ours = RunProgram({"nm", "-D", Program("roundtrip-pass-O2")});
  EXPECT_NE(ours.out.find(LOOKBACK_RING_TLS_SYMBOL), std::string::npos) << ours.out;  // this build's number
}

TEST(Pass, ExcludesByNameNamespaceFileAndSkipsSmallFunctionsWithoutLoops) {
  REQUIRE_PASS_PROGRAM("pass-options");
  const std::string dir = FreshDir("pass-options");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", Program("pass-options")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const auto fns = EnteredFunctions(dumps[0]);
  EXPECT_EQ(fns.count("small_loop(int)"), 3u);          // a loop: kept below the size threshold
  EXPECT_EQ(fns.count("big_straight_line()"), 3u);      // over the threshold
  EXPECT_EQ(fns.count("excluded_by_name(int)"), 0u);    // -lookback-exclude=excluded_by_name
  EXPECT_EQ(fns.count("skipped_ns::inner(int)"), 0u);   // -lookback-exclude=skipped_ns::*
  EXPECT_EQ(fns.count("from_excluded_file(int)"), 0u);  // -lookback-exclude-file=*pass_options_excluded.h
  EXPECT_EQ(fns.count("tiny()"), 0u);                   // -lookback-min-instructions=40
}

// ---- shedding a function through its guard (pass_guards.cc) ----

// One thread's balanced stream as the exporters get it: "+name" / "-name"
// for the functions in `names`, and the walk's repair counts.
struct Walked {
  std::vector<std::string> calls;
  model::ThreadSummary summary;
};

class CollectingSink : public model::TraceSink {
 public:
  CollectingSink(symbolize::Symbolizer* sym, const std::set<std::string>& names) : sym_(sym), names_(names) {}
  Status Begin(const model::ExportContext&) override { return Status::Ok(); }
  void BeginThread(const format::ThreadInfo& t) override { current_ = &by_thread[t.name]; }
  void Enter(uint64_t key, int64_t, uint32_t, uint8_t) override { Add('+', key); }
  void Exit(uint64_t key, int64_t, uint32_t, uint8_t) override { Add('-', key); }
  void EndThread(const model::ThreadSummary& summary) override { current_->summary = summary; }
  Status End() override { return Status::Ok(); }
  std::map<std::string, Walked> by_thread;

 private:
  void Add(char kind, uint64_t key) {
    const std::string& name = sym_->Name(key);
    if (names_.count(name)) current_->calls.push_back(kind + name);
  }
  symbolize::Symbolizer* sym_;
  std::set<std::string> names_;
  Walked* current_ = nullptr;
};

std::map<std::string, Walked> WalkThreads(const std::string& dump) {
  const format::Dump d = MustOpen(dump);
  symbolize::Symbolizer sym(d);
  CollectingSink sink(&sym, {"victim", "leaf", "marker"});
  const model::WalkResult w = model::Walk(d, sym, model::WalkOptions{}, sink);
  EXPECT_TRUE(w.status.ok());
  return sink.by_thread;
}

std::vector<std::string> Split(const std::string& calls) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < calls.size()) {
    size_t end = calls.find(' ', pos);
    if (end == std::string::npos) end = calls.size();
    if (end > pos) out.push_back(calls.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// The sequence tests/programs/pass_guards.cc leaves in its dump: exactly the
// invocations of victim that began while it was recorded, each with its exit,
// and nothing the walk had to repair.
void ExpectExactlyTheRecordedInvocations(const std::string& dump) {
  auto threads = WalkThreads(dump);
  ASSERT_EQ(threads.size(), 2u);
  ASSERT_EQ(threads.count("guard-worker"), 1u);
  const Walked& worker = threads["guard-worker"];
  const Walked& main = threads.begin()->first == "guard-worker" ? threads.rbegin()->second : threads.begin()->second;

  const std::string recorded_x3 = "+victim +victim +victim +leaf -leaf -victim -victim -victim ";
  const std::vector<std::string> want_main = Split(
      // 1. victim(2), recorded.
      recorded_x3 +
      // 2. victim(3), shed inside victim(1): victim(0) is the first invocation not recorded.
      "+victim +victim +victim +marker -marker +leaf -leaf -victim -victim -victim " +
      // 3. victim(2), shed.
      "+leaf -leaf " +
      // 4. victim(3), recorded again inside victim(1): only victim(0) began recorded.
      "+marker -marker +victim +leaf -leaf -victim " +
      // 5. victim(1), recorded.
      "+victim +victim +leaf -leaf -victim -victim " +
      // 7. victim(2), shed, entered with tracing off, left with it on.
      "+leaf -leaf");
  EXPECT_EQ(main.calls, want_main);
  // 6. The worker was in victim(1) of victim(3) when main shed victim.
  EXPECT_EQ(worker.calls, Split(recorded_x3));
  for (const Walked* w : {&main, &worker}) {
    EXPECT_EQ(w->summary.unwound, 0u) << "an exit went missing";
    EXPECT_EQ(w->summary.unmatched_exits, 0u) << "an exit without its entry";
    EXPECT_EQ(w->summary.start_cut, 0u);
  }
}

class PassGuards : public ::testing::TestWithParam<const char*> {};

// The program sheds `victim` and records it again at fixed points of its
// recursion, and from another thread while one is inside it.
TEST_P(PassGuards, ShedFunctionStopsAtItsNextInvocationAndNestingStaysExact) {
  REQUIRE_PASS_PROGRAM(GetParam());
  const std::string dir = FreshDir(std::string("pass-guards-") + GetParam());
  RunResult r = RunProgram({Program(GetParam())}, {{"LOOKBACK_DIR", dir + "/dumps"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("linked, 0 failures"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  ExpectExactlyTheRecordedInvocations(dumps[0]);
}

INSTANTIATE_TEST_SUITE_P(Shapes, PassGuards,
                         ::testing::Values("pass-guards-O0", "pass-guards-O2", "pass-guards-full-O2"),
                         [](const auto& info) {
                           std::string n = std::string(info.param).substr(12);
                           for (auto& c : n) c = isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

// Not linked with the runtime, preloaded by `lookback record`: the weak
// references bind to the preloaded runtime, and shedding works the same.
TEST(PassGuardsRuntime, PreloadedRuntimeShedsAProgramLinkedWithoutIt) {
  REQUIRE_PASS_PROGRAM("pass-guards-unlinked");
  const std::string dir = FreshDir("pass-guards-preloaded");
  RunResult r =
      RunProgram({Cli(), "record", "--quiet", "--dir", dir + "/dumps", "--", Program("pass-guards-unlinked")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("linked, 0 failures"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  ExpectExactlyTheRecordedInvocations(dumps[0]);
}

// A dlopen'ed library registers its own guards and unregisters them at
// dlclose: afterwards the runtime has no guard for its functions (it must not
// write into an unmapped library).
TEST(PassGuardsRuntime, LibraryGuardsLiveExactlyAsLongAsTheLibrary) {
  REQUIRE_PASS_PROGRAM("pass-guards-O2");
  REQUIRE_PASS_PROGRAM("libpass_guards_plugin.so");
  const std::string dir = FreshDir("pass-guards-dlopen");
  RunResult r = RunProgram({Program("pass-guards-O2"), "dlopen", Program("libpass_guards_plugin.so")},
                           {{"LOOKBACK_DIR", dir + "/dumps"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const size_t at = r.out.find("plugin_work=");
  ASSERT_NE(at, std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shed=1 after_unload=0"), std::string::npos) << r.out;
  const uint64_t key = std::stoull(r.out.substr(at + 12), nullptr, 16);
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  size_t entries = 0, exits = 0;
  for (const auto& [tid, evs] : DumpEvents(MustOpen(dumps[0]))) {
    for (const TEvent& e : evs) {
      if (e.key == key) ++(e.exit ? exits : entries);
    }
  }
  EXPECT_EQ(entries, 2u) << "the two calls before the shed, none after";
  EXPECT_EQ(exits, 2u);
}

TEST(PassGuardsBuild, ProgramWithGuardsRunsWithoutTheRuntime) {
  REQUIRE_PASS_PROGRAM("pass-guards-unlinked");
  RunResult dyn = RunProgram({"readelf", "-d", Program("pass-guards-unlinked")});
  EXPECT_EQ(dyn.out.find("liblookback"), std::string::npos) << "the program must not need liblookback";
  RunResult nm = RunProgram({"nm", Program("pass-guards-unlinked")});
  EXPECT_NE(nm.out.find(" w lb_pass_register_guards"), std::string::npos) << "a weak reference: " << nm.out;
  const std::string dir = FreshDir("pass-guards-unlinked");
  RunResult r = RunProgram({Program("pass-guards-unlinked")}, {{"LOOKBACK_DIR", dir + "/dumps"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no runtime, 0 failures"), std::string::npos) << r.out;
  EXPECT_TRUE(Dumps(dir + "/dumps").empty());
}

TEST(PassGuardsBuild, GuardsOffOptionEmitsNoGuardTable) {
  REQUIRE_PASS_PROGRAM("pass-guards-off");
  REQUIRE_PASS_PROGRAM("pass-guards-O2");
  RunResult on = RunProgram({"readelf", "-S", "-W", Program("pass-guards-O2")});
  EXPECT_NE(on.out.find(" lookback_guards "), std::string::npos) << on.out;
  RunResult off = RunProgram({"readelf", "-S", "-W", Program("pass-guards-off")});
  EXPECT_EQ(off.out.find("lookback_guards"), std::string::npos) << off.out;
  RunResult nm = RunProgram({"nm", Program("pass-guards-off")});
  EXPECT_EQ(nm.out.find("lb_pass_register_guards"), std::string::npos) << nm.out;
  // The runtime has no guard for victim, and says so.
  const std::string dir = FreshDir("pass-guards-off");
  RunResult r = RunProgram({Program("pass-guards-off")}, {{"LOOKBACK_DIR", dir + "/dumps"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("no guard registered for victim"), std::string::npos) << r.err;
}

TEST(Pass, BadExcludePatternStopsTheCompilationWithAClearError) {
  if (std::string(LOOKBACK_PASS_PLUGIN).empty() || std::string(LOOKBACK_TEST_CLANGXX).empty()) {
    GTEST_SKIP() << "no pass plugin or clang";
  }
  const std::string dir = FreshDir("pass-bad-pattern");
  const std::string src = dir + "/t.cc";
  FILE* f = fopen(src.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("int main() { return 0; }\n", f);
  fclose(f);
  const std::string plugin = LOOKBACK_PASS_PLUGIN;
  RunResult r =
      RunProgram({LOOKBACK_TEST_CLANGXX, "-O2", "-Xclang", "-load", "-Xclang", plugin, "-fpass-plugin=" + plugin,
                  "-mllvm", "-lookback-exclude=[oops", "-c", src, "-o", dir + "/t.o"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("lookback-pass: bad pattern '[oops'"), std::string::npos) << r.err;
  EXPECT_NE(access((dir + "/t.o").c_str(), F_OK), 0) << "no object file is left behind";
}

}  // namespace
}  // namespace lookback::testing
