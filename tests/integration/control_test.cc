// Dumps on demand from outside (`lookback dump PID`, the dump signal) and
// from inside (lb_dump_sync) while threads trace at full speed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "harness.h"

namespace lookback::testing {
namespace {

TEST(DumpOnDemand, FromTheCliBySocketAndBySignal) {
  const std::string dir = FreshDir("dump-on-demand");
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t rec = fork();
  if (rec == 0) {
    dup2(out[1], 1);
    close(out[0]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execl(Cli().c_str(), "lookback", "record", "--dir", "dumps", "--", Program("lifecycle-gcc").c_str(), "wait", "30",
          (char*)nullptr);
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  int pid = 0;
  ASSERT_EQ(fscanf(f, "ready %d", &pid), 1);

  RunResult r = RunProgram({Cli(), "dump", std::to_string(pid), "--reason", "asked by the test"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string path = r.out.substr(0, r.out.find('\n'));
  format::Dump d = MustOpen(path);
  EXPECT_EQ(d.process.reason, "asked by the test");
  EXPECT_EQ(static_cast<int>(d.process.pid), pid);
  EXPECT_NE(path.find("-" + std::to_string(pid) + "-1.lbk"), std::string::npos) << path;

  RunResult s = RunProgram({Cli(), "dump", std::to_string(pid), "--signal", "USR2"});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  for (int i = 0; i < 500 && Dumps(dir + "/dumps").size() < 2; ++i) usleep(10000);
  ASSERT_EQ(Dumps(dir + "/dumps").size(), 2u);

  std::ofstream(dir + "/stop") << "stop";
  int status = 0;
  waitpid(rec, &status, 0);
  fclose(f);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 3u);
  std::set<std::string> reasons;
  for (const auto& p : dumps) reasons.insert(MustOpen(p).process.reason);
  EXPECT_EQ(reasons, (std::set<std::string>{"asked by the test", "signal User defined signal 2", "exit"}));
}

TEST(DumpOnDemand, UnknownProcessIsAClearError) {
  RunResult r = RunProgram({Cli(), "dump", "999999"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("has no lookback control socket"), std::string::npos) << r.err;
}

// Eight threads run p0{p1{} p2{p3{}}} in a loop at full speed while the
// main thread takes 30 dumps back to back: every thread's window in every
// dump must be a contiguous piece of that cycle, in time order.
TEST(DumpOnDemand, ContinuousDumpsWhileEightThreadsTraceHaveNoTornRecord) {
  const std::string dir = FreshDir("hammer");
  RunResult r = RunProgram({Program("hammer"), "30"}, {{"LOOKBACK_DIR", dir}, {"LOOKBACK_BUFFER_SIZE", "64K"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t p[4] = {};
  const size_t at = r.out.find("p0=");
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(sscanf(r.out.c_str() + at, "p0=%lx p1=%lx p2=%lx p3=%lx", &p[0], &p[1], &p[2], &p[3]), 4);
  // The cycle of (exit?, function) events.
  const TEvent cycle[8] = {{false, p[0]}, {false, p[1]}, {true, p[1]}, {false, p[2]},
                           {false, p[3]}, {true, p[3]},  {true, p[2]}, {true, p[0]}};
  auto position = [&](const TEvent& e) {
    for (int i = 0; i < 8; ++i)
      if (cycle[i] == e) return i;
    return -1;
  };
  const auto dumps = Dumps(dir);
  ASSERT_EQ(dumps.size(), 30u);
  uint64_t checked = 0;
  for (const auto& path : dumps) {
    format::Dump d = MustOpen(path);
    int hammers = 0;
    for (const auto& t : d.threads) {
      if (t.name.rfind("hammer-", 0) != 0) continue;
      ++hammers;
      int prev = -1;
      uint64_t prev_tsc = 0;
      model::DecodeStats st = model::DecodeThread(d, t, [&](const model::Event& e) {
        if (e.kind == model::EventKind::kResume) return;
        const int pos = position({e.kind == model::EventKind::kExit, e.key});
        if (pos < 0) return;  // RunProgram()'s own frame or thread start-up
        if (prev >= 0) {
          ASSERT_EQ(pos, (prev + 1) % 8) << path << " thread " << t.tid << " record " << e.index;
          ASSERT_GE(e.tsc, prev_tsc) << path << " thread " << t.tid << " record " << e.index;
          ++checked;
        }
        prev = pos;
        prev_tsc = e.tsc;
      });
      // A window of half a ring or more always decodes in full (FORMAT.md).
      if (t.record_count >= t.capacity / 2 + 8) {
        EXPECT_EQ(st.undecodable_prefix, 0u) << path << " thread " << t.tid;
      }
    }
    EXPECT_EQ(hammers, 8) << path;
  }
  EXPECT_GT(checked, 200000u);
}

}  // namespace
}  // namespace lookback::testing
