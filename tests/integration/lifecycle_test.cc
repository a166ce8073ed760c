// Process life on real programs: short-lived threads, fork, exceptions,
// longjmp, signals, long calls, thread selection, bad configuration, and
// dump directories that cannot be written.
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "harness.h"
#include "model/clock_model.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

struct Outcome {
  RunResult run;
  std::vector<std::string> dumps;
};

Outcome Record(const std::string& test, const std::vector<std::string>& prog_args,
               const std::vector<std::string>& flags = {}, const std::map<std::string, std::string>& env = {}) {
  Outcome o;
  const std::string dir = FreshDir(test);
  std::vector<std::string> argv = {Cli(), "record", "--dir", dir + "/dumps"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("--");
  argv.insert(argv.end(), prog_args.begin(), prog_args.end());
  o.run = RunProgram(argv, env, dir);
  o.dumps = Dumps(dir + "/dumps");
  return o;
}

// Frames of one thread after matching, with names.
struct NamedFrame {
  std::string name;
  uint32_t depth;
  uint8_t flags;
};
std::vector<NamedFrame> Frames(const format::Dump& d, const format::ThreadInfo& t, model::MatchStats* stats = nullptr) {
  symbolize::Symbolizer sym(d);
  model::CallMatcher m(&symbolize::Symbolizer::FunctionOf, &sym);
  std::vector<NamedFrame> out;
  auto emit = [&](const model::Frame& f) {
    std::string n = sym.Name(f.key);
    out.push_back({n.substr(0, n.find('(')), f.depth, f.flags});
  };
  model::DecodeThread(d, t, [&](const model::Event& e) { m.OnEvent(e, emit); });
  m.Finish(t.snapshot_tsc, emit);
  if (stats) *stats = m.stats();
  return out;
}

int Count(const std::vector<NamedFrame>& frames, const std::string& name) {
  int n = 0;
  for (const auto& f : frames) n += f.name == name;
  return n;
}

TEST(Threads, ShortLivedThreadsAppearInTheDump) {
  Outcome o = Record("short-threads", {Program("lifecycle-gcc"), "short-threads", "20"}, {"--keep-exited", "32"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  for (int i = 0; i < 20; ++i) {
    const auto* t = FindThread(d, "short-" + std::to_string(i));
    ASSERT_NE(t, nullptr) << "short-" << i;
    EXPECT_TRUE(t->flags & format::kThreadExited);
    EXPECT_EQ(Count(Frames(d, *t), "thread_body"), 1);
  }
}

// A thread that records a few calls must cost a few pages, not a huge page:
// rings use transparent huge pages only past their first 2 MiB
// (MapRingMemory), else every thread of a pool that ever ran a traced call
// held 2 MiB (these 64 threads: 131 MiB before the change, 1.1 MiB after).
TEST(Threads, AThreadThatRecordsLittleCostsLittleMemory) {
  constexpr int kThreads = 64;
  Outcome o = Record("idle-threads", {Program("lifecycle-gcc"), "idle-threads", std::to_string(kThreads)},
                     {"--keep-exited", "80"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  long growth = -1;
  ASSERT_EQ(sscanf(o.run.out.c_str(), "anon-growth %ld", &growth), 1) << o.run.out;
  ASSERT_GE(growth, 0) << "no RssAnon in /proc/self/status";
  // Each thread: its stack's touched pages, the ring's header and the slots
  // its 40 records reach, a few KiB; allow 256 KiB. (Not under the
  // sanitizers, whose per-thread state is larger than that.)
  if (!LOOKBACK_TEST_SANITIZED) {
    EXPECT_LT(growth, kThreads * 256) << "KiB of anonymous memory for " << kThreads << " threads of 40 records";
  }
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  EXPECT_GE(d.threads.size(), static_cast<size_t>(kThreads)) << "every thread was traced";
}

TEST(Threads, KeepsOnlyTheNewestExitedRings) {
  Outcome o = Record("keep-exited", {Program("lifecycle-gcc"), "short-threads", "20"});  // default: keep 8
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  int exited = 0;
  for (const auto& t : d.threads) exited += (t.flags & format::kThreadExited) != 0;
  EXPECT_EQ(exited, 8);
  for (int i = 12; i < 20; ++i) EXPECT_NE(FindThread(d, "short-" + std::to_string(i)), nullptr) << i;
  EXPECT_EQ(FindThread(d, "short-0"), nullptr);
  EXPECT_EQ(d.stats.reclaimed, 12u);
}

TEST(Threads, MemoryCapStopsTracingNewThreadsAndTheDumpSaysSo) {
  // Each ring is 64 KiB of slots plus a 4 KiB header: 150 KiB fits two.
  Outcome o = Record("memory-cap", {Program("lifecycle-gcc"), "short-threads", "5"},
                     {"--buffer-size", "64K", "--max-memory", "150K"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.err.find("ring memory cap reached"), std::string::npos) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  EXPECT_EQ(d.threads.size(), 2u);  // main and short-0
  EXPECT_EQ(d.stats.untraced_memory, 4u);
  RunResult info = RunProgram({Cli(), "info", o.dumps[0]});
  EXPECT_NE(info.out.find("not traced: 4 (memory cap)"), std::string::npos) << info.out;
}

// The thread table says how much history each ring holds: the time it covers
// (SPAN) and the trace points per second over it (TP/S = EVENTS / SPAN).
TEST(Info, ThreadTableShowsEachRingsSpanAndTracePointRate) {
  Outcome o = Record("info-rate", {Program("lifecycle-gcc"), "short-threads", "2"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  RunResult info = RunProgram({Cli(), "info", o.dumps[0]});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  ASSERT_NE(info.out.find(" TP/S "), std::string::npos) << info.out;
  const double unit[] = {1, 1e3, 1e6, 1e9};
  auto scale = [&](const std::string& u, const char* const* names) {
    for (int i = 0; i < 4; ++i) {
      if (u == names[i]) return unit[i];
    }
    return -1.0;
  };
  const char* const time_units[] = {"ns", "us", "ms", "s"};
  const char* const rate_units[] = {"", "k", "M", "G"};
  int rows = 0;
  std::istringstream in(info.out);
  for (std::string line; std::getline(in, line);) {
    // TID NAME RECORDS EVENTS LOST SPAN_VALUE SPAN_UNIT RATE [RATE_UNIT] STATE...
    std::istringstream cells(line);
    std::vector<std::string> f;
    for (std::string c; cells >> c;) f.push_back(c);
    if (f.size() < 9 || f[0].find_first_not_of("0123456789") != std::string::npos || f[5] == "-") continue;
    const double events = std::stod(f[3]);
    const double span_s = std::stod(f[5]) * scale(f[6], time_units) / 1e9;
    const double mult = scale(f[8], rate_units);
    const double rate = std::stod(f[7]) * (mult > 0 ? mult : 1);
    if (span_s <= 0 || events < 100) continue;
    SCOPED_TRACE(line);
    EXPECT_NEAR(rate, events / span_s, 0.1 * events / span_s);
    ++rows;
  }
  EXPECT_GE(rows, 1) << info.out;
}

TEST(Threads, PatternSelectsThreadsThatRenameThemselves) {
  Outcome o = Record("named", {Program("lifecycle-gcc"), "named-workers"}, {"--threads", "worker-*"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  std::set<std::string> names;
  for (const auto& t : d.threads) names.insert(t.name);
  EXPECT_EQ(names, (std::set<std::string>{"worker-1", "worker-2"}));
  EXPECT_EQ(Count(Frames(d, *FindThread(d, "worker-1")), "worker_loop"), 1);
}

// lb_thread_set_name (what the JVM agent calls with Java names): the whole
// name, past the kernel's 15 bytes, in the dump and for LOOKBACK_THREADS; a
// rename after the thread started tracing shows the new name.
TEST(Threads, NamesGivenWithTheApiAreKeptWholeAndSelectThreads) {
  Outcome all = Record("given-names", {Program("lifecycle-gcc"), "given-names"});
  ASSERT_EQ(all.run.exit_code, 0) << all.run.err;
  ASSERT_EQ(all.dumps.size(), 1u);
  format::Dump d = MustOpen(all.dumps[0]);
  std::set<std::string> names;
  for (const auto& t : d.threads) names.insert(t.name);
  EXPECT_TRUE(names.count("pool-1-thread-1-with-a-long-name")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("renamed-after-start-and-long")) << ::testing::PrintToString(names);
  EXPECT_TRUE(names.count("other-long-named-thread")) << ::testing::PrintToString(names);
  EXPECT_FALSE(names.count("kernel-name")) << ::testing::PrintToString(names);

  Outcome some = Record("given-names-selected", {Program("lifecycle-gcc"), "given-names"}, {"--threads", "pool-1-*"});
  ASSERT_EQ(some.run.exit_code, 0) << some.run.err;
  ASSERT_EQ(some.dumps.size(), 1u);
  format::Dump s = MustOpen(some.dumps[0]);
  names.clear();
  for (const auto& t : s.threads) names.insert(t.name);
  // thread 2 was selected by its first name, then renamed out of the pattern
  // (tracing stops, its ring stays).
  EXPECT_EQ(names, (std::set<std::string>{"pool-1-thread-1-with-a-long-name", "renamed-after-start-and-long"}));
  EXPECT_EQ(Count(Frames(s, *FindThread(s, "pool-1-thread-1-with-a-long-name")), "worker_loop"), 1);
  EXPECT_EQ(Count(Frames(s, *FindThread(s, "renamed-after-start-and-long")), "worker_loop"), 1);
}

// A fork never copies the control thread in the middle of its work (dumps,
// allocations, static initialisers): every child runs and exits. The ASan
// stage of CI makes this bite (ASan's allocator has no fork handlers).
TEST(Process, ForksWhileTheControlThreadWritesDumpsNeverHangTheChild) {
  Outcome o = Record("fork-storm", {Program("lifecycle-gcc"), "fork-storm", "150"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.out.find("fork-storm 150 children"), std::string::npos) << o.run.out;
  EXPECT_GE(o.dumps.size(), 2u);  // signal dumps happened meanwhile
}

TEST(Process, ForkChildWritesItsOwnDump) {
  Outcome o = Record("fork", {Program("lifecycle-gcc"), "fork"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 2u) << o.run.err;
  int child_pid = 0, parent_pid = 0;
  ASSERT_EQ(sscanf(o.run.out.c_str(), "child %d", &child_pid), 1) << o.run.out;
  ASSERT_NE(o.run.out.find("parent "), std::string::npos);
  sscanf(o.run.out.c_str() + o.run.out.find("parent "), "parent %d", &parent_pid);
  for (const auto& path : o.dumps) {
    format::Dump d = MustOpen(path);
    ASSERT_EQ(d.threads.size(), 1u);
    auto frames = Frames(d, d.threads[0]);
    if (static_cast<int>(d.process.pid) == child_pid) {
      EXPECT_NE(path.find("-" + std::to_string(child_pid) + "-1.lbk"), std::string::npos);
      EXPECT_EQ(Count(frames, "child_work"), 1);
      EXPECT_EQ(Count(frames, "parent_work"), 0) << "the child's ring must start empty";
    } else {
      EXPECT_EQ(static_cast<int>(d.process.pid), parent_pid);
      EXPECT_EQ(Count(frames, "parent_work"), 2);
      EXPECT_EQ(Count(frames, "child_work"), 0);
    }
  }
}

class Exec : public ::testing::TestWithParam<const char*> {};

TEST_P(Exec, WritesADumpBeforeTheImageIsReplaced) {
  Outcome o = Record(std::string("exec-") + GetParam(), {Program("lifecycle-gcc"), "exec", GetParam()});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 2u) << o.run.err;
  std::set<std::string> reasons;
  for (const auto& path : o.dumps) {
    format::Dump d = MustOpen(path);
    reasons.insert(d.process.reason);
    auto frames = Frames(d, d.threads[0]);
    if (d.process.reason == "exec") {
      EXPECT_EQ(Count(frames, "parent_work"), 1);
    }
  }
  EXPECT_EQ(reasons, (std::set<std::string>{"exec", "exit"}));
}

INSTANTIATE_TEST_SUITE_P(Calls, Exec, ::testing::Values("execv", "execl", "execlp", "execle"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// A vfork() child shares the parent's memory until its exec: a dump written
// there would be the parent's rings under the child's pid, racing with the
// parent's other threads. Only the parent's own exit dump is written.
TEST(Exec, FromAVforkChildWritesNoDumpOfTheParentsRings) {
  Outcome o = Record("vfork-exec", {Program("lifecycle-gcc"), "vfork-exec"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u) << o.run.err;
  format::Dump d = MustOpen(o.dumps[0]);
  EXPECT_EQ(d.process.reason, "exit");
  EXPECT_EQ(Count(Frames(d, d.threads[0]), "parent_work"), 2);
}

class NonLocalExits : public ::testing::TestWithParam<const char*> {};

TEST_P(NonLocalExits, ExceptionsThroughThreeFramesKeepNesting) {
  if (access(Program(GetParam()).c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " not built";
  Outcome o = Record(std::string("exceptions-") + GetParam(), {Program(GetParam()), "exceptions"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  model::MatchStats st;
  auto frames = Frames(d, d.threads[0], &st);
  // Each outer() is a direct child of main, however the compiler unwinds.
  int outers = 0;
  for (const auto& f : frames) {
    if (f.name == "outer") {
      ++outers;
      EXPECT_EQ(f.depth, 1u);
    }
    if (f.name == "after_exceptions") {
      EXPECT_EQ(f.depth, 1u);
    }
    if (f.name == "thrower") {
      EXPECT_EQ(f.depth, 3u);
    }
  }
  EXPECT_EQ(outers, 3);
  EXPECT_EQ(Count(frames, "after_exceptions"), 1);
  EXPECT_EQ(st.open, 0u);
}

TEST_P(NonLocalExits, LongjmpOutOfThreeFramesKeepsNesting) {
  if (access(Program(GetParam()).c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " not built";
  Outcome o = Record(std::string("longjmp-") + GetParam(), {Program(GetParam()), "longjmp"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  model::MatchStats st;
  auto frames = Frames(d, d.threads[0], &st);
  EXPECT_EQ(Count(frames, "jouter"), 3);
  for (const auto& f : frames) {
    if (f.name == "jouter" || f.name == "after_longjmp") {
      EXPECT_EQ(f.depth, 1u) << f.name;
    }
  }
  EXPECT_GE(st.unwound, 9u);  // jouter, jmid, jumper, three times: no exit hook runs on longjmp
  EXPECT_EQ(st.open, 0u);
}

INSTANTIATE_TEST_SUITE_P(Compilers, NonLocalExits, ::testing::Values("lifecycle-gcc", "lifecycle-clang", "lifecycle-pass-O0",
                                                                   "lifecycle-pass-O2", "lifecycle-pass-full-O2"),
                         [](const auto& info) {
                           std::string n = std::string(info.param).substr(10);
                           for (auto& c : n) c = isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return n;
                         });

TEST(Process, SignalHandlersThatRunTracedCodeAreRecorded) {
  Outcome o = Record("signals", {Program("lifecycle-gcc"), "signals"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  model::MatchStats st;
  auto frames = Frames(d, d.threads[0], &st);
  EXPECT_GT(Count(frames, "handler_fn"), 10);
  EXPECT_GT(Count(frames, "mid_work"), 1000);
}

// Ctrl-C at a terminal reaches a program under `lookback record` once, as it
// does without lookback: the terminal sends SIGINT to its foreground process
// group, which the program shares with lookback, and lookback passed its copy
// on too, so a program that forces its exit at a second Ctrl-C did so at the
// first. (A signal sent to lookback itself by another process still goes on.)
TEST(Process, CtrlCAtATerminalReachesTheProgramOnce) {
  const std::string dir = FreshDir("ctrl-c");
  int master = -1;
  const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(Cli().c_str(), "lookback", "record", "-q", "--dir", dir.c_str(), "--", Program("sigint-twice").c_str(),
          (char*)nullptr);
    _exit(127);
  }
  std::string out;
  auto read_until = [&](const std::string& want) {
    for (int waited = 0; out.find(want) == std::string::npos && waited < 20000;) {
      pollfd p{master, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) {
        waited += 100;
        continue;
      }
      char buf[256];
      const ssize_t n = read(master, buf, sizeof buf);
      if (n <= 0) return;  // EIO: the terminal's last reader is gone
      out.append(buf, static_cast<size_t>(n));
    }
  };
  read_until("ready");
  ASSERT_NE(out.find("ready"), std::string::npos) << out;
  ASSERT_EQ(write(master, "\x03", 1), 1);  // the terminal's VINTR: SIGINT to the foreground group
  read_until("clean exit");
  int status = 0;
  waitpid(pid, &status, 0);
  close(master);
  EXPECT_NE(out.find("graceful shutdown"), std::string::npos) << out;
  EXPECT_NE(out.find("clean exit"), std::string::npos) << out;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << "\n" << out;
}

TEST(Time, ACallLongerThanTheTruncationPeriodKeepsItsDuration) {
  // 1.8 s: more than four 2^30-tick periods and more than Hubble's 2^32 ticks.
  Outcome o = Record("long-call", {Program("lifecycle-gcc"), "sleep", "1800"});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  format::Dump d = MustOpen(o.dumps[0]);
  symbolize::Symbolizer sym(d);
  const model::ClockModel clock(d.clock);
  model::CallMatcher m;
  double ms = -1;
  model::DecodeThread(d, d.threads[0], [&](const model::Event& e) {
    m.OnEvent(e, [&](const model::Frame& f) {
      if (sym.Name(f.key).rfind("long_call", 0) == 0) ms = clock.TicksToNs(f.end_tsc - f.start_tsc) / 1e6;
    });
  });
  EXPECT_NEAR(ms, 1800, 60);
}

TEST(Config, BadEnvironmentValueIsReportedAndTracingGoesOn) {
  Outcome o = Record("bad-env", {Program("lifecycle-gcc"), "short-threads", "1"}, {},
                     {{"LOOKBACK_BUFFER_SIZE", "lots"}});
  ASSERT_EQ(o.run.exit_code, 0) << o.run.err;
  EXPECT_NE(o.run.err.find("LOOKBACK_BUFFER_SIZE='lots' is not a size"), std::string::npos) << o.run.err;
  ASSERT_EQ(o.dumps.size(), 1u);
  EXPECT_EQ(MustOpen(o.dumps[0]).stats.buffer_bytes, 8u << 20);
}

TEST(Config, BadRecordFlagIsAUsageError) {
  RunResult r = RunProgram({Cli(), "record", "--buffer-size", "huge", "--", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--buffer-size 'huge' is not a size"), std::string::npos) << r.err;
}

TEST(Cli, BareLookbackListsItsCommands) {
  RunResult r = RunProgram({Cli()});
  EXPECT_EQ(r.exit_code, 2);
  for (const char* command : {"record", "attach", "info", "report", "convert", "export"}) {
    EXPECT_NE(r.err.find(std::string("\n  ") + command), std::string::npos) << command << " in:\n" << r.err;
  }
}

TEST(Cli, VersionNamesTheDumpFormatItWrites) {
  RunResult r = RunProgram({Cli(), "--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("dump format " + std::to_string(format::kDumpVersion) + ","), std::string::npos) << r.out;
}

TEST(DumpDir, UnwritableDirectoryGivesOneClearErrorAndTheProgramRunsOn) {
  const std::string dir = FreshDir("unwritable");
  const std::string blocker = dir + "/not-a-dir";
  FILE* f = fopen(blocker.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  RunResult r = RunProgram({Cli(), "record", "--dir", blocker + "/dumps", "--", Program("lifecycle-gcc"), "short-threads", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  size_t n = 0;
  for (size_t p = r.err.find("lookback: cannot create dump directory"); p != std::string::npos;
       p = r.err.find("lookback: cannot create dump directory", p + 1))
    ++n;
  EXPECT_EQ(n, 1u) << r.err;
  EXPECT_EQ(ListFiles(dir), std::vector<std::string>{"not-a-dir"});
  // record names the program as traced instead of blaming its compiler flags.
  EXPECT_NE(r.err.find("was traced but wrote no dump: its dump could not be written"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("-finstrument-functions"), std::string::npos) << r.err;
}

// A traced program killed before its exit dump: record says by what, not
// that the program may lack -finstrument-functions.
TEST(DumpDir, AProgramKilledBeforeItsExitDumpIsNamedAsTraced) {
  const std::string dir = FreshDir("killed-no-dump");
  Background bg = StartReadingStdout({"/bin/sh", "-c", "exec " + Cli() + " record --dir " + dir + " -- " +
                                                      Program("lifecycle-gcc") + " wait 30 2>" + dir + "/err.txt"});
  ASSERT_NE(bg.out, nullptr);
  int pid = 0;
  ASSERT_EQ(fscanf(bg.out, "ready %d", &pid), 1);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(bg.pid, &status, 0);
  fclose(bg.out);
  std::ifstream in(dir + "/err.txt");
  const std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(err.find("was traced but wrote no dump: it was ended by signal Killed"), std::string::npos) << err;
  EXPECT_EQ(err.find("-finstrument-functions"), std::string::npos) << err;
}

TEST(DumpDir, AFullDiskLeavesNoPartialFile) {
  // RLIMIT_FSIZE makes write() fail with EFBIG as a full disk makes it fail
  // with ENOSPC; the writer must remove its temporary file either way.
  const std::string dir = FreshDir("full-disk");
  RunResult r = RunProgram({"/bin/sh", "-c",
                     "trap '' XFSZ; ulimit -f 1; exec \"$0\" record --dir \"$1\" -- \"$2\" short-threads 2",
                     Cli(), dir + "/dumps", Program("lifecycle-gcc")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("cannot write dump"), std::string::npos) << r.err;
  EXPECT_TRUE(ListFiles(dir + "/dumps").empty()) << "a partial or temporary file was left";
}

}  // namespace
}  // namespace lookback::testing
