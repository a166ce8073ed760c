// Dumps on demand from outside (`lookback dump PID`, the dump signal) and
// from inside (lb_dump_sync) while threads trace at full speed.
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

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

// `lookback record -- spinners THREADS CALLS` in a fresh directory: threads
// calling traced functions until the test writes the "stop" file.
class Spinners {
 public:
  Spinners(const std::string& dir, int threads, const std::string& calls,
           const std::vector<std::string>& record_flags = {}) : dir_(dir) {
    int out[2];
    if (pipe(out) != 0) return;
    rec_ = fork();
    if (rec_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      if (chdir(dir.c_str()) != 0) _exit(126);
      std::vector<std::string> argv = {Cli(), "record", "--dir", "dumps", "--no-exit-dump", "-q"};
      argv.insert(argv.end(), record_flags.begin(), record_flags.end());
      argv.insert(argv.end(), {"--", Program("spinners"), std::to_string(threads), calls});
      std::vector<char*> args;
      for (auto& a : argv) args.push_back(a.data());
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    f_ = fdopen(out[0], "r");
    if (fscanf(f_, "ready %d", &pid_) != 1) pid_ = 0;
  }
  ~Spinners() {
    std::ofstream(dir_ + "/stop") << "stop";
    int status = 0;
    if (rec_ > 0) waitpid(rec_, &status, 0);
    if (f_ != nullptr) fclose(f_);
  }
  int pid() const { return pid_; }
  std::string dumps() const { return dir_ + "/dumps"; }

 private:
  std::string dir_;
  pid_t rec_ = -1;
  FILE* f_ = nullptr;
  int pid_ = 0;
};

// "timings: key=value ..." (stderr of `lookback dump --timings`) as a map.
// A quick copy of a wrapped ring loses at most half of it to the writer (the
// records overwritten meanwhile); a slow one (a sanitizer build, a starved
// dumping thread) may lose more, which the dump says by its own snapshot time.
// So the half-ring promise is checked only when the dump measured a quick copy.
template <typename Thread>
void ExpectHalfARingKeptIfTheCopyWasQuick(const Thread& th, uint64_t snapshot_ns) {
  if (snapshot_ns < 1'000'000) {
    EXPECT_GE(th.record_count, th.capacity / 2) << th.name << " (snapshot " << snapshot_ns << " ns)";
  }
}

std::map<std::string, uint64_t> Timings(const std::string& err) {
  std::map<std::string, uint64_t> kv;
  const size_t at = err.find("timings: ");
  if (at == std::string::npos) return kv;
  std::istringstream in(err.substr(at + 9, err.find('\n', at) - at - 9));
  std::string field;
  while (in >> field) {
    const size_t eq = field.find('=');
    if (eq != std::string::npos) kv[field.substr(0, eq)] = std::stoull(field.substr(eq + 1));
  }
  return kv;
}

uint64_t Metadata(const format::Dump& d, const std::string& key) {
  auto it = d.metadata.find(key);
  return it == d.metadata.end() ? ~uint64_t{0} : std::stoull(it->second);
}

uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// Every phase is reported, the phases fit in the total, the total in what
// the requester waited, and what the dump stores of them is what was said.
TEST(DumpOnDemand, TimingsAreReportedAndStoredInTheDump) {
  const std::string dir = FreshDir("dump-timings");
  Spinners s(dir, 2, "200000", {"--buffer-size", "256K"});
  ASSERT_GT(s.pid(), 0);
  RunResult r = RunProgram({Cli(), "dump", std::to_string(s.pid()), "--timings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string path = r.out.substr(0, r.out.find('\n'));
  const auto t = Timings(r.err);
  for (const char* k : {"requests", "threads", "bytes", "snapshot_bytes", "batches", "direct", "queued_ns", "prepare_ns",
                        "snapshot_ns", "encode_ns", "write_ns", "fsync_ns", "rename_ns", "total_ns", "cpu_ns",
                        "answered_ns"}) {
    EXPECT_EQ(t.count(k), 1u) << k << " missing from: " << r.err;
  }
  EXPECT_EQ(t.at("requests"), 1u);
  EXPECT_EQ(t.at("batches"), 1u);
  EXPECT_GT(t.at("snapshot_ns"), 0u);
  EXPECT_LE(t.at("prepare_ns") + t.at("snapshot_ns") + t.at("encode_ns") + t.at("write_ns") + t.at("fsync_ns") +
                t.at("rename_ns"),
            t.at("total_ns"));
  EXPECT_LE(t.at("total_ns"), t.at("answered_ns"));
  EXPECT_EQ(t.at("bytes"), FileSize(path));

  format::Dump d = MustOpen(path);
  EXPECT_EQ(t.at("threads"), d.threads.size());
  namespace md = format::metadata;
  EXPECT_EQ(Metadata(d, md::kRequests), 1u);
  EXPECT_EQ(Metadata(d, md::kPrepareNs), t.at("prepare_ns"));
  EXPECT_EQ(Metadata(d, md::kSnapshotNs), t.at("snapshot_ns"));
  EXPECT_EQ(Metadata(d, md::kEncodeNs), t.at("encode_ns"));
  EXPECT_EQ(Metadata(d, md::kWriteNs), t.at("write_ns"));
  EXPECT_EQ(Metadata(d, md::kSnapshotBytes), t.at("snapshot_bytes"));
  EXPECT_EQ(Metadata(d, md::kSnapshotBatches), 1u);
  uint64_t records = 0;
  for (const auto& th : d.threads) records += th.record_count * 8;
  EXPECT_EQ(records, t.at("snapshot_bytes"));  // no samples, no window: the copies are the records
  int spinners = 0;
  for (const auto& th : d.threads) {
    if (th.name.rfind("spin-", 0) != 0) continue;
    ++spinners;
    EXPECT_TRUE(th.flags & format::kThreadWrapped) << th.name;
    EXPECT_GT(th.record_count, 0u) << th.name;
    ExpectHalfARingKeptIfTheCopyWasQuick(th, t.at("snapshot_ns"));
  }
  EXPECT_EQ(spinners, 2);
  EXPECT_EQ(d.warnings.size(), 0u);
  RunResult v = RunProgram({Cli(), "verify", path});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  RunResult i = RunProgram({Cli(), "info", path});
  EXPECT_NE(i.out.find("dump phases   snapshot "), std::string::npos) << i.out;
}

// Four `lookback dump` at once while two threads trace at full speed: each
// is answered with an existing, valid dump; requests that shared a dump are
// told so, and no dump answers a request it does not count.
TEST(DumpOnDemand, ConcurrentRequestsAreEachAnsweredWithAValidDump) {
  const std::string dir = FreshDir("dump-concurrent");
  Spinners s(dir, 2, "600000", {"--buffer-size", "2M"});
  ASSERT_GT(s.pid(), 0);
  std::vector<RunResult> results(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] {
      results[i] = RunProgram({Cli(), "dump", std::to_string(s.pid()), "--timings", "--reason", "client " + std::to_string(i)});
    });
  }
  for (auto& c : clients) c.join();
  std::map<std::string, uint64_t> answered;  // path -> requesters told it
  for (const RunResult& r : results) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string path = r.out.substr(0, r.out.find('\n'));
    ++answered[path];
    EXPECT_EQ(Timings(r.err).at("requests"), Metadata(MustOpen(path), format::metadata::kRequests)) << path;
  }
  uint64_t requests = 0;
  for (const auto& [path, n] : answered) {
    format::Dump d = MustOpen(path);
    EXPECT_EQ(Metadata(d, format::metadata::kRequests), n) << path;
    EXPECT_EQ(d.trigger->suppressed, n - 1) << path;  // the others were merged into it
    requests += n;
  }
  EXPECT_EQ(requests, 4u);
  EXPECT_EQ(Dumps(s.dumps()).size(), answered.size());
}

int ConnectControlSocket(int pid) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "lookback-" + std::to_string(pid);
  memcpy(addr.sun_path + 1, name.data(), name.size());
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything a connection gets until the process closes it (at most 60 s).
std::string ReadAnswer(int fd) {
  std::string out;
  char buf[512];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 60000) <= 0) break;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// The control thread is kept busy by a requester that has connected but not
// yet sent its line; three more ask meanwhile. However the control thread's
// sweeps of the backlog split them, there are at most two dumps, every
// request gets an answer naming one, and each dump counts exactly the
// requests it answered.
TEST(DumpOnDemand, RequestsWaitingForTheControlThreadShareADumpAndAreAllAnswered) {
  const std::string dir = FreshDir("dump-queued");
  Spinners s(dir, 2, "200000", {"--buffer-size", "1M"});
  ASSERT_GT(s.pid(), 0);
  const int first = ConnectControlSocket(s.pid());
  ASSERT_GE(first, 0);
  std::vector<int> fds = {first};
  for (int i = 0; i < 3; ++i) {
    const int fd = ConnectControlSocket(s.pid());
    ASSERT_GE(fd, 0);
    const std::string req = "TIMED-DUMP waiting " + std::to_string(i) + "\n";
    ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    fds.push_back(fd);
  }
  const std::string req = "TIMED-DUMP first\n";
  ASSERT_EQ(write(first, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::map<std::string, uint64_t> answered;
  for (int fd : fds) {
    const std::string a = ReadAnswer(fd);
    ASSERT_EQ(a.rfind("OK ", 0), 0u) << a;
    const std::string path = a.substr(3, a.find('\n') - 3);
    ++answered[path];
    EXPECT_NE(a.find("\nTIMING requests="), std::string::npos) << a;
  }
  EXPECT_LE(answered.size(), 2u);
  uint64_t requests = 0;
  for (const auto& [path, n] : answered) {
    format::Dump d = MustOpen(path);
    EXPECT_EQ(Metadata(d, format::metadata::kRequests), n) << path;
    requests += n;
  }
  EXPECT_EQ(requests, 4u);
  EXPECT_EQ(Dumps(s.dumps()).size(), answered.size());
}

// With less dump memory than the rings take, the rings are copied in
// batches (one per thread here) and every thread is still in the dump, whole.
TEST(DumpOnDemand, LimitedDumpMemoryCopiesInBatchesAndKeepsEveryThread) {
  const std::string dir = FreshDir("dump-batches");
  Spinners s(dir, 3, "200000", {"--buffer-size", "256K", "--dump-memory", "4K"});
  ASSERT_GT(s.pid(), 0);
  RunResult r = RunProgram({Cli(), "dump", std::to_string(s.pid()), "--timings"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string path = r.out.substr(0, r.out.find('\n'));
  const auto t = Timings(r.err);
  format::Dump d = MustOpen(path);
  EXPECT_EQ(t.at("batches"), d.threads.size());
  EXPECT_EQ(Metadata(d, format::metadata::kSnapshotBatches), d.threads.size());
  int spinners = 0;
  for (const auto& th : d.threads) {
    if (th.name.rfind("spin-", 0) != 0) continue;
    ++spinners;
    ExpectHalfARingKeptIfTheCopyWasQuick(th, t.at("snapshot_ns"));
  }
  EXPECT_EQ(spinners, 3);
  RunResult v = RunProgram({Cli(), "verify", path});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

}  // namespace
}  // namespace lookback::testing

namespace lookback::testing {
namespace {

// `lookback record -- closes-fds LOG [crash]` in dir, stdout read by the test.
struct ClosesFds {
  pid_t record = -1;
  FILE* out = nullptr;
  int pid = 0;
};

ClosesFds StartClosesFds(const std::string& dir, bool crash) {
  ClosesFds c;
  Background bg = StartReadingStdout({Cli(), "record", "-q", "--dir", dir + "/dumps", "--", Program("closes-fds"),
                                      dir + "/log.txt", crash ? "crash" : "serve"},
                                     // (in an ASan build: the fault goes to the program, not to ASan's handler)
                                     {{"ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0:handle_segv=0"}});
  c.record = bg.pid;
  c.out = bg.out;
  if (c.out == nullptr || fscanf(c.out, "ready %d", &c.pid) != 1) c.pid = 0;
  return c;
}

// A daemon that closes every descriptor it did not open and reopens its log
// on the number lookback's control pipe had: its log gets nothing but its own
// lines (lookback wrote 8 bytes into it at every thread exit), lookback's
// control thread does not spin on the closed numbers (it was at 100 % CPU),
// and `lookback dump PID` works again (the socket was gone).
TEST(Descriptors, AProgramThatClosesLookbacksDescriptorsKeepsItsFilesAndDumpsStillWork) {
  const std::string dir = FreshDir("closes-fds");
  ClosesFds c = StartClosesFds(dir, false);
  ASSERT_GT(c.pid, 0);
  // The control thread opens a new socket at its next wake-up (every 10 ms).
  RunResult r;
  for (int i = 0; i < 100; i++) {
    r = RunProgram({Cli(), "dump", std::to_string(c.pid), "--reason", "after the close"});
    if (r.exit_code == 0) break;
    usleep(20000);
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const format::Dump d = MustOpen(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(d.process.reason, "after the close");
  usleep(300000);  // threads come and go meanwhile
  std::ofstream(dir + "/log.txt.stop") << "stop";
  char line[256] = {};
  long control_ms = -1, wall_ms = -1;
  while (fgets(line, sizeof line, c.out) != nullptr) {
    if (sscanf(line, "control-cpu-ms %ld wall-ms %ld", &control_ms, &wall_ms) == 2) break;
  }
  int status = 0;
  waitpid(c.record, &status, 0);
  fclose(c.out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(wall_ms, 0);
  ASSERT_GE(control_ms, 0) << "no thread named lookback";
  EXPECT_LT(control_ms * 10, wall_ms) << "the control thread used " << control_ms << " ms of CPU in " << wall_ms
                                      << " ms";
  std::ifstream log(dir + "/log.txt", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  std::istringstream lines(text);
  int n = 0;
  for (std::string l; std::getline(lines, l); n++) {
    ASSERT_EQ(l, "line " + std::to_string(n)) << "the log holds bytes the program did not write";
  }
  EXPECT_GE(n, 10);
}

// A crash after the program closed lookback's descriptors is still dumped
// (the crash handler waited on a closed descriptor: a dump or none by timing).
TEST(Descriptors, ACrashAfterTheProgramClosedLookbacksDescriptorsIsDumped) {
  const std::string dir = FreshDir("closes-fds-crash");
  ClosesFds c = StartClosesFds(dir, true);
  ASSERT_GT(c.pid, 0);
  int status = 0;
  waitpid(c.record, &status, 0);
  fclose(c.out);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGSEGV) << status;
  const auto dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  const format::Dump d = MustOpen(dumps[0]);
  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, "crash");
}

}  // namespace
}  // namespace lookback::testing
