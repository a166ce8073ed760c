// lookback record: run a program with liblookback preloaded and report the
// dumps it wrote. Flags map one-to-one onto LOOKBACK_* variables.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/record_options.h"
#include "format/reader.h"
#include "runtime/config.h"
#include "runtime/jvm_launcher.h"

namespace lookback::cli {
namespace {

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

// The flags that load the JVM agent (docs/jvm.md), put right after a JVM
// launcher's name so that the agent is loaded before any class and tracing
// starts before main.
std::vector<std::string> JvmFlags(const RecordOptions& o, const std::string& agent) {
  std::string agent_options = "mode=" + o.jvm_mode;
  for (const std::string& g : o.jvm_include) agent_options += ",include=" + g;
  for (const std::string& g : o.jvm_exclude) agent_options += ",exclude=" + g;
  if (o.jvm_probe_inlined) agent_options += ",inlined=probe";
  if (o.jvm_startup != "defer") agent_options += ",startup=" + o.jvm_startup;
  if (o.jvm_writes != "java") agent_options += ",writes=" + o.jvm_writes;
  if (!o.jvm_cache.empty()) agent_options += ",cache=" + o.jvm_cache;
  if (!o.jvm_shed_memory.empty()) agent_options += ",shed_memory=" + o.jvm_shed_memory;
  return {"-agentpath:" + agent + "=" + agent_options};
}

// -XX:+CriticalJNINatives, the cheapest call from Java into the recorder
// (natives.cc), exists up to JDK 17 (whose deprecation warning for it
// lb_critical_natives_flags keeps off stderr); JDK 18 removed it, and a JVM
// refuses to start with a flag it does not know. So it goes only to
// launchers of JDK 17 or older: here for a
// `java` command, in exec_hooks.c (LOOKBACK_JVM_CRITICAL) for JVMs the
// command starts.
bool WantsCriticalNatives(const RecordOptions& o, const std::vector<std::string>& command) {
  return o.jvm_mode == "inline" && !Mentions(command, "CriticalJNINatives");
}

// What the command's processes told us (LOOKBACK_RECORD_EVENTS): the JVM
// agent when it starts, "jvm-started PID EXE" (frontends/jvm/agent.cc), and
// the runtime at the exit of a JVM that never loaded it, "jvm-untraced PID
// EXE", of a JVM that had it but recorded no call, "jvm-empty PID EXE", and of
// any instrumented process whose threads --threads all left out, "unselected
// PID EXE" (runtime/runtime.cc, NoteAtExit).
struct JvmEvent {
  bool traced;
  long pid;
  std::string program;
  bool empty = false;  // traced, but no thread recorded a call (so no exit dump)
  bool unselected = false;  // instrumented, but --threads selected none of its threads
  bool jvm = true;          // a JVM (else a native process that only said `unselected`)
};

std::vector<JvmEvent> ReadJvmEvents(const std::string& path) {
  std::vector<JvmEvent> out;
  FILE* f = fopen(path.c_str(), "re");
  if (f == nullptr) return out;
  char line[4300];
  while (fgets(line, sizeof line, f) != nullptr) {
    char kind[32], program[4200];
    long pid = 0;
    if (sscanf(line, "%31s %ld %4199[^\n]", kind, &pid, program) != 3) continue;
    if (strcmp(kind, "jvm-started") == 0) out.push_back({true, pid, program});
    if (strcmp(kind, "traced") == 0) {  // any traced process; a JVM said jvm-started before
      bool known = false;
      for (const JvmEvent& j : out) known = known || j.pid == pid;
      if (!known) out.push_back({true, pid, program, false, false, false});
    }
    if (strcmp(kind, "jvm-untraced") == 0) out.push_back({false, pid, program});
    const bool unselected = strcmp(kind, "unselected") == 0;
    if (unselected || strcmp(kind, "jvm-empty") == 0) {
      bool known = false;
      for (JvmEvent& j : out) {
        if (!j.traced || j.pid != pid) continue;
        known = j.empty = true;
        j.unselected = j.unselected || unselected;
      }
      // A process other than a JVM has no jvm-started line before.
      if (!known && unselected) out.push_back({true, pid, program, true, true, false});
    }
  }
  fclose(f);
  return out;
}

// A dump of process `pid`: dumps are named PROGRAM-PID-SEQ.lbk.
bool IsDumpOf(const std::string& name, long pid) {
  const std::string mark = "-" + std::to_string(pid) + "-";
  const size_t at = name.rfind(mark);
  return at != std::string::npos && name.find('-', at + mark.size()) == std::string::npos;
}

pid_t g_child = 0;
// A signal sent to lookback goes on to the program, but one the terminal sent
// (Ctrl-C, Ctrl-\, a hang-up: si_code SI_KERNEL) reached the program already
// when it is in lookback's process group, the terminal's foreground group: a
// second copy would make a program that exits at its second Ctrl-C do so at
// the first.
void Forward(int sig, siginfo_t* info, void*) {
  if (g_child <= 0) return;
  const bool from_a_process = info == nullptr || info->si_code <= 0;  // kill(), sigqueue(), tgkill()
  if (from_a_process || getpgid(g_child) != getpgrp()) kill(g_child, sig);
}

Outcome Run(const RecordOptions& o) {
  if (Outcome out = CheckRecorderFlags(o); !out.ok()) return out;
  if (o.command.empty()) return Outcome::Usage("record needs a program to run: lookback record [options] -- PROGRAM [ARGS...]");
  const std::string runtime = FindRuntime();
  if (runtime.empty())
    return Outcome::Error("cannot find liblookback.so next to this lookback or in ../lib (set LOOKBACK_LIBRARY)");

  const std::string dir = Absolute(o.dir);
  const std::set<std::string> before = ListDumps(dir);
  std::string preload = runtime;
  if (o.sample_alloc) {  // liblookback-alloc.so lives beside liblookback.so
    const std::string alloc = runtime.substr(0, runtime.rfind('/') + 1) + "liblookback-alloc.so";
    if (access(alloc.c_str(), R_OK) != 0) return Outcome::Error("--sample-alloc: cannot find " + alloc);
    preload = alloc + ":" + preload;
  }
  if (const char* old = getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);
  for (const auto& [var, value] : RecorderSettings(o, dir)) setenv(var.c_str(), value.c_str(), 1);

  // Every JVM the command starts, itself or through any chain of processes,
  // gets the agent: a `java` command here, any later exec or posix_spawn of
  // a `java` launcher by the exec hooks (exec_hooks.c), with the same flags.
  std::vector<std::string> command = o.command;
  const std::string agent = runtime.substr(0, runtime.rfind('/') + 1) + "liblookback-jvm.so";
  const bool have_agent = access(agent.c_str(), R_OK) == 0;
  // `java` takes the agent's flags as they are, the JDK's tools (javac, jar,
  // jshell, ...) as -J<flag> (runtime/jvm_launcher.h).
  const lb_launcher_kind launcher = lb_classify_launcher(command[0].c_str());
  const bool java_command = launcher != LB_NOT_A_LAUNCHER;
  if (java_command && !have_agent) return Outcome::Error("the program is a JVM, but " + agent + " is missing");
  std::string events_path;
  if (have_agent) {
    const std::vector<std::string> jvm_flags = JvmFlags(o, agent);
    std::string joined;
    for (const std::string& f : jvm_flags) joined += (joined.empty() ? "" : "\n") + f;
    setenv("LOOKBACK_JVM_FLAGS", joined.c_str(), 1);
    const bool critical = WantsCriticalNatives(o, command);
    if (critical) setenv("LOOKBACK_JVM_CRITICAL", "1", 1);
    if (java_command) {
      const std::string prefix = launcher == LB_JDK_TOOL ? "-J" : "";
      std::vector<std::string> flags;
      for (const std::string& f : jvm_flags) flags.push_back(prefix + f);
      const int release = lb_jdk_release(command[0].c_str());
      if (critical && release > 0 && release <= 17) {
        const char* extra[3];
        const size_t count = lb_critical_natives_flags(launcher, nullptr, extra);
        flags.insert(flags.end(), extra, extra + count);
      }
      command.insert(command.begin() + 1, flags.begin(), flags.end());
    }
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/lookback-record-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = mkstemp(buf.data());
    if (fd >= 0) {
      close(fd);
      events_path = buf.data();
      setenv("LOOKBACK_RECORD_EVENTS", events_path.c_str(), 1);
    }
    // HotSpot takes SIGUSR2 for itself (thread suspend/resume) after lookback
    // has started: a JVM's default dump signal is SIGPWR, which it leaves
    // alone (the runtime chooses it for any process whose program is `java`).
    if (java_command && o.dump_signal.empty()) setenv("LOOKBACK_DUMP_SIGNAL", "PWR", 1);
  }
  std::vector<char*> argv;
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  g_child = fork();
  if (g_child < 0) return Outcome::Error(std::string("fork: ") + strerror(errno));
  if (g_child == 0) {
    execvp(argv[0], argv.data());
    fprintf(stderr, "lookback: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  // Ctrl-C and friends go to the program; we wait for it to finish its dump.
  struct sigaction forward{};
  forward.sa_sigaction = Forward;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(s, &forward, nullptr);
  int status = 0;
  while (waitpid(g_child, &status, 0) < 0 && errno == EINTR) {
  }
  const std::set<std::string> after = ListDumps(dir);
  std::vector<std::string> written;
  for (const auto& n : after) {
    if (before.count(n)) continue;
    written.push_back(n);
    if (o.quiet) continue;
    // What the overhead budget left out, where the user will look first.
    std::string shed;
    if (auto d = format::Dump::Open(dir + "/" + n); d.ok() && !d.value().budget.shed.empty()) {
      const size_t k = d.value().budget.shed.size();
      shed = " (the overhead budget, " + d.value().budget.percent + ", shed " + std::to_string(k) + " function" +
             (k == 1 ? "" : "s") + ": `lookback info` names them; --budget off records every call)";
    }
    fprintf(stderr, "lookback: dump written: %s/%s%s\n", dir.c_str(), n.c_str(), shed.c_str());
  }
  std::vector<JvmEvent> jvms = events_path.empty() ? std::vector<JvmEvent>{} : ReadJvmEvents(events_path);
  if (!events_path.empty()) unlink(events_path.c_str());
  if (!o.quiet) {
    for (const JvmEvent& j : jvms) {
      bool dumped = false;
      for (const std::string& n : written) dumped = dumped || IsDumpOf(n, j.pid);
      if (!j.traced) {
        fprintf(stderr,
                "lookback: a JVM ran untraced (pid %ld, %s): lookback adds its agent to the JVM launchers that "
                "the command starts (`java` and the JDK's tools such as javac); load it with -agentpath:%s, or "
                "`lookback attach %ld` while it runs (docs/jvm.md)\n",
                j.pid, j.program.c_str(), agent.c_str(), j.pid);
      } else if (!dumped && j.unselected) {
        fprintf(stderr,
                "lookback: %s with pid %ld (%s) recorded no call, so it wrote no dump: --threads selected none of "
                "its threads\n",
                j.jvm ? "the JVM" : "the program", j.pid, j.program.c_str());
      } else if (!dumped && j.empty) {
        fprintf(stderr,
                "lookback: the JVM with pid %ld (%s) recorded no call, so it wrote no dump: none of its threads ran a "
                "traced method (do --jvm-include/--jvm-exclude select the methods you meant, and --threads the "
                "threads? docs/jvm.md)\n",
                j.pid, j.program.c_str());
      } else if (!dumped && !o.no_exit_dump) {
        // What ended it, when it is the program record started; else the
        // usual causes (the runtime said on stderr why it could not write).
        std::string why = "it was killed, or ended without exiting normally, or its dump could not be written "
                          "(lookback said why above)";
        if (j.pid == g_child && WIFSIGNALED(status)) {
          why = std::string("it was ended by signal ") + strsignal(WTERMSIG(status)) +
                " (an exit dump is written at a normal exit; crashes are dumped)";
        } else if (j.pid == g_child && WIFEXITED(status)) {
          why = "its dump could not be written (lookback said why above), or it ended with _exit()";
        }
        fprintf(stderr, "lookback: %s with pid %ld (%s) was traced but wrote no dump: %s\n",
                j.jvm ? "the JVM" : "the program", j.pid, j.program.c_str(), why.c_str());
      }
    }
    if (written.empty() && jvms.empty())
      fprintf(stderr,
              "lookback: no dump was written. Was the program built with -finstrument-functions "
              "(or -finstrument-functions-after-inlining with clang)? A JVM started by it would have been traced.\n");
  }
  if (WIFEXITED(status)) return Outcome::Program(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return Outcome::Program(128 + WTERMSIG(status));
  return Outcome::Error();
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
