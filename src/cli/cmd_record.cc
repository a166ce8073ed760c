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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/record_options.h"
#include "runtime/config.h"

namespace lookback::cli {
namespace {

// `java`, or any path ending in /java.
bool IsJavaLauncher(const std::string& program) {
  return program == "java" || (program.size() > 5 && program.compare(program.size() - 5, 5, "/java") == 0);
}

bool Mentions(const std::vector<std::string>& args, const char* what) {
  for (const std::string& a : args) {
    if (a.find(what) != std::string::npos) return true;
  }
  return false;
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
  if (int rc = CheckRecorderFlags(o); rc != kExitOk) return rc;
  if (o.command.empty()) return Fail("record needs a program to run: lookback record [options] -- PROGRAM [ARGS...]"), kExitUsage;
  const std::string runtime = FindRuntime();
  if (runtime.empty())
    return Fail("cannot find liblookback.so next to this lookback or in ../lib (set LOOKBACK_LIBRARY)"), kExitError;

  const std::string dir = Absolute(o.dir);
  const std::set<std::string> before = ListDumps(dir);
  std::string preload = runtime;
  if (o.sample_alloc) {  // liblookback-alloc.so lives beside liblookback.so
    const std::string alloc = runtime.substr(0, runtime.rfind('/') + 1) + "liblookback-alloc.so";
    if (access(alloc.c_str(), R_OK) != 0) return Fail("--sample-alloc: cannot find " + alloc), kExitError;
    preload = alloc + ":" + preload;
  }
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [var, value] : RecorderSettings(o, dir)) setenv(var.c_str(), value.c_str(), 1);

  // A JVM: add the agent (docs/jvm.md) right after the launcher's name, so it
  // is loaded before any class and tracing starts before main.
  std::vector<std::string> command = o.command;
  if (IsJavaLauncher(command[0])) {
    const std::string agent = runtime.substr(0, runtime.rfind('/') + 1) + "liblookback-jvm.so";
    if (access(agent.c_str(), R_OK) != 0) return Fail("the program is a JVM, but " + agent + " is missing"), kExitError;
    std::string agent_options = "mode=" + o.jvm_mode;
    for (const std::string& g : o.jvm_include) agent_options += ",include=" + g;
    for (const std::string& g : o.jvm_exclude) agent_options += ",exclude=" + g;
    if (o.jvm_probe_inlined) agent_options += ",inlined=probe";
    std::vector<std::string> jvm_flags = {"-agentpath:" + agent + "=" + agent_options};
    // The cheapest call from Java into the recorder (natives.cc); JDK 17
    // prints one deprecation warning for it.
    if (o.jvm_mode == "inline" && !Mentions(command, "CriticalJNINatives")) jvm_flags.push_back("-XX:+CriticalJNINatives");
    command.insert(command.begin() + 1, jvm_flags.begin(), jvm_flags.end());
    // HotSpot takes SIGUSR2 for itself (thread suspend/resume) after lookback
    // has started: a JVM's default dump signal is SIGPWR, which it leaves alone.
    if (o.dump_signal.empty()) setenv("LOOKBACK_DUMP_SIGNAL", "PWR", 1);
  }
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
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
  AddRecorderFlags(sub, o);
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
