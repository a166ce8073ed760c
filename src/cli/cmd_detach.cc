// lookback detach PID: loads the agent again with the option "detach", which
// switches the probes off and retransforms every class back to its original
// bytes (agent.cc, Detach). The runtime stays in the JVM, so what was
// recorded can still be dumped (docs/jvm.md, "Attaching to a running JVM").
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/jvm_attach.h"

namespace lookback::cli {

Runner SetupDetach(CLI::App* sub) {
  auto pid = std::make_shared<pid_t>(0);
  auto timeout = std::make_shared<int>(120);
  sub->add_option("pid", *pid, "The JVM's process id")->required();
  sub->add_option("--timeout", *timeout, "Seconds to wait for the JVM")->capture_default_str();
  return [pid, timeout] {
    const std::string agent = FindJvmAgent();
    if (agent.empty()) return Outcome::Error("cannot find liblookback-jvm.so next to liblookback.so");
    const Result<int> r = LoadAgent(*pid, agent, "detach", *timeout);
    if (!r.ok()) return Outcome::Error(r.error().message);
    if (r.value() != 0) return Outcome::Error(AgentResultText(r.value()));
    fprintf(stderr, "lookback: detached from JVM %d: its classes are back to their original code\n",
            static_cast<int>(*pid));
    return Outcome::Ok();
  };
}

}  // namespace lookback::cli
