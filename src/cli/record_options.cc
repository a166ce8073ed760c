// Flags shared by `record` and `attach` (record_options.h).
#include "cli/record_options.h"

#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdlib>

#include "cli/commands.h"
#include "runtime/config.h"

namespace lookback::cli {
namespace {

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

const std::map<std::string, std::string>* g_check_env = nullptr;
const char* CheckEnv(const char* name) {
  auto it = g_check_env->find(name);
  return it == g_check_env->end() ? nullptr : it->second.c_str();
}

}  // namespace

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

Outcome CheckRecorderFlags(const RecordOptions& o) {
  // Check every value here so a typo fails now, not silently in the child.
  uint64_t size = 0;
  int sig = 0;
  if (!o.buffer_size.empty() && !rt::ParseSize(o.buffer_size, &size))
    return Outcome::Usage("--buffer-size '" + o.buffer_size + "' is not a size (examples: 65536, 512K, 8M)");
  if (!o.max_memory.empty() && !rt::ParseSize(o.max_memory, &size))
    return Outcome::Usage("--max-memory '" + o.max_memory + "' is not a size (examples: 512M, 2G)");
  if (!o.dump_memory.empty() && !rt::ParseSize(o.dump_memory, &size))
    return Outcome::Usage("--dump-memory '" + o.dump_memory + "' is not a size (examples: 64M, 1G, 0)");
  if (!o.dump_signal.empty() && !rt::ParseSignal(o.dump_signal, &sig))
    return Outcome::Usage("--dump-signal '" + o.dump_signal + "' is not a signal (examples: USR1, SIGUSR2, 0)");
  for (const auto& [flag, value] : {std::pair{"--max-threads", o.max_threads}, {"--keep-exited", o.keep_exited}}) {
    if (!value.empty() && value.find_first_not_of("0123456789") != std::string::npos)
      return Outcome::Usage(std::string(flag) + " '" + value + "' is not a whole number");
  }
  {
    std::map<std::string, std::string> env = o.triggers;
    for (const auto& [var, value] : {std::pair{"LOOKBACK_SAMPLE", o.sample}, {"LOOKBACK_SAMPLE_INTERVAL", o.sample_interval},
                                     {"LOOKBACK_STATE_INTERVAL", o.state_interval},
                                     {"LOOKBACK_SAMPLE_SIGNAL", o.sample_signal}}) {
      if (!value.empty()) env[var] = value;
    }
    g_check_env = &env;
    std::vector<rt::ConfigProblem> problems;
    rt::ParseConfig(CheckEnv, &problems);
    if (!problems.empty()) {
      // Name the flag the user typed, not only the variable it sets.
      std::string msg = problems.front().message;
      for (const auto& [var, value] : env) {
        if (msg.rfind(var + "=", 0) == 0) {
          std::string flag = "--" + var.substr(9);
          for (auto& c : flag) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          msg = flag + ": " + msg;
        }
      }
      return Outcome::Usage(msg);
    }
  }
  return Outcome::Ok();
}

std::vector<std::pair<std::string, std::string>> RecorderSettings(const RecordOptions& o, const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> s = {{"LOOKBACK_DIR", dir},
                                                        {"LOOKBACK_DUMP_AT_EXIT", o.no_exit_dump ? "0" : "1"}};
  // This command, for the JVM agent, which runs it to write Nanoscope's text
  // at STOP_TRACING (src/frontends/jvm/nanoscope_control.cc).
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) s.emplace_back("LOOKBACK_CLI", std::string(self, static_cast<size_t>(n)));
  auto set_if = [&](const char* var, const std::string& v) {
    if (!v.empty()) s.emplace_back(var, v);
  };
  set_if("LOOKBACK_BUFFER_SIZE", o.buffer_size);
  set_if("LOOKBACK_THREADS", o.threads);
  set_if("LOOKBACK_MAX_THREADS", o.max_threads);
  set_if("LOOKBACK_MAX_MEMORY", o.max_memory);
  set_if("LOOKBACK_KEEP_EXITED", o.keep_exited);
  set_if("LOOKBACK_DUMP_MEMORY", o.dump_memory);
  set_if("LOOKBACK_DUMP_SIGNAL", o.dump_signal);
  set_if("LOOKBACK_SAMPLE", o.sample.empty() && o.sample_alloc ? "cpu" : o.sample);
  set_if("LOOKBACK_SAMPLE_INTERVAL", o.sample_interval);
  set_if("LOOKBACK_STATE_INTERVAL", o.state_interval);
  set_if("LOOKBACK_SAMPLE_SIGNAL", o.sample_signal);
  if (o.quiet) s.emplace_back("LOOKBACK_QUIET", "1");
  if (o.no_crash) s.emplace_back("LOOKBACK_CRASH", "0");
  for (const auto& [var, value] : o.triggers) s.emplace_back(var, value);
  return s;
}

void AddRecorderFlags(CLI::App* sub, const std::shared_ptr<RecordOptions>& o) {
  sub->add_option("--dir", o->dir, "Directory for dumps (LOOKBACK_DIR)")->capture_default_str();
  sub->add_option("--buffer-size", o->buffer_size, "Ring size per thread, power of two (LOOKBACK_BUFFER_SIZE, default 8M)");
  sub->add_option("--threads", o->threads, "Comma-separated name globs of threads to trace (LOOKBACK_THREADS, default all)");
  sub->add_option("--max-threads", o->max_threads, "Rings at once, live and kept (LOOKBACK_MAX_THREADS, default 256)");
  sub->add_option("--max-memory", o->max_memory, "Cap on all rings together (LOOKBACK_MAX_MEMORY, default 1G)");
  sub->add_option("--keep-exited", o->keep_exited, "Rings of exited threads kept for dumps (LOOKBACK_KEEP_EXITED, default 8)");
  sub->add_option("--dump-memory", o->dump_memory,
                  "Most memory a dump's copy of the rings may take; less copies them in batches (LOOKBACK_DUMP_MEMORY, "
                  "default 0: as much as all rings)");
  sub->add_option("--dump-signal", o->dump_signal, "Signal that requests a dump; 0 for none (LOOKBACK_DUMP_SIGNAL, default USR2 if unused)");
  sub->add_flag("--no-exit-dump", o->no_exit_dump, "Do not dump when the program exits");
  // Sampling (docs/sampling.md). A flag, so `--sample wall` cannot take the program's name: write --sample=wall.
  sub->add_flag("--sample{cpu}", o->sample,
                "Sample each thread's CPU time, faults, context switches and memory: --sample (every 1 ms of the "
                "thread's CPU time) or --sample=wall (every 1 ms of wall time) (LOOKBACK_SAMPLE)");
  sub->add_option("--sample-interval", o->sample_interval, "Time between samples (LOOKBACK_SAMPLE_INTERVAL, default 1ms)");
  sub->add_option("--state-interval", o->state_interval,
                  "How often thread states are polled; 0 = never (LOOKBACK_STATE_INTERVAL, default 10ms)");
  sub->add_option("--sample-signal", o->sample_signal, "Signal that drives samples (LOOKBACK_SAMPLE_SIGNAL, default URG)");
  sub->add_flag("--sample-alloc", o->sample_alloc,
                "Also count each thread's allocated and freed bytes (preloads liblookback-alloc.so; implies --sample)");
  // Triggers and policy (docs/triggers.md); repeatable flags join with commas.
  struct TriggerFlag {
    const char* flag;
    const char* var;
    const char* help;
  };
  static const TriggerFlag kTriggerFlags[] = {
      {"--stall", "LOOKBACK_STALL", "THREAD_GLOB:DURATION: dump when such a thread writes no trace point for that long while busy"},
      {"--exclude", "LOOKBACK_EXCLUDE", "FUNCTION_GLOB: do not record calls of matching functions (hook builds)"},
      {"--stall-idle", "LOOKBACK_STALL_IDLE", "FUNCTION_GLOB: a thread waiting inside it is idle, not stalled"},
      {"--slow-scope", "LOOKBACK_SLOW_SCOPE", "SCOPE:DURATION: dump when a scope (LOOKBACK_SCOPE) runs longer"},
      {"--slow-call", "LOOKBACK_SLOW_CALL", "FUNCTION_GLOB:DURATION: dump when a call of such a function runs longer"},
      {"--post-trigger", "LOOKBACK_POST_TRIGGER", "Keep recording this long after a trigger, then dump (default 0)"},
      {"--window", "LOOKBACK_WINDOW", "Dumps keep only this much time before the snapshot (default: all)"},
      {"--rate-limit", "LOOKBACK_RATE_LIMIT", "Dumps per hour per detector: N or detector=N,... (default 12; 0 = no limit)"},
      {"--cooldown", "LOOKBACK_COOLDOWN", "Least time between dumps of one detector (default 10s)"},
      {"--max-dumps", "LOOKBACK_MAX_DUMPS", "Keep at most this many dumps in --dir, oldest deleted first (default 100)"},
      {"--max-dump-bytes", "LOOKBACK_MAX_DUMP_BYTES", "Keep at most this many bytes of dumps in --dir (default 4G)"},
      {"--host", "LOOKBACK_HOST", "Host name recorded in dumps (default: the machine's; docs/fleet.md)"},
      {"--config", "LOOKBACK_CONFIG", "File of 'name = value' lines (names of the LOOKBACK_* variables)"},
      {"--budget", "LOOKBACK_BUDGET",
       "PERCENT or off: the overhead budget, the share of each thread's CPU time tracing may cost; past it the "
       "hottest shortest functions are shed, and dumps name them (default 3%; off records every call; README)"},
      {"--history", "LOOKBACK_HISTORY",
       "DURATION or off: with the budget on, also shed until each busy thread's ring holds at least this much of "
       "its history, shedding more where needed (default 2s for an 8M ring, the same share of a smaller one; off: the "
       "budget alone; README)"},
      {"--clock", "LOOKBACK_CLOCK",
       "exact (a TSC reading per trace point, default) or fast[:N] (one per N records, and after every deschedule; "
       "timestamps become bounds, README)"},
  };
  for (const TriggerFlag& f : kTriggerFlags) {
    const std::string var = f.var;
    sub->add_option_function<std::vector<std::string>>(
        f.flag,
        [o, var](const std::vector<std::string>& values) {
          std::string joined;
          for (const auto& v : values) joined += (joined.empty() ? "" : ",") + v;
          o->triggers[var] = joined;
        },
        std::string(f.help) + " (" + f.var + ")")
        ->allow_extra_args(false);  // one value per occurrence: never the program's name
  }
  sub->add_flag("--no-crash", o->no_crash, "Do not dump on SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT (LOOKBACK_CRASH=0)");
  sub->add_flag("-q,--quiet", o->quiet, "Print nothing but errors");
  sub->add_option("--jvm-mode", o->jvm_mode,
                  "For a JVM (java ...): inline (probes compiled into every method) or listener (JVMTI events); docs/jvm.md")
      ->check(CLI::IsMember({"inline", "listener"}))
      ->capture_default_str();
  sub->add_option("--jvm-include", o->jvm_include,
                  "For a JVM: trace only methods matching this glob over pkg.Class.method (repeatable)")
      ->allow_extra_args(false);
  sub->add_option("--jvm-exclude", o->jvm_exclude, "For a JVM: do not trace methods matching this glob (repeatable)")
      ->allow_extra_args(false);
  sub->add_flag("--jvm-probe-inlined", o->jvm_probe_inlined,
                "For a JVM: also probe the tiny methods C2 always inlines (<= 35 bytecode bytes, no calls, no loops), "
                "left out by default (agent option inlined=probe); docs/jvm.md");
  sub->add_option("--jvm-startup", o->jvm_startup,
                  "For a JVM: what becomes of the ~260 JDK classes loaded before tracing starts (String, HashMap, ...): "
                  "defer (default: they keep their code and are not traced, as do the launcher's classes loaded before "
                  "the main class; the JDK classes first loaded in the JVM's first second get their probes after it), "
                  "skip (the same, but JDK classes loaded after the main class get probes as they load), sync (they "
                  "get probes before main starts: about 0.1 s more start-up) or async (on an agent thread while main "
                  "runs, their first calls untraced); agent option startup=; docs/jvm.md")
      ->check(CLI::IsMember({"defer", "skip", "sync", "async"}))
      ->capture_default_str();
  sub->add_option("--jvm-cache", o->jvm_cache,
                  "For a JVM: the directory of the cache of rewritten classes, or off (agent option cache=; default "
                  "$XDG_CACHE_HOME/lookback/jvm-classes or ~/.cache/lookback/jvm-classes); docs/jvm.md")
      ->check([](const std::string& v) { return v.find(',') == std::string::npos ? "" : "a directory without ','"; });
  sub->add_option("--jvm-shed-memory", o->jvm_shed_memory,
                  "For a JVM: the directory of the shed memory (the methods the overhead budget shed in earlier runs "
                  "of the same program get no probes from the start), or off (agent option shed_memory=; default "
                  "$XDG_CACHE_HOME/lookback/jvm-shed or ~/.cache/lookback/jvm-shed); docs/jvm.md")
      ->check([](const std::string& v) { return v.find(',') == std::string::npos ? "" : "a directory without ','"; });
  sub->add_option("--jvm-writes", o->jvm_writes,
                  "For a JVM: java (default: the probes write records themselves, the untimed ones of --clock fast "
                  "and, with HotSpot's JFR fast time, the exact clock's timed ones) or native (every record through "
                  "a call into the recorder; agent option writes=); docs/jvm.md")
      ->check(CLI::IsMember({"java", "native"}))
      ->capture_default_str();
}

}  // namespace lookback::cli
