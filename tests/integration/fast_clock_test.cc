// Fast clock (LOOKBACK_CLOCK=fast, issue 18) on real instrumented programs:
// the decoded call sequence is the program's own, exactly as in exact mode;
// every event carries a bound that holds; and a call that blocks while its
// entry had no reading of its own still shows its true duration.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "harness.h"
#include "model/clock_model.h"

namespace lookback::testing {
namespace {

bool Built(const std::string& program) {
  struct stat st;
  return stat(Program(program).c_str(), &st) == 0;
}

struct FastVariant {
  const char* program;
  int threads;
  bool linked;  // linked with liblookback (LOOKBACK_CLOCK in the environment) instead of `record --clock`
};

std::string FastName(const ::testing::TestParamInfo<FastVariant>& info) {
  std::string n = std::string(info.param.program) + (info.param.threads > 1 ? "_mt" : "_st");
  for (auto& c : n) c = (isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return n;
}

// Runs `args` traced with the given clock; returns the one dump's path.
std::string RecordWith(const std::string& clock, const std::vector<std::string>& args, bool linked,
                       const std::string& dir) {
  RunResult r;
  if (linked) {
    r = RunProgram(args, {{"LOOKBACK_DIR", dir}, {"LOOKBACK_DUMP_AT_EXIT", "1"}, {"LOOKBACK_CLOCK", clock}});
  } else {
    std::vector<std::string> rec = {Cli(), "record", "-q", "--clock", clock, "--dir", dir, "--"};
    rec.insert(rec.end(), args.begin(), args.end());
    r = RunProgram(rec);
  }
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir);
  EXPECT_EQ(dumps.size(), 1u) << r.err;
  return dumps.empty() ? "" : dumps[0];
}

struct Checked {
  uint64_t events = 0, untimed = 0;
};

// Decodes every thread of `dump` and checks it against the program's ground
// truth `gt`: the calls come out in the program's own order, placed in order,
// each inside its bound, and every record decodes.
Checked CheckAgainstGroundTruth(const std::string& dump, const std::string& gt, bool fast) {
  Checked c;
  const auto truth = GroundTruth(gt);
  std::set<uint64_t> keys;
  for (const auto& [tid, evs] : truth) {
    for (const auto& e : evs) keys.insert(e.key);
  }
  const format::Dump d = MustOpen(dump);
  // A version-4 reader would take a fast ring's lower bounds for exact times.
  EXPECT_EQ(d.min_reader, fast ? format::kMinReaderVersionFastClock : format::kMinReaderVersion);
  for (const auto& t : d.threads) {
    SCOPED_TRACE("thread " + std::to_string(t.tid));
    EXPECT_EQ((t.flags & format::kThreadFastClock) != 0, fast);
    std::vector<TEvent> got;
    uint64_t last = 0, last_lo = 0;
    const model::DecodeStats st = model::DecodeThread(d, t, [&](const model::Event& e) {
      if (e.kind != model::EventKind::kEnter && e.kind != model::EventKind::kExit) return;
      ++c.events;
      c.untimed += e.lo != e.hi;
      EXPECT_LE(e.lo, e.tsc);
      EXPECT_LE(e.tsc, e.hi);
      EXPECT_GE(e.tsc, last) << "placed out of order";
      EXPECT_GE(e.lo, last_lo);
      last = e.tsc;
      last_lo = e.lo;
      if (keys.count(e.key)) got.push_back({e.kind == model::EventKind::kExit, e.key});
    });
    EXPECT_EQ(st.undecodable_prefix, 0u);
    EXPECT_EQ(st.unknown_records, 0u);
    EXPECT_EQ(st.backwards, 0u);
    if (!truth.count(t.tid)) continue;
    EXPECT_EQ(got, truth.at(t.tid)) << "the decoded calls are not the program's own";
  }
  return c;
}

class FastClockRoundTrip : public ::testing::TestWithParam<FastVariant> {};

TEST_P(FastClockRoundTrip, SequenceEqualsGroundTruthAndEveryEventLiesInItsBound) {
  const FastVariant v = GetParam();
  if (!Built(v.program)) GTEST_SKIP() << v.program << " not built (compiler missing)";
  const std::string dir = FreshDir("fastclock-roundtrip-" + FastName({v, 0}));
  for (const std::string clock : {"exact", "fast"}) {
    SCOPED_TRACE(clock);
    const std::string gt = dir + "/gt-" + clock + ".txt";
    const std::string dump = RecordWith(
        clock, {Program(v.program), std::to_string(v.threads), v.threads > 1 ? "300" : "600", "42", gt}, v.linked,
        dir + "/dumps-" + clock);
    ASSERT_FALSE(dump.empty());
    const Checked c = CheckAgainstGroundTruth(dump, gt, clock == "fast");
    if (clock == "exact") {
      EXPECT_EQ(c.untimed, 0u);
    } else {
      // Dense calls: most records carry no reading of their own (7 in 8 at
      // most); the first calls of each thread, while still sparse, do.
      EXPECT_GT(c.untimed, c.events / 2) << c.untimed << " of " << c.events << " events untimed";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Programs, FastClockRoundTrip,
                         ::testing::Values(FastVariant{"roundtrip-gcc-O2", 4, false},
                                           FastVariant{"roundtrip-clang-O0", 1, false},
                                           FastVariant{"roundtrip-gcc-O2-linked", 4, true},
                                           FastVariant{"roundtrip-pass-O2", 4, false},
                                           FastVariant{"roundtrip-pass-full-O2", 4, false},
                                           FastVariant{"roundtrip-pass-O2-linked", 4, true}),
                         FastName);

// The runtime's slow path calls functions the program may define itself
// (here clock_gettime, instrumented): those calls are lookback's, not the
// program's, and must neither be traced nor land inside a record the slow
// path is writing (which tore the sequence when a Debug runtime's std::min
// bound to the program's instrumented copy).
class RuntimeCallsIntoTheProgram : public ::testing::TestWithParam<const char*> {};

TEST_P(RuntimeCallsIntoTheProgram, AreNotTracedAndTearNoRecordInEitherClock) {
  const std::string program = GetParam();
  if (!Built(program)) GTEST_SKIP() << program << " not built (compiler missing)";
  const std::string dir = FreshDir("interposer-" + program);
  for (const std::string clock : {"exact", "fast"}) {
    SCOPED_TRACE(clock);
    const std::string gt = dir + "/gt-" + clock + ".txt";
    const std::string dump =
        RecordWith(clock, {Program(program), "3", "400", "7", gt}, true, dir + "/dumps-" + clock);
    ASSERT_FALSE(dump.empty());
    const Checked c = CheckAgainstGroundTruth(dump, gt, clock == "fast");
    EXPECT_GT(c.events, 3u * 400u * 2u);
    RunResult ev = RunProgram({Cli(), "events", dump});
    ASSERT_EQ(ev.exit_code, 0) << ev.err;
    EXPECT_EQ(ev.out.find("clock_gettime"), std::string::npos) << "the program never calls it itself";
    if (clock == "fast") {
      RunResult info = RunProgram({Cli(), "info", dump});
      // The sleeps were accounted, through the interposed clock_gettime.
      EXPECT_EQ(info.out.find(" 0 deschedules accounted"), std::string::npos) << info.out;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FrontEnds, RuntimeCallsIntoTheProgram, ::testing::Values("interposer", "interposer-pass"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// What the blocking program measured itself, in call order: each call's
// duration and the thread's CPU time over its round.
struct Measure {
  int64_t ns = 0, cpu_ns = 0;
};
std::vector<Measure> Measured(const std::string& path) {
  std::vector<Measure> out;
  std::ifstream f(path);
  std::string word;
  Measure m;
  while (f >> word >> m.ns >> m.cpu_ns) out.push_back(m);
  return out;
}

struct Call {
  model::Event entry, exit;
};

// The calls of the function named `name` (from `lookback events`), decoded
// with `mode` (the dump's own unless overridden).
std::vector<Call> CallsOf(const std::string& dump, const std::string& name, bool ignore_off_cpu) {
  RunResult ev = RunProgram({Cli(), "events", dump});
  EXPECT_EQ(ev.exit_code, 0) << ev.err;
  uint64_t key = 0;
  std::istringstream lines(ev.out);
  for (std::string line; std::getline(lines, line) && key == 0;) {
    std::vector<std::string> f;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, '\t');) f.push_back(cell);
    if (f.size() >= 5 && f[4] == name) key = std::stoull(f[3], nullptr, 16);
  }
  EXPECT_NE(key, 0u) << name << " not in the dump";
  const format::Dump d = MustOpen(dump);
  std::vector<Call> calls;
  for (const auto& t : d.threads) {
    model::ClockMode mode = model::ClockModeOf(d, t);
    if (ignore_off_cpu) mode.ticks_per_ns = 0;
    model::Event open{};
    bool in = false;
    model::DecodeRecords(t.record_count, d.layout(), mode, [&](uint64_t i) { return d.Record(t, i); },
                         [&](const model::Event& e) {
                           if (e.key != key) return;
                           if (e.kind == model::EventKind::kEnter) {
                             open = e;
                             in = true;
                           } else if (e.kind == model::EventKind::kExit && in) {
                             calls.push_back({open, e});
                             in = false;
                           }
                         });
  }
  return calls;
}

class FastClockBlocking : public ::testing::TestWithParam<const char*> {};

// The guarantee: a call that blocks 100 ms while its entry carried no
// reading shows a duration within 1 ms of what the program measured inside
// it; and the duration's bound contains the truth. The time off CPU is the
// monotonic clock's time less the thread's CPU clock's since the last
// reading, so it is as right as that CPU clock: on a VM whose host takes
// the CPU while the thread is current (steal), the kernel may count the
// stolen time as the thread's own, and the call then shows shorter by as
// much (1.18 ms once, on a 2-core guest under the suite's load, where the
// round's CPU time is normally under 0.2 ms). So the 1 ms is widened by
// the CPU time the thread's clock counted over the round.
TEST_P(FastClockBlocking, BlockedCallShowsItsDurationWithinAMillisecond) {
  const std::string program = GetParam();
  if (!Built(program)) GTEST_SKIP() << program << " not built (compiler missing)";
  const std::string dir = FreshDir("fastclock-blocking-" + program);
  const std::string out = dir + "/measured.txt";
  const std::string dump = RecordWith("fast", {Program(program), out, "100"}, false, dir + "/dumps");
  ASSERT_FALSE(dump.empty());
  const std::vector<Measure> measured = Measured(out);
  ASSERT_EQ(measured.size(), 16u);
  const format::Dump d = MustOpen(dump);
  const model::ClockModel clock(d.clock);
  const std::vector<Call> calls = CallsOf(dump, "sleeper", false);
  ASSERT_EQ(calls.size(), measured.size());
  int untimed_entries = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    SCOPED_TRACE("call " + std::to_string(i));
    const Call& c = calls[i];
    untimed_entries += c.entry.lo != c.entry.hi;
    const double shown = clock.TicksToNs(c.exit.tsc - c.entry.tsc);
    const double truth = static_cast<double>(measured[i].ns);
    const double cpu = static_cast<double>(measured[i].cpu_ns);
    EXPECT_GE(truth, 100e6);
    EXPECT_LT(std::fabs(shown - truth), 1e6 + cpu)
        << "shown " << shown << " ns, measured " << truth << " ns, the round's CPU time " << cpu << " ns";
    // The bound holds: the traced call contains the measured interval.
    EXPECT_GE(clock.TicksToNs(c.exit.hi - c.entry.lo) + 1000, truth);
  }
  // The case the guarantee is about happened: entries with no reading of
  // their own (14 of 16 positions in a group of 8 carry none).
  EXPECT_GE(untimed_entries, 8);

  // And it is the deschedule accounting (OFFCPU) that keeps them right:
  // bounded only by the reading after the sleep, they would be smeared.
  const std::vector<Call> smeared = CallsOf(dump, "sleeper", true);
  ASSERT_EQ(smeared.size(), measured.size());
  double worst = 0;
  for (size_t i = 0; i < smeared.size(); ++i) {
    worst = std::max(worst, std::fabs(clock.TicksToNs(smeared[i].exit.tsc - smeared[i].entry.tsc) -
                                      static_cast<double>(measured[i].ns)));
  }
  EXPECT_GT(worst, 10e6) << "without OFFCPU an untimed entry's bound spans the sleep";
}

INSTANTIATE_TEST_SUITE_P(FrontEnds, FastClockBlocking, ::testing::Values("blocking", "blocking-pass"));

}  // namespace
}  // namespace lookback::testing
