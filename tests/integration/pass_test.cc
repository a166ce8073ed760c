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
  EXPECT_NE(f3.find("<lb_pass_enter_on>"), std::string::npos) << f3;
  EXPECT_NE(f3.find("<lb_pass_exit_on>"), std::string::npos) << f3;
  EXPECT_NE(Disassembly("roundtrip-pass-O2", "lb_pass_enter_on").find("rdtsc"), std::string::npos);
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
  EXPECT_EQ(f3.find("<lb_pass_enter_on>"), std::string::npos) << f3;
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
