// Exact call-sequence round trip: what lookback decodes from a real
// instrumented program equals what the program logged itself doing.
#include <gtest/gtest.h>

#include <set>
#include <sys/stat.h>

#include "harness.h"

namespace lookback::testing {
namespace {

struct Variant {
  const char* program;
  int threads;
  bool linked;  // linked with liblookback instead of preloaded by `lookback record`
};

std::string Name(const ::testing::TestParamInfo<Variant>& info) {
  std::string n = std::string(info.param.program) + (info.param.threads > 1 ? "_mt" : "_st");
  for (auto& c : n) c = (isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return n;
}

class RoundTrip : public ::testing::TestWithParam<Variant> {};

TEST_P(RoundTrip, DecodedSequenceEqualsGroundTruth) {
  const Variant v = GetParam();
  const std::string prog = Program(v.program);
  struct stat st;
  if (stat(prog.c_str(), &st) != 0) GTEST_SKIP() << prog << " not built (compiler missing)";
  const std::string dir = FreshDir(std::string("roundtrip-") + Name({v, 0}));
  const std::string gt = dir + "/ground-truth.txt";
  const std::vector<std::string> args = {prog, std::to_string(v.threads), v.threads > 1 ? "300" : "600", "42", gt};
  RunResult r;
  if (v.linked) {
    r = RunProgram(args, {{"LOOKBACK_DIR", dir + "/dumps"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  } else {
    std::vector<std::string> rec = {Cli(), "record", "--dir", dir + "/dumps", "--"};
    rec.insert(rec.end(), args.begin(), args.end());
    r = RunProgram(rec);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;

  const auto truth = GroundTruth(gt);
  ASSERT_EQ(truth.size(), static_cast<size_t>(v.threads > 1 ? v.threads : 1));
  std::set<uint64_t> keys;
  for (const auto& [tid, evs] : truth) {
    for (const auto& e : evs) keys.insert(e.key);
  }
  format::Dump d = MustOpen(dumps[0]);
  auto decoded = DumpEvents(d);
  size_t compared = 0;
  for (const auto& [tid, evs] : truth) {
    ASSERT_TRUE(decoded.count(tid)) << "thread " << tid << " missing from the dump";
    std::vector<TEvent> got;
    for (const auto& e : decoded[tid]) {
      if (keys.count(e.key)) got.push_back(e);
    }
    ASSERT_EQ(got.size(), evs.size()) << "thread " << tid;
    for (size_t i = 0; i < evs.size(); ++i) {
      ASSERT_EQ(got[i], evs[i]) << "thread " << tid << " event " << i;
    }
    compared += evs.size();
  }
  EXPECT_GT(compared, 1000u);

  // The CLI decodes the same stream and names the functions.
  RunResult ev = RunProgram({Cli(), "events", dumps[0]});
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const bool c = std::string(v.program).find("-c-") != std::string::npos;
  EXPECT_NE(ev.out.find(c ? "\tf3\n" : "f3("), std::string::npos) << "symbolized names missing";
}

INSTANTIATE_TEST_SUITE_P(Compilers, RoundTrip,
                         ::testing::Values(Variant{"roundtrip-gcc-O0", 1, false}, Variant{"roundtrip-gcc-O2", 1, false},
                                           Variant{"roundtrip-clang-O0", 1, false},
                                           Variant{"roundtrip-clang-O2", 1, false},
                                           Variant{"roundtrip-gcc-O0", 4, false}, Variant{"roundtrip-gcc-O2", 4, false},
                                           Variant{"roundtrip-clang-O0", 4, false},
                                           Variant{"roundtrip-clang-O2", 4, false},
                                           Variant{"roundtrip-clang-O2-after-inlining", 4, false},
                                           Variant{"roundtrip-gcc-O2-linked", 4, true},
                                           // The clang pass front-end: inlined trace points.
                                           Variant{"roundtrip-pass-O0", 1, false},
                                           Variant{"roundtrip-pass-O2", 1, false},
                                           Variant{"roundtrip-pass-O0", 4, false},
                                           Variant{"roundtrip-pass-O2", 4, false},
                                           Variant{"roundtrip-pass-c-O0", 4, false},
                                           Variant{"roundtrip-pass-c-O2", 4, false},
                                           Variant{"roundtrip-pass-O2-linked", 4, true},
                                           Variant{"roundtrip-pass-full-O2", 4, false},
                                           Variant{"roundtrip-pass-unexported", 4, false}),
                         Name);

// LOOKBACK_EXCLUDE / `record --exclude`: the run-time filter for hook builds
// that cannot exclude at compile time (clang's -finstrument-functions). The
// dump holds exactly the ground truth minus the excluded function's calls.
TEST(RuntimeExclude, DropsExactlyTheExcludedFunctionsCalls) {
  const std::string prog = Program("roundtrip-clang-O2");
  struct stat st;
  if (stat(prog.c_str(), &st) != 0) GTEST_SKIP() << prog << " not built (compiler missing)";
  const std::string dir = FreshDir("runtime-exclude");
  const std::string gt = dir + "/ground-truth.txt";
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--exclude", "*f3*", "--exclude", "f5", "--",
                            prog, "2", "300", "11", gt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  RunResult ev = RunProgram({Cli(), "events", dumps[0]});
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_EQ(ev.out.find("f3("), std::string::npos);
  EXPECT_EQ(ev.out.find("f5("), std::string::npos);
  EXPECT_NE(ev.out.find("f4("), std::string::npos);

  // Which keys are f3 and f5: the ground truth names them by address, and the
  // CLI's symbolized events map addresses to names.
  std::set<uint64_t> excluded_keys, kept_keys;
  format::Dump d = MustOpen(dumps[0]);
  const auto truth = GroundTruth(gt);
  std::set<uint64_t> all;
  for (const auto& [tid, evs] : truth) {
    for (const auto& e : evs) all.insert(e.key);
  }
  std::set<uint64_t> in_dump;
  const auto decoded = DumpEvents(d);
  for (const auto& [tid, evs] : decoded) {
    for (const auto& e : evs) in_dump.insert(e.key);
  }
  for (uint64_t k : all) (in_dump.count(k) ? kept_keys : excluded_keys).insert(k);
  EXPECT_EQ(excluded_keys.size(), 2u);  // f3 and f5, and nothing else
  EXPECT_EQ(kept_keys.size(), 6u);
  for (const auto& [tid, evs] : truth) {
    std::vector<TEvent> want, got;
    for (const auto& e : evs) {
      if (kept_keys.count(e.key)) want.push_back(e);
    }
    ASSERT_TRUE(decoded.count(tid));
    for (const auto& e : decoded.at(tid)) {
      if (all.count(e.key)) got.push_back(e);
    }
    EXPECT_EQ(got, want) << "thread " << tid;
  }
}

TEST(RuntimeExclude, PatternMatchingNothingIsReportedAndRecordsEverything) {
  const std::string prog = Program("roundtrip-clang-O2");
  struct stat st;
  if (stat(prog.c_str(), &st) != 0) GTEST_SKIP() << prog << " not built (compiler missing)";
  const std::string dir = FreshDir("runtime-exclude-none");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--exclude", "no_such_function_*", "--", prog,
                            "1", "50", "3", dir + "/gt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("LOOKBACK_EXCLUDE: no function of the loaded modules matches"), std::string::npos) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  RunResult ev = RunProgram({Cli(), "events", dumps[0]});
  EXPECT_NE(ev.out.find("f3("), std::string::npos);
}

// A library loaded after start is resolved again by the control thread
// (about once a second): its calls are recorded until then, never after.
TEST(RuntimeExclude, ReachesALibraryLoadedAfterStart) {
  const std::string prog = Program("dlopen-exclude");
  struct stat st;
  if (stat(prog.c_str(), &st) != 0) GTEST_SKIP() << prog << " not built (compiler missing)";
  const std::string dir = FreshDir("runtime-exclude-dlopen");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--exclude", "plugin_work", "--", prog,
                            Program("libdlopen_plugin.so"), "2500"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  RunResult ev = RunProgram({Cli(), "events", dumps[0]});
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const size_t marker = ev.out.find("marker_after_wait");
  ASSERT_NE(marker, std::string::npos) << "the program's own calls are recorded";
  EXPECT_EQ(ev.out.find("plugin_work", marker), std::string::npos) << "plugin_work recorded after the re-resolution";
}

// A library the program dlcloses before its dump is named in the dump's
// notes: its calls print as addresses now (the dump lists the modules loaded
// when it is written), and a reader must know which names to doubt.
TEST(Modules, ALibraryUnloadedBeforeTheDumpIsNamedInItsNotes) {
  const std::string prog = Program("dlopen-exclude");
  struct stat st;
  if (stat(prog.c_str(), &st) != 0) GTEST_SKIP() << prog << " not built (compiler missing)";
  const std::string dir = FreshDir("modules-unloaded");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", prog, Program("libdlopen_plugin.so"), "0",
                            "close"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  const RunResult info = RunProgram({Cli(), "info", dumps[0]});
  EXPECT_NE(info.out.find("1 module(s) unloaded (dlclose) before this dump: "), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("libdlopen_plugin.so"), std::string::npos) << info.out;
  // Kept open, it is not named.
  const std::string kept = FreshDir("modules-kept");
  r = RunProgram({Cli(), "record", "--dir", kept, "--", prog, Program("libdlopen_plugin.so"), "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Dumps(kept).size(), 1u);
  EXPECT_EQ(RunProgram({Cli(), "info", Dumps(kept)[0]}).out.find("unloaded"), std::string::npos);
}

TEST(RingWrap, KeepsExactlyTheNewestRecords) {
  const std::string prog = Program("roundtrip-gcc-O2");
  const std::string dir = FreshDir("ring-wrap");
  const std::string gt = dir + "/ground-truth.txt";
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--buffer-size", "16K", "--", prog, "1", "3000", "7", gt});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  format::Dump d = MustOpen(dumps[0]);
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_TRUE(d.threads[0].flags & format::kThreadWrapped);
  EXPECT_GT(d.threads[0].lost, 0u);
  const auto truth = GroundTruth(gt).begin()->second;
  std::set<uint64_t> keys;
  for (const auto& e : truth) keys.insert(e.key);
  std::vector<TEvent> got;
  const auto decoded = DumpEvents(d);
  for (const auto& e : decoded.begin()->second) {
    if (keys.count(e.key)) got.push_back(e);
  }
  ASSERT_GT(got.size(), 1000u);  // 2048 slots, minus announcements and main's own records
  ASSERT_LT(got.size(), truth.size());
  // The window is exactly the tail of what ran.
  const std::vector<TEvent> tail(truth.end() - static_cast<ptrdiff_t>(got.size()), truth.end());
  EXPECT_EQ(got, tail);
}

}  // namespace
}  // namespace lookback::testing
