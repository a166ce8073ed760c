// lookback attach PID [record's flags]: trace a JVM that was started without
// lookback (docs/jvm.md, "Attaching to a running JVM"). The agent is loaded
// through HotSpot's attach mechanism (jvm_attach.h), loads the runtime with
// the settings given here, and rewrites the classes already loaded with
// RetransformClasses; from then on the JVM is traced as if started under
// `lookback record`.
#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/jvm_attach.h"
#include "cli/record_options.h"

namespace lookback::cli {
namespace {

struct AttachOptions {
  pid_t pid = 0;
  int timeout_s = 120;
};

// Process `pid` runs a JVM: it has mapped libjvm.so.
bool IsJvm(pid_t pid) {
  FILE* maps = fopen(("/proc/" + std::to_string(pid) + "/maps").c_str(), "re");
  if (maps == nullptr) return false;
  char line[4096];
  bool jvm = false;
  while (!jvm && fgets(line, sizeof line, maps) != nullptr) jvm = strstr(line, "/libjvm.so") != nullptr;
  fclose(maps);
  return jvm;
}

std::string CommandName(pid_t pid) {
  std::string name = "?";
  if (FILE* f = fopen(("/proc/" + std::to_string(pid) + "/comm").c_str(), "re")) {
    char buf[64] = {};
    if (fgets(buf, sizeof buf, f) != nullptr) name = std::string(buf, strcspn(buf, "\n"));
    fclose(f);
  }
  return name;
}

// The JVMs among the descendants of `pid` (a launcher script's process
// tree: groovy, mvn, a bin/start.sh), from /proc's parent links.
std::vector<pid_t> JvmsBelow(pid_t pid) {
  std::map<pid_t, pid_t> parent;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      const pid_t p = static_cast<pid_t>(atoi(e->d_name));
      if (p <= 0) continue;
      FILE* f = fopen(("/proc/" + std::string(e->d_name) + "/stat").c_str(), "re");
      if (f == nullptr) continue;
      char buf[1024] = {};
      const size_t n = fread(buf, 1, sizeof buf - 1, f);
      fclose(f);
      const char* close_paren = strrchr(buf, ')');  // the name may hold spaces and parentheses
      int ppid = 0;
      if (n > 0 && close_paren != nullptr && sscanf(close_paren + 1, " %*c %d", &ppid) == 1) parent[p] = ppid;
    }
    closedir(d);
  }
  std::vector<pid_t> out;
  for (const auto& [p, pp] : parent) {
    bool below = false;
    for (pid_t up = pp, hops = 0; up > 1 && hops < 64 && !below; ++hops) {
      below = up == pid;
      auto it = parent.find(up);
      up = it == parent.end() ? 0 : it->second;
    }
    if (below && IsJvm(p)) out.push_back(p);
  }
  return out;
}

Outcome Run(const AttachOptions& given, const RecordOptions& o) {
  AttachOptions a = given;
  if (!IsJvm(a.pid)) {
    // A launcher script (or any program) whose JVM runs below it.
    const std::vector<pid_t> jvms = JvmsBelow(a.pid);
    if (jvms.empty()) {
      return Outcome::Usage("process " + std::to_string(a.pid) + " (" + CommandName(a.pid) +
                  ") is not a JVM and runs none (no libjvm.so in it or below it)");
    }
    if (jvms.size() > 1) {
      std::string list;
      for (pid_t p : jvms) list += " " + std::to_string(p) + " (" + CommandName(p) + ")";
      return Outcome::Usage("process " + std::to_string(a.pid) + " runs several JVMs; attach to one of them:" + list);
    }
    if (!o.quiet) {
      fprintf(stderr, "lookback: %d (%s) is not a JVM; attaching to the JVM it runs, pid %d\n",
              static_cast<int>(a.pid), CommandName(a.pid).c_str(), static_cast<int>(jvms[0]));
    }
    a.pid = jvms[0];
  }
  if (Outcome out = CheckRecorderFlags(o); !out.ok()) return out;
  if (o.sample_alloc) return Outcome::Usage("--sample-alloc needs the allocator preloaded at start: use lookback record");
  if (o.jvm_mode != "inline") {
    return Outcome::Usage("--jvm-mode listener cannot attach: HotSpot gives JVMTI method events only to an agent loaded at "
                "the JVM's start (use lookback record); attach uses inline mode");
  }
  const std::string agent = FindJvmAgent();
  if (agent.empty()) return Outcome::Error("cannot find liblookback-jvm.so next to liblookback.so");
  // Agent options: mode, globs, then every runtime setting as key=value
  // (the agent turns them back into LOOKBACK_* variables; ',' in a value
  // travels as ';').
  std::string options = "mode=" + o.jvm_mode;
  for (const std::string& g : o.jvm_include) options += ",include=" + g;
  for (const std::string& g : o.jvm_exclude) options += ",exclude=" + g;
  if (o.jvm_probe_inlined) options += ",inlined=probe";
  if (o.jvm_writes != "java") options += ",writes=" + o.jvm_writes;
  for (auto [var, value] : RecorderSettings(o, Absolute(o.dir))) {
    std::string key = var.substr(9);  // LOOKBACK_
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : value) c = c == ',' ? ';' : c;
    options += "," + key + "=" + value;
  }
  const Result<int> r = LoadAgent(a.pid, agent, options, a.timeout_s);
  if (!r.ok()) return Outcome::Error(r.error().message);
  if (r.value() != 0) return Outcome::Error(AgentResultText(r.value()));
  if (!o.quiet) {
    fprintf(stderr, "lookback: attached to JVM %d (%s mode); dumps go to %s\n", static_cast<int>(a.pid),
            o.jvm_mode.c_str(), Absolute(o.dir).c_str());
  }
  return Outcome::Ok();
}

}  // namespace

Runner SetupAttach(CLI::App* sub) {
  auto a = std::make_shared<AttachOptions>();
  auto o = std::make_shared<RecordOptions>();
  sub->add_option("pid", a->pid, "The JVM's process id, or that of a program (a launcher script) running one JVM")
      ->required();
  sub->add_option("--timeout", a->timeout_s, "Seconds to wait for the JVM to finish attaching")->capture_default_str();
  AddRecorderFlags(sub, o);
  return [a, o] { return Run(*a, *o); };
}

}  // namespace lookback::cli
