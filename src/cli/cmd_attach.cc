// lookback attach PID [record's flags]: trace a JVM that was started without
// lookback (docs/jvm.md, "Attaching to a running JVM"). The agent is loaded
// through HotSpot's attach mechanism (jvm_attach.h), loads the runtime with
// the settings given here, and rewrites the classes already loaded with
// RetransformClasses; from then on the JVM is traced as if started under
// `lookback record`.
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "cli/jvm_attach.h"
#include "cli/record_options.h"

namespace lookback::cli {
namespace {

struct AttachOptions {
  pid_t pid = 0;
  int timeout_s = 120;
};

int Run(const AttachOptions& a, const RecordOptions& o) {
  if (int rc = CheckRecorderFlags(o); rc != kExitOk) return rc;
  if (o.sample_alloc) return Fail("--sample-alloc needs the allocator preloaded at start: use lookback record"), kExitUsage;
  if (o.jvm_mode != "inline") {
    return Fail("--jvm-mode listener cannot attach: HotSpot gives JVMTI method events only to an agent loaded at "
                "the JVM's start (use lookback record); attach uses inline mode"),
           kExitUsage;
  }
  const std::string agent = FindJvmAgent();
  if (agent.empty()) return Fail("cannot find liblookback-jvm.so next to liblookback.so"), kExitError;
  // Agent options: mode, globs, then every runtime setting as key=value
  // (the agent turns them back into LOOKBACK_* variables; ',' in a value
  // travels as ';').
  std::string options = "mode=" + o.jvm_mode;
  for (const std::string& g : o.jvm_include) options += ",include=" + g;
  for (const std::string& g : o.jvm_exclude) options += ",exclude=" + g;
  if (o.jvm_probe_inlined) options += ",inlined=probe";
  for (auto [var, value] : RecorderSettings(o, Absolute(o.dir))) {
    std::string key = var.substr(9);  // LOOKBACK_
    for (char& c : key) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (char& c : value) c = c == ',' ? ';' : c;
    options += "," + key + "=" + value;
  }
  const AttachOutcome r = LoadAgent(a.pid, agent, options, a.timeout_s);
  if (!r.error.empty()) return Fail(r.error), kExitError;
  if (r.agent_result != 0) return Fail(AgentResultText(r.agent_result)), kExitError;
  if (!o.quiet) {
    fprintf(stderr, "lookback: attached to JVM %d (%s mode); dumps go to %s\n", static_cast<int>(a.pid),
            o.jvm_mode.c_str(), Absolute(o.dir).c_str());
  }
  return kExitOk;
}

}  // namespace

Runner SetupAttach(CLI::App* sub) {
  auto a = std::make_shared<AttachOptions>();
  auto o = std::make_shared<RecordOptions>();
  sub->add_option("pid", a->pid, "The JVM's process id")->required();
  sub->add_option("--timeout", a->timeout_s, "Seconds to wait for the JVM to finish attaching")->capture_default_str();
  AddRecorderFlags(sub, o);
  return [a, o] { return Run(*a, *o); };
}

}  // namespace lookback::cli
