// lookback record: run a program with liblookback preloaded and report the
// dumps it wrote. Flags map one-to-one onto LOOKBACK_* variables.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/config.h"

namespace lookback::cli {
namespace {

struct RecordOptions {
  std::string dir = "lookback-dumps";
  std::string buffer_size, threads, max_threads, max_memory, keep_exited, dump_signal;
  bool no_exit_dump = false;
  bool quiet = false;
  std::vector<std::string> command;
};

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string FindRuntime() {
  if (const char* env = getenv("LOOKBACK_LIBRARY"); env && *env) return env;
  const std::string self = SelfDir();
  for (const std::string& cand : {self + "/liblookback.so", self + "/../lib/liblookback.so",
                                  self + "/../lib/x86_64-linux-gnu/liblookback.so"}) {
    if (access(cand.c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return realpath(cand.c_str(), real) ? std::string(real) : cand;
    }
  }
  return {};
}

std::string Absolute(const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  char cwd[PATH_MAX];
  return getcwd(cwd, sizeof cwd) ? std::string(cwd) + "/" + p : p;
}

std::set<std::string> ListDumps(const std::string& dir) {
  std::set<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".lbk") == 0 && n[0] != '.') out.insert(n);
    }
    closedir(d);
  }
  return out;
}

pid_t g_child = 0;
void Forward(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

int Run(const RecordOptions& o) {
  // Check every value here so a typo fails now, not silently in the child.
  uint64_t size = 0;
  int sig = 0;
  bool b = false;
  (void)b;
  if (!o.buffer_size.empty() && !rt::ParseSize(o.buffer_size, &size))
    return Fail("--buffer-size '" + o.buffer_size + "' is not a size (examples: 65536, 512K, 8M)"), kExitUsage;
  if (!o.max_memory.empty() && !rt::ParseSize(o.max_memory, &size))
    return Fail("--max-memory '" + o.max_memory + "' is not a size (examples: 512M, 2G)"), kExitUsage;
  if (!o.dump_signal.empty() && !rt::ParseSignal(o.dump_signal, &sig))
    return Fail("--dump-signal '" + o.dump_signal + "' is not a signal (examples: USR1, SIGUSR2, 0)"), kExitUsage;
  for (const auto& [flag, value] : {std::pair{"--max-threads", o.max_threads}, {"--keep-exited", o.keep_exited}}) {
    if (!value.empty() && value.find_first_not_of("0123456789") != std::string::npos)
      return Fail(std::string(flag) + " '" + value + "' is not a whole number"), kExitUsage;
  }
  if (o.command.empty()) return Fail("record needs a program to run: lookback record [options] -- PROGRAM [ARGS...]"), kExitUsage;
  const std::string runtime = FindRuntime();
  if (runtime.empty())
    return Fail("cannot find liblookback.so next to this lookback or in ../lib (set LOOKBACK_LIBRARY)"), kExitError;

  const std::string dir = Absolute(o.dir);
  const std::set<std::string> before = ListDumps(dir);
  std::string preload = runtime;
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  setenv("LOOKBACK_DIR", dir.c_str(), 1);
  setenv("LOOKBACK_DUMP_AT_EXIT", o.no_exit_dump ? "0" : "1", 1);
  auto set_if = [](const char* var, const std::string& v) {
    if (!v.empty()) setenv(var, v.c_str(), 1);
  };
  set_if("LOOKBACK_BUFFER_SIZE", o.buffer_size);
  set_if("LOOKBACK_THREADS", o.threads);
  set_if("LOOKBACK_MAX_THREADS", o.max_threads);
  set_if("LOOKBACK_MAX_MEMORY", o.max_memory);
  set_if("LOOKBACK_KEEP_EXITED", o.keep_exited);
  set_if("LOOKBACK_DUMP_SIGNAL", o.dump_signal);
  if (o.quiet) setenv("LOOKBACK_QUIET", "1", 1);

  std::vector<char*> argv;
  for (const auto& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  g_child = fork();
  if (g_child < 0) return Fail(std::string("fork: ") + strerror(errno)), kExitError;
  if (g_child == 0) {
    execvp(argv[0], argv.data());
    fprintf(stderr, "lookback: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  // Ctrl-C and friends go to the program; we wait for it to finish its dump.
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) signal(s, Forward);
  int status = 0;
  while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  const std::set<std::string> after = ListDumps(dir);
  int written = 0;
  for (const auto& n : after) {
    if (before.count(n)) continue;
    ++written;
    if (!o.quiet) fprintf(stderr, "lookback: dump written: %s/%s\n", dir.c_str(), n.c_str());
  }
  if (written == 0 && !o.quiet)
    fprintf(stderr,
            "lookback: no dump was written. Was the program built with -finstrument-functions "
            "(or -finstrument-functions-after-inlining with clang)?\n");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitError;
}

}  // namespace

Runner SetupRecord(CLI::App* sub) {
  auto o = std::make_shared<RecordOptions>();
  sub->add_option("--dir", o->dir, "Directory for dumps (LOOKBACK_DIR)")->capture_default_str();
  sub->add_option("--buffer-size", o->buffer_size, "Ring size per thread, power of two (LOOKBACK_BUFFER_SIZE, default 8M)");
  sub->add_option("--threads", o->threads, "Comma-separated name globs of threads to trace (LOOKBACK_THREADS, default all)");
  sub->add_option("--max-threads", o->max_threads, "Rings at once, live and kept (LOOKBACK_MAX_THREADS, default 256)");
  sub->add_option("--max-memory", o->max_memory, "Cap on all rings together (LOOKBACK_MAX_MEMORY, default 1G)");
  sub->add_option("--keep-exited", o->keep_exited, "Rings of exited threads kept for dumps (LOOKBACK_KEEP_EXITED, default 8)");
  sub->add_option("--dump-signal", o->dump_signal, "Signal that requests a dump; 0 for none (LOOKBACK_DUMP_SIGNAL, default USR2 if unused)");
  sub->add_flag("--no-exit-dump", o->no_exit_dump, "Do not dump when the program exits");
  sub->add_flag("-q,--quiet", o->quiet, "Print nothing but errors");
  sub->allow_extras();
  sub->prefix_command();  // everything from the program's name on belongs to the program
  sub->footer("Usage: lookback record [OPTIONS] [--] PROGRAM [ARGS...]");
  return [o, sub] {
    o->command = sub->remaining();
    if (!o->command.empty() && o->command.front() == "--") o->command.erase(o->command.begin());
    return Run(*o);
  };
}

}  // namespace lookback::cli
