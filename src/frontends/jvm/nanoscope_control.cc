// Nanoscope's Java control (its wiki, "Java API"): a Java thread starts and
// stops its own trace by renaming itself, which any app can do without a new
// API:
//   Thread.currentThread().setName("START_TRACING");
//   Thread.currentThread().setName("STOP_TRACING:/path/to/trace.txt");
// Neither call changes the thread's name (the rename hook returns the name
// the thread already has). START marks where the thread's trace begins and,
// under LOOKBACK_ENABLED=0 (no thread traced until it asks) turns tracing on
// for it; STOP ends the trace (and turns tracing back off if START
// turned it on) and, as Nanoscope does, processes and writes the trace in
// the background: a dump is taken, the thread's calls between START and STOP
// are written in Nanoscope's text format to a temporary file, which is then
// renamed to the path asked for, so the path exists only once complete.
//
// The path must lie inside lookback's dump directory (LOOKBACK_DIR): a
// relative path is taken from there, and a path that leaves it is refused
// with one line on stderr. The trace starts with the frames already open at
// START (flagged, as `convert --window` does), so it is balanced.
//
// The text is written by the `lookback` command (`convert --to nanoscope`),
// run as a child process: the agent itself links no reader, symbolizer or
// exporter (a JVM should load nothing but the recorder to trace), and the
// conversion's memory and libraries stay out of the traced JVM. The command
// is LOOKBACK_CLI (set by `lookback record` and `lookback attach`), else the
// `lookback` beside this library or in ../bin.
#include <dlfcn.h>
#include <jni.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "frontends/jvm/jvm_agent.h"

extern char** environ;

namespace lookback::jvm {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kStart = "START_TRACING";
constexpr std::string_view kStop = "STOP_TRACING:";

thread_local bool t_started = false;       // START_TRACING seen, STOP not yet
thread_local bool t_enabled_here = false;  // START turned tracing on for this thread
thread_local int64_t t_start_ns = 0;       // CLOCK_MONOTONIC at START

// Flushes under way: the JVM's end waits for them (WaitForNanoscopeFlushes).
std::mutex g_flush_mutex;
std::condition_variable g_flush_done;
int g_flushing = 0;

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// `file` resolved against the dump directory; empty if it leaves it.
fs::path ConfinedPath(const std::string& dir, const std::string& file) {
  std::error_code ec;
  const fs::path root = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec || file.empty()) return {};
  fs::path p(file);
  if (p.is_relative()) p = root / p;
  p = fs::weakly_canonical(p, ec);  // resolves "..", and links that exist
  if (ec) return {};
  const auto rel = p.lexically_relative(root);
  if (rel.empty() || rel == "." || *rel.begin() == "..") return {};
  return p;
}

// The `lookback` command, or "" if there is none to be found.
std::string FindCli() {
  if (const char* env = getenv("LOOKBACK_CLI"); env != nullptr && access(env, X_OK) == 0) return env;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&FindCli), &self) == 0 || self.dli_fname == nullptr) return "";
  const fs::path dir = fs::path(self.dli_fname).parent_path();
  for (const fs::path& p : {dir / "lookback", dir / ".." / "bin" / "lookback"}) {
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// Runs argv with the JVM's environment less LD_PRELOAD (the command need not
// carry the recorder) and waits for it; returns its exit status or -1.
int RunAndWait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (strncmp(*e, "LD_PRELOAD=", 11) != 0) env.push_back(*e);
  }
  env.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, args[0], nullptr, nullptr, args.data(), env.data()) != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// On a thread of its own: dump, write the thread's window as Nanoscope text
// to a temporary directory beside the target, rename it into place.
void Flush(uint32_t tid, int64_t start_ns, int64_t stop_ns, fs::path target) {
  char path[4096];
  g_stats.Publish();  // the dump's `jvm` note with every class counted
  if (g_runtime.dump_sync("nanoscope STOP_TRACING", path, sizeof path) != 0) {
    Say(std::string("STOP_TRACING: no trace written to ") + target.string() + ": the dump failed (" + path + ")");
    return;
  }
  std::error_code ec;
  const std::string cli = FindCli();
  std::string error;
  if (cli.empty()) error = "cannot find the lookback command to write it (set LOOKBACK_CLI)";
  const fs::path tmp = target.parent_path() / (".lookback-nanoscope-" + std::to_string(tid) + "-" +
                                               std::to_string(stop_ns));
  fs::create_directories(target.parent_path(), ec);
  if (error.empty()) {
    // The window in the process's own CLOCK_MONOTONIC, as noted at START and STOP.
    const std::string window = "monotonic:" + (start_ns > 0 ? std::to_string(start_ns) : "") + ".." +
                               std::to_string(stop_ns);
    const int rc = RunAndWait({cli, "convert", path, "--to", "nanoscope", "--thread", std::to_string(tid),
                               "--window", window, "-o", tmp.string(), "-q"});
    if (rc != 0) error = "lookback convert " + std::string(path) + " failed (" + std::to_string(rc) + ")";
  }
  fs::path written;
  if (error.empty()) {
    for (const auto& e : fs::directory_iterator(tmp, ec)) {
      if (e.path().extension() == ".txt") written = e.path();
    }
    if (written.empty()) error = "thread " + std::to_string(tid) + " is not in the dump";
  }
  if (error.empty()) {
    fs::rename(written, target, ec);
    if (ec) error = "cannot move the trace to " + target.string() + ": " + ec.message();
  }
  fs::remove_all(tmp, ec);
  fs::remove(path, ec);  // the dump served only this trace
  if (!error.empty()) Say("STOP_TRACING: no trace written: " + error);
}

void FlushAndCount(uint32_t tid, int64_t start_ns, int64_t stop_ns, fs::path target) {
  Flush(tid, start_ns, stop_ns, std::move(target));
  std::lock_guard<std::mutex> lock(g_flush_mutex);
  --g_flushing;
  g_flush_done.notify_all();
}

}  // namespace

bool OnControlName(JNIEnv* jni, const std::string& name) {
  if (name == kStart) {
    t_started = true;
    t_start_ns = MonotonicNs();
    // Only LOOKBACK_ENABLED=0 leaves a thread off that START can turn on (a
    // thread outside --threads stays outside).
    t_enabled_here = TracingOffAtStart() && g_runtime.is_tracing() == 0;
    if (t_enabled_here) {
      g_runtime.thread_enable();
      EnableProbes(jni);
    }
    return true;
  }
  if (name.rfind(kStop, 0) != 0) return false;
  const int64_t stop_ns = MonotonicNs();
  const int64_t start_ns = t_started ? t_start_ns : 0;  // no START: the whole ring
  if (t_enabled_here) g_runtime.thread_disable();
  t_started = t_enabled_here = false;
  const std::string file = name.substr(kStop.size());
  char dir[4096];
  g_runtime.dump_dir(dir, sizeof dir);
  fs::path target = ConfinedPath(dir, file);
  if (target.empty()) {
    Say("STOP_TRACING:" + file + " refused: the trace file must be inside the dump directory " + dir +
        " (LOOKBACK_DIR)");
    return true;
  }
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  {
    std::lock_guard<std::mutex> lock(g_flush_mutex);
    ++g_flushing;
  }
  std::thread(FlushAndCount, tid, start_ns, stop_ns, std::move(target)).detach();
  return true;
}

void WaitForNanoscopeFlushes() {
  std::unique_lock<std::mutex> lock(g_flush_mutex);
  if (!g_flush_done.wait_for(lock, std::chrono::seconds(10), [] { return g_flushing == 0; })) {
    Say("STOP_TRACING: the JVM ends while a trace is still being written");
  }
}

}  // namespace lookback::jvm
