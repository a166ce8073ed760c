#include "harness.h"

#include "../scratch_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace lookback::testing {
namespace {
// Every test expects its program's run to be a first run: the JVM agent's
// shed memory (docs/jvm.md, "The shed memory") would start a program's later
// runs without the probes of what its earlier ones shed. The memory's own
// tests name a directory of their own (--jvm-shed-memory DIR beats this).
const bool kNoShedMemory = [] { return setenv("LOOKBACK_JVM_SHED_MEMORY", "off", 0) == 0; }();
std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

std::string Cli() { return LOOKBACK_CLI; }
std::string Program(const std::string& name) { return std::string(LOOKBACK_PROGRAMS) + "/" + name; }

std::string FreshDir(const std::string& name) { return ScratchDir(name); }

std::vector<std::string> ListFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Dumps(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& n : ListFiles(dir)) {
    if (n.size() > 4 && n.substr(n.size() - 4) == ".lbk" && n[0] != '.') out.push_back(dir + "/" + n);
  }
  return out;
}

RunResult RunProgram(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              const std::string& cwd, int timeout_s) {
  RunResult r;
  char out_tmpl[] = "/tmp/lookback-test-out-XXXXXX";
  char err_tmpl[] = "/tmp/lookback-test-err-XXXXXX";
  const int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "timed out: " << argv[0];
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  close(out_fd);
  close(err_fd);
  r.out = Slurp(out_tmpl);
  r.err = Slurp(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

std::map<uint32_t, std::vector<TEvent>> DumpEvents(const format::Dump& d) {
  std::map<uint32_t, std::vector<TEvent>> out;
  for (const auto& t : d.threads) {
    auto& v = out[t.tid];
    model::DecodeThread(d, t, [&](const model::Event& e) {
      if (e.kind != model::EventKind::kResume) v.push_back({e.kind == model::EventKind::kExit, e.key});
    });
  }
  return out;
}

std::map<uint32_t, std::vector<TEvent>> GroundTruth(const std::string& path) {
  std::map<uint32_t, std::vector<TEvent>> out;
  std::ifstream f(path);
  uint32_t tid;
  std::string kind, addr;
  while (f >> tid >> kind >> addr) out[tid].push_back({kind == "EXIT", std::stoull(addr, nullptr, 16)});
  return out;
}

format::Dump MustOpen(const std::string& path) {
  auto d = format::Dump::Open(path);
  if (!d.ok()) {
    ADD_FAILURE() << path << ": " << d.error().ToString();
    return format::Dump{};
  }
  return std::move(d.value());
}

const format::ThreadInfo* FindThread(const format::Dump& d, const std::string& name) {
  for (const auto& t : d.threads) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

Background StartReadingStdout(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) {
  Background b;
  int fds[2];
  if (pipe(fds) != 0) return b;
  b.pid = fork();
  if (b.pid == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    dup2(fds[1], 1);
    close(fds[0]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  b.out = fdopen(fds[0], "r");
  return b;
}

}  // namespace lookback::testing
