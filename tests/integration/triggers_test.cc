// Just-in-time triggers on a real program (tests/programs/triggers.cc):
// stalls, slow scopes, slow calls and crashes write a dump while (or right
// after) things go wrong; rate limits, cooldowns, retention, windows and
// post-trigger delays shape what is written; a config file and `lookback
// record` flags set the same things as the environment.
//
// Timing margins are generous for a noisy 2-core VM: thresholds of 50-100 ms
// against stalls and slow spans of 150-300 ms, steady work of ~0.5 ms.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <iostream>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <set>

#include "harness.h"
#include "model/clock_model.h"
#include "model/decoder.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

constexpr uint64_t kMs = 1000000;

struct Outcome {
  RunResult run;
  std::string dir;                 // the test's directory (cwd of the program)
  std::vector<std::string> dumps;  // sorted by sequence number
};

// "<prog>-<pid>-<seq>.lbk" -> seq (0 if the name has another shape).
uint32_t SeqOf(const std::string& path) {
  const size_t dot = path.rfind(".lbk"), dash = path.rfind('-', dot);
  if (dot == std::string::npos || dash == std::string::npos) return 0;
  return static_cast<uint32_t>(strtoul(path.c_str() + dash + 1, nullptr, 10));
}

std::vector<std::string> SortedDumps(const std::string& dir) {
  std::vector<std::string> d = Dumps(dir);
  std::sort(d.begin(), d.end(), [](const auto& a, const auto& b) { return SeqOf(a) < SeqOf(b); });
  return d;
}

// Runs the triggers program (linked with liblookback) with dumps going to
// DIR/dumps. No exit dump unless the test asks for one: every dump is a trigger's.
Outcome RunTriggers(const std::string& test, const std::vector<std::string>& args, std::map<std::string, std::string> env = {},
            int timeout_s = 60) {
  Outcome o;
  o.dir = FreshDir(test);
  env.emplace("LOOKBACK_DIR", o.dir + "/dumps");
  env.emplace("LOOKBACK_DUMP_AT_EXIT", "0");
  std::vector<std::string> argv = {Program("triggers")};
  argv.insert(argv.end(), args.begin(), args.end());
  o.run = RunProgram(argv, env, o.dir, timeout_s);
  o.dumps = SortedDumps(o.dir + "/dumps");
  return o;
}

// Number after "key=" in a program's output (-1 if absent).
long long ValueOf(const std::string& out, const std::string& key) {
  const size_t at = out.find(key + "=");
  if (at == std::string::npos) return -1;
  return strtoll(out.c_str() + at + key.size() + 1, nullptr, 10);
}

// Defined below: requests merged into one dump count in its TRIGGER section.
void ExpectEveryRequestAnswered(const std::vector<std::string>& dumps, uint64_t requests);

// "(anonymous namespace)::parse_request(int) [clone .x]" -> "parse_request".
std::string BaseName(std::string n) {
  if (size_t c = n.find(" [clone"); c != std::string::npos) n.resize(c);
  if (!n.empty() && n.back() == ')') {
    int depth = 0;
    for (size_t i = n.size(); i-- > 0;) {
      if (n[i] == ')') ++depth;
      if (n[i] == '(' && --depth == 0) {
        n.resize(i);
        break;
      }
    }
  }
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i + 1 < n.size(); ++i) {
    if (n[i] == '(' || n[i] == '<') ++depth;
    if (n[i] == ')' || n[i] == '>') --depth;
    if (depth == 0 && n[i] == ':' && n[i + 1] == ':') start = i + 2;
  }
  return n.substr(start);
}

// A matched call (or scope) of one thread's window, times in ns from the snapshot.
struct Call {
  std::string name;  // BaseName of the symbol: "frame", "stuck_in_here", "parse_request"
  uint32_t depth;
  uint8_t flags;            // model::FrameFlag
  double start_ns, end_ns;  // relative to the thread's snapshot: <= 0 (open calls end at 0)
  double duration_ns() const { return end_ns - start_ns; }
  bool open() const { return flags & model::kFrameOpen; }
};

uint64_t SnapshotTsc(const format::Dump& d, const format::ThreadInfo& t) {
  return t.snapshot_tsc ? t.snapshot_tsc : d.process.dump_tsc;
}

std::vector<Call> Calls(const format::Dump& d, const format::ThreadInfo& t) {
  symbolize::Symbolizer sym(d);
  const model::ClockModel clock(d.clock);
  const uint64_t snap = SnapshotTsc(d, t);
  auto rel = [&](uint64_t tsc) {
    return tsc >= snap ? clock.TicksToNs(tsc - snap) : -clock.TicksToNs(snap - tsc);
  };
  model::CallMatcher m(&symbolize::Symbolizer::FunctionOf, &sym);
  std::vector<Call> out;
  auto emit = [&](const model::Frame& f) {
    out.push_back({BaseName(sym.Name(f.key)), f.depth, f.flags, rel(f.start_tsc), rel(f.end_tsc)});
  };
  model::DecodeThread(d, t, [&](const model::Event& e) { m.OnEvent(e, emit); });
  m.Finish(snap, emit);
  return out;
}

std::vector<Call> Named(const std::vector<Call>& calls, const std::string& name) {
  std::vector<Call> out;
  for (const auto& c : calls)
    if (c.name == name) out.push_back(c);
  return out;
}

const format::ThreadInfo* ThreadById(const format::Dump& d, uint32_t tid) {
  for (const auto& t : d.threads)
    if (t.tid == tid) return &t;
  return nullptr;
}

double TicksToMs(const format::Dump& d, uint64_t ticks) { return model::ClockModel(d.clock).TicksToNs(ticks) / 1e6; }

// The calls still open at the snapshot, outermost first.
std::vector<std::string> OpenStack(const std::vector<Call>& calls) {
  std::vector<Call> open;
  for (const auto& c : calls)
    if (c.open()) open.push_back(c);
  std::sort(open.begin(), open.end(), [](const Call& a, const Call& b) { return a.depth < b.depth; });
  std::vector<std::string> names;
  for (const auto& c : open) names.push_back(c.name);
  return names;
}

// True if `needle` appears in `stack` in this order (not necessarily adjacent).
bool InOrder(const std::vector<std::string>& stack, const std::vector<std::string>& needle) {
  size_t k = 0;
  for (const auto& s : stack)
    if (k < needle.size() && s == needle[k]) ++k;
  return k == needle.size();
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " > ") + x;
  return s;
}

// ---- stalls ----------------------------------------------------------------

TEST(Stall, FiresWhileTheUiThreadIsStuckAndShowsWhereItIs) {
  // Also: an equally long idle gap outside any scope does not count (cooldown 0:
  // it would be a second dump).
  Outcome o = RunTriggers("stall", {"stall", "300"}, {{"LOOKBACK_STALL", "ui:100ms"}, {"LOOKBACK_COOLDOWN", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "stall");
  EXPECT_EQ(d.trigger->subject, "ui");
  EXPECT_EQ(d.trigger->threshold_ns, 100 * kMs);
  EXPECT_GE(d.trigger->measured_ns, d.trigger->threshold_ns);
  EXPECT_LT(d.trigger->measured_ns, 300 * kMs) << "the stall lasts 300 ms: the dump must come while it goes on";
  EXPECT_FALSE(d.process.reason.empty());
  const format::ThreadInfo* ui = FindThread(d, "ui");
  ASSERT_NE(ui, nullptr);
  EXPECT_EQ(d.trigger->tid, ui->tid);
  const auto calls = Calls(d, *ui);
  const auto stuck = Named(calls, "stuck_in_here");
  ASSERT_EQ(stuck.size(), 1u);
  EXPECT_TRUE(stuck[0].open()) << "stuck_in_here should still be running at the snapshot";
  EXPECT_GE(-stuck[0].start_ns, 100e6) << "stuck for at least the threshold at the snapshot";
  const auto stack = OpenStack(calls);
  EXPECT_TRUE(InOrder(stack, {"frame", "run_frame", "render", "fetch_over_ipc", "stuck_in_here"})) << Join(stack);
  EXPECT_GE(Named(calls, "frame").size(), 11u) << "the steady frames before it are in the window";
}

TEST(Stall, SteadyFramesWriteNoDump) {
  // The exit dump shows the program ran traced; it must be the only dump.
  Outcome o = RunTriggers("stall-steady", {"steady", "1500"},
                  {{"LOOKBACK_STALL", "ui:100ms"}, {"LOOKBACK_COOLDOWN", "0"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "exit");
  const format::ThreadInfo* ui = FindThread(d, "ui");
  ASSERT_NE(ui, nullptr);
  // It ran traced frames the whole time (how many depends on how the 4 ms
  // sleeps between them stretch on a loaded machine: ~300 unloaded, 100 seen
  // with both cores busy).
  EXPECT_GT(Named(Calls(d, *ui), "frame").size(), 20u);
}

// A stall the dump itself proves: the stalled thread's last trace point lies
// at least (nearly) the threshold before the snapshot. On a loaded machine a
// 4 ms sleep of the program can stretch past a 100 ms threshold (a soak run
// saw 101 ms in wait_for_vsync between steady frames): a real stall, which
// the detector is right to report. Tests that count dumps allow those, and
// only those.
bool ProvenStall(const format::Dump& d, double threshold_ns) {
  if (!d.trigger.has_value() || d.trigger->detector != "stall") return false;
  const format::ThreadInfo* t = ThreadById(d, d.trigger->tid);
  if (t == nullptr) return false;
  double last = -1e18;
  for (const Call& c : Calls(d, *t)) last = std::max(last, c.open() ? c.start_ns : c.end_ns);
  return last <= -0.9 * threshold_ns;  // (0.9: the fast clock's bounds)
}

TEST(Stall, ThreadsWithoutScopesAreIdleInStallIdleFunctions) {
  const std::map<std::string, std::string> env = {{"LOOKBACK_STALL", "ui:100ms"}, {"LOOKBACK_COOLDOWN", "0"}};
  auto innermost = [](const format::Dump& d) {
    const format::ThreadInfo* ui = FindThread(d, "ui");
    const auto stack = ui ? OpenStack(Calls(d, *ui)) : std::vector<std::string>{};
    return stack.empty() ? std::string() : stack.back();
  };
  // Without an idle function, the long wait in wait_for_vsync() is a stall
  // too: a dump in it, then one in stuck_in_here.
  Outcome all = RunTriggers("stall-noscope-all", {"stall-noscope", "300"}, env);
  ASSERT_EQ(all.run.exit_code, 0) << all.run.err;
  ASSERT_GE(all.dumps.size(), 2u) << all.run.err;
  size_t in_vsync = 0;
  for (size_t i = 0; i < all.dumps.size(); ++i) {
    SCOPED_TRACE(all.dumps[i]);
    const format::Dump d = MustOpen(all.dumps[i]);
    EXPECT_TRUE(ProvenStall(d, 100 * kMs));
    if (i + 1 == all.dumps.size()) {
      EXPECT_EQ(innermost(d), "stuck_in_here");
    } else {
      EXPECT_EQ(innermost(d), "wait_for_vsync");  // the 300 ms wait, or a 4 ms one the load stretched
      ++in_vsync;
    }
  }
  EXPECT_GE(in_vsync, 1u);
  // With it, only the real stall (and any other the load made, outside wait_for_vsync).
  auto idle_env = env;
  idle_env["LOOKBACK_STALL_IDLE"] = "wait_for_vsync";
  Outcome o = RunTriggers("stall-noscope", {"stall-noscope", "300"}, idle_env);
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  size_t stuck = 0;
  for (const std::string& path : o.dumps) {
    SCOPED_TRACE(path);
    const format::Dump d = MustOpen(path);
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->detector, "stall");
    EXPECT_NE(innermost(d), "wait_for_vsync");
    if (innermost(d) != "stuck_in_here") {
      EXPECT_TRUE(ProvenStall(d, 100 * kMs));
      continue;
    }
    ++stuck;
    const format::ThreadInfo* ui = FindThread(d, "ui");
    ASSERT_NE(ui, nullptr);
    EXPECT_EQ(d.trigger->tid, ui->tid);
    const auto stack = OpenStack(Calls(d, *ui));
    EXPECT_TRUE(InOrder(stack, {"run_frame", "render", "fetch_over_ipc", "stuck_in_here"})) << Join(stack);
  }
  EXPECT_EQ(stuck, 1u) << o.run.err;
}

// ---- slow scopes -----------------------------------------------------------

TEST(SlowScope, ALongFrameIsDumpedWithTheFrameInIt) {
  Outcome o = RunTriggers("slow-scope", {"slow-scope", "300"}, {{"LOOKBACK_SLOW_SCOPE", "frame:50ms"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "slow-scope");
  EXPECT_EQ(d.trigger->subject, "frame");
  EXPECT_EQ(d.trigger->threshold_ns, 50 * kMs);
  EXPECT_GE(d.trigger->measured_ns, 50 * kMs);
  const format::ThreadInfo* ui = FindThread(d, "ui");
  ASSERT_NE(ui, nullptr);
  EXPECT_EQ(d.trigger->tid, ui->tid);
  const auto calls = Calls(d, *ui);
  int slow_frames = 0;
  for (const auto& c : Named(calls, "frame")) slow_frames += c.duration_ns() >= 50e6;
  EXPECT_EQ(slow_frames, 1) << "the offending frame, open or closed, lasting at least the threshold";
  EXPECT_EQ(Named(calls, "slow_layout").size(), 1u);
  EXPECT_GE(Named(calls, "frame").size(), 11u);
}

TEST(SlowScope, FastFramesWriteNoDump) {
  Outcome o = RunTriggers("slow-scope-steady", {"steady", "1500"},
                  {{"LOOKBACK_SLOW_SCOPE", "frame:50ms"}, {"LOOKBACK_COOLDOWN", "0"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "exit");
}

// ---- slow calls ------------------------------------------------------------

TEST(SlowCall, ASlowCallOfAFunctionInAnAnonymousNamespaceIsDumped) {
  Outcome o = RunTriggers("slow-call", {"slow-call", "300"}, {{"LOOKBACK_SLOW_CALL", "parse_request:50ms"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "slow-call");
  EXPECT_NE(d.trigger->subject.find("parse_request"), std::string::npos) << d.trigger->subject;
  EXPECT_EQ(d.trigger->threshold_ns, 50 * kMs);
  EXPECT_GE(d.trigger->measured_ns, 50 * kMs);
  EXPECT_EQ(d.trigger->tid, d.process.pid) << "the main thread made the call";
  const format::ThreadInfo* main = ThreadById(d, d.trigger->tid);
  ASSERT_NE(main, nullptr);
  const auto calls = Named(Calls(d, *main), "parse_request");
  EXPECT_GE(calls.size(), 100u);
  int slow = 0;
  for (const auto& c : calls) slow += c.duration_ns() >= 50e6;
  EXPECT_EQ(slow, 1);
}

TEST(SlowCall, FastCallsWriteNoDump) {
  Outcome o = RunTriggers("slow-call-steady", {"slow-call", "0"},
                  {{"LOOKBACK_SLOW_CALL", "parse_request:50ms"}, {"LOOKBACK_COOLDOWN", "0"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "exit");
  ASSERT_FALSE(d.threads.empty());
  EXPECT_GE(Named(Calls(d, d.threads[0]), "parse_request").size(), 300u);
}

// ---- crashes ---------------------------------------------------------------

struct CrashCase {
  const char* kind;
  int signal;       // expected
  int alt_signal;   // also acceptable (bus-or-segv), 0 if none
};

class Crash : public ::testing::TestWithParam<CrashCase> {};

// In the sanitizer build, ASan would take these signals before lookback's
// handler and turn them into its own report and exit status.
const std::pair<const char*, const char*> kLetSignalsThrough = {
    "ASAN_OPTIONS",
    "verify_asan_link_order=0:detect_leaks=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0"};

TEST_P(Crash, DumpsTheCrashingThreadAndKeepsTheExitStatus) {
  const CrashCase c = GetParam();
  const std::string name = std::string("crash-") + c.kind;
  // Without crash capture: the program's own fate.
  Outcome plain = RunTriggers(name + "-plain", {"crash", c.kind}, {{"LOOKBACK_CRASH", "0"}, kLetSignalsThrough}, 30);
  const int sig = plain.run.exit_code - 128;
  ASSERT_TRUE(sig == c.signal || (c.alt_signal && sig == c.alt_signal))
      << "exit code " << plain.run.exit_code << "\n" << plain.run.err;
  EXPECT_TRUE(plain.dumps.empty()) << "LOOKBACK_CRASH=0 must not dump";

  Outcome o = RunTriggers(name, {"crash", c.kind}, {kLetSignalsThrough}, 30);
  EXPECT_EQ(o.run.exit_code, plain.run.exit_code) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
  EXPECT_EQ(static_cast<int>(d.trigger->signal), sig);
  EXPECT_FALSE(d.process.reason.empty());
  // abort() sends itself SIGABRT: no fault address (si_addr would be its pid).
  const bool sent = std::string(c.kind) == "abort";
  EXPECT_EQ(d.trigger->subject.find("raised by the program itself") != std::string::npos, sent) << d.trigger->subject;
  EXPECT_EQ(d.trigger->subject.find(" at address 0x") != std::string::npos, !sent) << d.trigger->subject;
  const format::ThreadInfo* crasher = FindThread(d, "crasher");
  ASSERT_NE(crasher, nullptr);
  EXPECT_EQ(d.trigger->tid, crasher->tid);
  const auto calls = Calls(d, *crasher);
  const auto here = Named(calls, "crash_here");
  ASSERT_EQ(here.size(), 1u);
  EXPECT_TRUE(here[0].open()) << "crash_here never returned";
  const auto stack = OpenStack(calls);
  EXPECT_TRUE(InOrder(stack, {"crash_outer", "crash_middle", "crash_here"})) << Join(stack);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Crash,
                         ::testing::Values(CrashCase{"segv", SIGSEGV, 0}, CrashCase{"abort", SIGABRT, 0},
                                           CrashCase{"fpe", SIGFPE, 0}, CrashCase{"ill", SIGILL, 0},
                                           CrashCase{"bus-or-segv", SIGBUS, SIGSEGV}),
                         [](const auto& info) {
                           std::string n = info.param.kind;
                           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
                           return n;
                         });

// A program that installs its own SIGSEGV handler after lookback started
// (crash.cc: its handler runs first; lookback dumps when it ends the process).
struct OwnHandlerCase {
  const char* how;
  int exit_code;  // 128 + signal, or the status it exits with
};

class CrashOwnHandler : public ::testing::TestWithParam<OwnHandlerCase> {};

TEST_P(CrashOwnHandler, TheProgramsHandlerRunsAndItsCrashIsStillDumped) {
  const OwnHandlerCase c = GetParam();
  Outcome o = RunTriggers(std::string("own-handler-") + c.how, {"own-handler", c.how}, {kLetSignalsThrough}, 30);
  EXPECT_EQ(o.run.exit_code, c.exit_code) << o.run.err;
  EXPECT_NE(o.run.err.find("handler ran"), std::string::npos) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
  const format::ThreadInfo* crasher = FindThread(d, "crasher");
  ASSERT_NE(crasher, nullptr);
  EXPECT_EQ(d.trigger->tid, crasher->tid);
  // The crash is the SIGSEGV whose handler ran, however that handler ended
  // the process (abort() raises SIGABRT from inside it).
  EXPECT_EQ(d.trigger->signal, static_cast<uint32_t>(SIGSEGV)) << d.trigger->subject;
  EXPECT_EQ(d.trigger->subject.find("then raised") != std::string::npos, std::string(c.how) == "abort")
      << d.trigger->subject;
  const auto stack = OpenStack(Calls(d, *crasher));
  EXPECT_TRUE(InOrder(stack, {"crash_outer", "crash_middle", "crash_here"})) << Join(stack);
}

INSTANTIATE_TEST_SUITE_P(How, CrashOwnHandler,
                         ::testing::Values(OwnHandlerCase{"abort", 128 + SIGABRT},
                                           OwnHandlerCase{"reraise", 128 + SIGSEGV}, OwnHandlerCase{"exit", 3}),
                         [](const auto& info) { return std::string(info.param.how); });

TEST(CrashOwnHandler, AHandlerThatRecoversGetsNoDumpAndTheProgramRunsOn) {
  Outcome o = RunTriggers("own-handler-recover", {"own-handler", "recover"}, {kLetSignalsThrough}, 30);
  EXPECT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.err.find("handler ran"), std::string::npos) << o.run.err;
  EXPECT_NE(o.run.out.find("recovered"), std::string::npos) << o.run.out;
  EXPECT_TRUE(o.dumps.empty()) << "a fault the program handles is not a crash";
}

TEST(CrashOwnHandler, SigactionGivesTheProgramBackItsOwnHandler) {
  Outcome o = RunTriggers("own-handler-query", {"own-handler", "query"}, {kLetSignalsThrough}, 30);
  EXPECT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.out.find("query ok"), std::string::npos) << o.run.out << o.run.err;
}

// lookback gives each traced thread an alternate signal stack, so a stack
// overflow, whose handler cannot run on the exhausted stack, is dumped too.
TEST(CrashStackOverflow, IsDumpedWithTheRecursionInIt) {
  if (LOOKBACK_TEST_SANITIZED) GTEST_SKIP() << "ASan reports stack overflows itself";
  Outcome o = RunTriggers("stack-overflow", {"stack-overflow"}, {kLetSignalsThrough}, 60);
  EXPECT_EQ(o.run.exit_code, 128 + SIGSEGV) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
  EXPECT_EQ(static_cast<int>(d.trigger->signal), SIGSEGV);
  const format::ThreadInfo* crasher = FindThread(d, "crasher");
  ASSERT_NE(crasher, nullptr);
  EXPECT_GE(Named(Calls(d, *crasher), "recurse_forever").size(), 1000u);
}

TEST(CrashRepeated, AHundredSegfaultsLeaveAHundredCrashDumps) {
  const std::string dir = FreshDir("crash-100");
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    RunResult r = RunProgram({Program("triggers"), "crash", "segv"},
                             {{"LOOKBACK_DIR", dir + "/dumps"},
                              {"LOOKBACK_DUMP_AT_EXIT", "0"},
                              {"LOOKBACK_BUFFER_SIZE", "256K"},
                              {"LOOKBACK_MAX_DUMPS", "1000"},
                              kLetSignalsThrough},
                             dir, 10);
    ASSERT_EQ(r.exit_code, 128 + SIGSEGV) << "run " << i << "\n" << r.err;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 100u);
  std::set<uint32_t> pids;
  for (const auto& p : dumps) {
    format::Dump d = MustOpen(p);
    ASSERT_TRUE(d.trigger.has_value()) << p;
    EXPECT_EQ(d.trigger->detector, "crash") << p;
    EXPECT_EQ(d.trigger->signal, static_cast<uint32_t>(SIGSEGV)) << p;
    pids.insert(d.process.pid);
  }
  EXPECT_EQ(pids.size(), 100u);
  RecordProperty("seconds", std::to_string(s));
}

// ---- rate limits, cooldowns, retention ------------------------------------

// 40 scopes of 30 ms against a 5 ms objective: 40 triggers in ~1.25 s.
TEST(RateLimit, AStormOfSlowScopesWritesOnlyTheAllowedNumberOfDumps) {
  Outcome o = RunTriggers("rate-limit", {"storm", "40"},
                  {{"LOOKBACK_SLOW_SCOPE", "frame:5ms"}, {"LOOKBACK_RATE_LIMIT", "3"}, {"LOOKBACK_COOLDOWN", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 3u) << o.run.err;
  for (const auto& p : o.dumps) {
    format::Dump d = MustOpen(p);
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->detector, "slow-scope");
  }
}

TEST(RateLimit, PerDetectorEntriesLimitThatDetectorOnly) {
  Outcome o = RunTriggers("rate-limit-entry", {"storm", "40"},
                  {{"LOOKBACK_SLOW_SCOPE", "frame:5ms"}, {"LOOKBACK_RATE_LIMIT", "stall=1,slow-scope=2"},
                   {"LOOKBACK_COOLDOWN", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_EQ(o.dumps.size(), 2u) << o.run.err;
  // Explicit dumps stay unlimited by default, whatever the other detectors' limits.
  Outcome e = RunTriggers("rate-limit-explicit", {"explicit-storm", "20"}, {{"LOOKBACK_RATE_LIMIT", "1"}});
  ASSERT_EQ(e.run.exit_code, 0) << e.run.err;
  EXPECT_EQ(ValueOf(e.run.out, "queued"), 20) << e.run.out;
  ExpectEveryRequestAnswered(e.dumps, 20);
}

TEST(Cooldown, SpacesTheDumpsOfOneDetector) {
  Outcome o = RunTriggers("cooldown", {"storm", "40"},
                  {{"LOOKBACK_SLOW_SCOPE", "frame:5ms"}, {"LOOKBACK_RATE_LIMIT", "0"}, {"LOOKBACK_COOLDOWN", "200ms"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  const long long elapsed = ValueOf(o.run.out, "elapsed_ms");
  ASSERT_GT(elapsed, 1000) << o.run.out;
  // At most one per 200 ms; at least one per 400 ms (a scope starts every 31 ms,
  // and a dump is fast), whatever the machine's noise.
  const size_t n = o.dumps.size();
  EXPECT_LE(n, static_cast<size_t>(elapsed / 200 + 1)) << o.run.err;
  EXPECT_GE(n, static_cast<size_t>(std::max(2LL, elapsed / 400))) << o.run.err;
  std::optional<uint64_t> prev;
  uint64_t suppressed = 0;
  for (const auto& p : o.dumps) {
    format::Dump d = MustOpen(p);
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->detector, "slow-scope");
    if (prev) {
      ASSERT_GT(d.trigger->tsc, *prev);
      EXPECT_GE(TicksToMs(d, d.trigger->tsc - *prev), 195) << p;
    }
    prev = d.trigger->tsc;
    suppressed += d.trigger->suppressed;
  }
  EXPECT_GT(suppressed, 0u) << "scopes slower than the objective during a cooldown are counted as suppressed";
}

TEST(Retention, KeepsOnlyTheNewestDumps) {
  Outcome o = RunTriggers("max-dumps", {"explicit-storm", "30"}, {{"LOOKBACK_MAX_DUMPS", "5"}, {"LOOKBACK_BUFFER_SIZE", "64K"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(ValueOf(o.run.out, "queued"), 30) << o.run.out;
  std::set<uint32_t> seqs;
  for (const auto& p : o.dumps) seqs.insert(SeqOf(p));
  EXPECT_EQ(seqs, (std::set<uint32_t>{26, 27, 28, 29, 30}));
  EXPECT_EQ(ListFiles(o.dir + "/dumps").size(), 5u) << "no temporary or other files left";
}

TEST(Retention, KeepsTheNewestDumpsThatFitTheByteLimit) {
  // With a 64 KiB ring (8192 records) and ~2000 records between dumps, the
  // ring is full from the 5th dump on: dumps 5..12 are all about one size.
  const std::map<std::string, std::string> env = {{"LOOKBACK_BUFFER_SIZE", "64K"}};
  Outcome cal = RunTriggers("max-bytes-calibrate", {"explicit-storm", "12"}, env);
  ASSERT_EQ(cal.run.exit_code, 0) << cal.run.err;
  ASSERT_EQ(cal.dumps.size(), 12u);
  off_t size = 0;
  for (size_t i = 6; i < cal.dumps.size(); ++i) {
    struct stat st;
    ASSERT_EQ(stat(cal.dumps[i].c_str(), &st), 0);
    size = std::max(size, st.st_size);
  }
  ASSERT_GT(size, 64 * 1024 * 3 / 4);
  const off_t limit = 3 * size + size / 2;
  auto limited = env;
  limited["LOOKBACK_MAX_DUMP_BYTES"] = std::to_string(limit);
  Outcome o = RunTriggers("max-bytes", {"explicit-storm", "12"}, limited);
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  std::set<uint32_t> seqs;
  off_t total = 0;
  for (const auto& p : o.dumps) {
    seqs.insert(SeqOf(p));
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    total += st.st_size;
  }
  EXPECT_LE(total, limit);
  // The newest dumps are kept: unloaded, exactly 10, 11 and 12. On a loaded
  // machine requests merge (fewer dumps of other sizes, and a small early
  // one can fit beside the newest), so then: at least two are kept, within
  // the limit.
  ASSERT_FALSE(seqs.empty());
  const uint32_t newest = *seqs.rbegin();
  EXPECT_GE(seqs.size(), 2u);
  if (o.dumps.size() == 3 && newest == 12) {
    EXPECT_EQ(seqs, (std::set<uint32_t>{10, 11, 12}));
  }
}

// ---- what a dump holds: window and post-trigger delay -----------------------

// Oldest event of all threads, in ms before each thread's snapshot. A
// trimmed window starts with the entries of the frames still open at the cut,
// with their own (older) times, so that it still says where each thread was:
// with `exits_only`, those are left out of the measure.
double OldestEventMs(const format::Dump& d, uint64_t* events, bool exits_only = false) {
  const model::ClockModel clock(d.clock);
  double oldest = 0;
  *events = 0;
  for (const auto& t : d.threads) {
    const uint64_t snap = SnapshotTsc(d, t);
    model::DecodeThread(d, t, [&](const model::Event& e) {
      if (e.kind != model::EventKind::kEnter && e.kind != model::EventKind::kExit) return;
      ++*events;
      if (exits_only && e.kind != model::EventKind::kExit) return;
      if (e.tsc < snap) oldest = std::max(oldest, clock.TicksToNs(snap - e.tsc) / 1e6);
    });
  }
  return oldest;
}

// `requests` explicit dump requests: each dump answers itself plus the
// triggers merged into it (TRIGGER's count), and together they answer all.
void ExpectEveryRequestAnswered(const std::vector<std::string>& dumps, uint64_t requests) {
  ASSERT_FALSE(dumps.empty());
  uint64_t answered = 0;
  for (const auto& p : dumps) {
    const format::Dump d = MustOpen(p);
    ASSERT_TRUE(d.trigger.has_value());
    answered += 1 + d.trigger->suppressed;
  }
  EXPECT_EQ(answered, requests) << dumps.size() << " dumps";
}

// lb_dump() only queues a dump for the control thread. A program that asks
// for dumps and returns from main at once must still get every one: the
// exit writes what is still queued (it used to be lost, which a loaded
// machine showed as explicit-storm tests missing a dump or three).
TEST(DumpOnDemand, DumpsQueuedJustBeforeExitAreAllWritten) {
  Outcome o = RunTriggers("queue-and-exit", {"queue-and-exit", "8"}, {{"LOOKBACK_RATE_LIMIT", "0"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(ValueOf(o.run.out, "queued"), 8) << o.run.out;
  ExpectEveryRequestAnswered(o.dumps, 8);
  for (const auto& p : o.dumps) {
    const format::Dump d = MustOpen(p);
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->detector, "explicit");
    EXPECT_EQ(d.trigger->subject, "queued");
  }
}

TEST(Window, TheDumpHoldsOnlyTheLastWindowBeforeTheSnapshot) {
  // 10 dumps ~20 ms apart: the last one sees ~200 ms of pulses without a window.
  Outcome full = RunTriggers("window-none", {"explicit-storm", "10"});
  ASSERT_EQ(full.run.exit_code, 0) << full.run.err;
  // Requests that arrive while a dump is being written share the next one
  // (a loaded machine slows the dumps down): every request is in some dump.
  ExpectEveryRequestAnswered(full.dumps, 10);
  uint64_t events = 0;
  {
    format::Dump d = MustOpen(full.dumps.back());
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->window_ns, 0u);
    EXPECT_GT(OldestEventMs(d, &events), 150);
  }
  Outcome o = RunTriggers("window", {"explicit-storm", "10"}, {{"LOOKBACK_WINDOW", "50ms"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ExpectEveryRequestAnswered(o.dumps, 10);
  // Every dump holds only its last 50 ms. The last one, if it was taken
  // while the pulses ran (its snapshot within 10 ms of the request, as the
  // dump measured it: on a loaded machine a request can wait behind earlier
  // dumps while the program is already idle), holds most of the window,
  // trimmed.
  size_t prompt = 0;
  for (size_t i = 0; i < o.dumps.size(); ++i) {
    format::Dump d = MustOpen(o.dumps[i]);
    ASSERT_TRUE(d.trigger.has_value());
    EXPECT_EQ(d.trigger->detector, "explicit");
    EXPECT_EQ(d.trigger->subject, "explicit-storm");
    EXPECT_EQ(d.trigger->window_ns, 50 * kMs);
    const double oldest = OldestEventMs(d, &events, /*exits_only=*/true);
    EXPECT_LE(oldest, 50 + 10) << "events older than the window";
    const model::ClockModel clock(d.clock);
    const uint64_t snap = SnapshotTsc(d, d.threads.at(0));
    // Only the last dump: the first ones come before the program has run 50 ms.
    if (i + 1 != o.dumps.size() || snap < d.trigger->tsc || clock.TicksToNs(snap - d.trigger->tsc) > 10e6) continue;
    ++prompt;
    bool trimmed = false;  // the frames open at the cut are kept: main() is still there
    for (const auto& t : d.threads) trimmed = trimmed || (t.flags & format::kThreadTrimmed) != 0;
    EXPECT_TRUE(trimmed) << "no thread was trimmed";
    EXPECT_GE(oldest, 30) << "the window should still hold most of its 50 ms";
    EXPECT_GT(events, 1000u);
  }
  if (prompt == 0) std::cout << "(the last dump came over 10 ms after its request: only the window bound was checked)\n";
}

TEST(PostTrigger, TheDumpIncludesWhatHappenedAfterTheTrigger) {
  // parse_request sleeps 150 ms against a 50 ms objective; the snapshot comes
  // 300 ms after the trigger, when the call is over and others followed.
  Outcome o = RunTriggers("post-trigger", {"slow-call", "150"},
                  {{"LOOKBACK_SLOW_CALL", "parse_request:50ms"}, {"LOOKBACK_POST_TRIGGER", "300ms"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "slow-call");
  const format::ThreadInfo* main = ThreadById(d, d.trigger->tid);
  ASSERT_NE(main, nullptr);
  const uint64_t snap = SnapshotTsc(d, *main);
  ASSERT_GT(snap, d.trigger->tsc);
  EXPECT_GE(TicksToMs(d, snap - d.trigger->tsc), 290);
  const auto calls = Named(Calls(d, *main), "parse_request");
  std::optional<Call> slow;
  for (const auto& c : calls)
    if (c.duration_ns() >= 100e6) slow = c;
  ASSERT_TRUE(slow.has_value());
  EXPECT_FALSE(slow->open()) << "the slow call's exit is in the dump";
  EXPECT_NEAR(slow->duration_ns() / 1e6, 150, 100);
  int after = 0;
  for (const auto& c : calls) after += c.start_ns > slow->end_ns;
  EXPECT_GE(after, 20) << "requests handled after the slow one are in the dump";
}

// ---- configuration: file, precedence, errors, `lookback record` flags -------

std::string WriteConfig(const std::string& dir, const std::string& text) {
  const std::string path = dir + "/lookback.conf";
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigFile, SetsTriggersLikeTheEnvironment) {
  Outcome env = RunTriggers("config-env", {"slow-scope", "300"}, {{"LOOKBACK_SLOW_SCOPE", "frame:50ms"}});
  ASSERT_EQ(env.run.exit_code, 0) << env.run.err;
  ASSERT_EQ(env.dumps.size(), 1u) << env.run.err;
  format::Dump e = MustOpen(env.dumps[0]);
  ASSERT_TRUE(e.trigger.has_value());

  const std::string conf = WriteConfig(FreshDir("config-file-conf"), "slow_scope = frame:50ms\nWINDOW = 2s\n");
  Outcome o = RunTriggers("config-file", {"slow-scope", "300"}, {{"LOOKBACK_CONFIG", conf}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, e.trigger->detector);
  EXPECT_EQ(d.trigger->detector, "slow-scope");
  EXPECT_EQ(d.trigger->subject, e.trigger->subject);
  EXPECT_EQ(d.trigger->threshold_ns, e.trigger->threshold_ns);
  EXPECT_EQ(d.trigger->threshold_ns, 50 * kMs);
  EXPECT_EQ(d.trigger->window_ns, 2000 * kMs) << "names are case-insensitive";
}

TEST(ConfigFile, TheEnvironmentOverridesTheFile) {
  const std::string conf = WriteConfig(FreshDir("config-override-conf"), "slow_scope = frame:50ms\n");
  Outcome o = RunTriggers("config-override", {"slow-scope", "300"},
                  {{"LOOKBACK_CONFIG", conf}, {"LOOKBACK_SLOW_SCOPE", "frame:2s"}, {"LOOKBACK_DUMP_AT_EXIT", "1"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "exit") << "a 300 ms frame is within the environment's 2 s";
}

TEST(ConfigFile, BadValueIsReportedAndTheProgramRunsOn) {
  const std::string conf = WriteConfig(FreshDir("config-bad-conf"), "stall = ui:soon\nslow_scope = frame:50ms\n");
  Outcome o = RunTriggers("config-bad", {"slow-scope", "300"}, {{"LOOKBACK_CONFIG", conf}});
  EXPECT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.err.find("ui:soon"), std::string::npos) << o.run.err;
  EXPECT_NE(o.run.err.find("lookback"), std::string::npos) << o.run.err;
  // The good line still applies.
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "slow-scope");
}

TEST(RecordFlags, StallFlagWorksLikeTheEnvironment) {
  const std::string dir = FreshDir("record-stall");
  RunResult r = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--no-exit-dump", "--stall", "ui:100ms",
                            "--cooldown", "0", "--", Program("triggers"), "stall", "300"},
                           {}, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u) << r.err;
  format::Dump d = MustOpen(dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "stall");
  EXPECT_EQ(d.trigger->threshold_ns, 100 * kMs);
  const format::ThreadInfo* ui = FindThread(d, "ui");
  ASSERT_NE(ui, nullptr);
  EXPECT_EQ(d.trigger->tid, ui->tid);
  EXPECT_EQ(Named(Calls(d, *ui), "stuck_in_here").size(), 1u);
}

TEST(RecordFlags, BadTriggerFlagIsAUsageError) {
  RunResult r = RunProgram({Cli(), "record", "--stall", "ui:soon", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stall"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lookback::testing
