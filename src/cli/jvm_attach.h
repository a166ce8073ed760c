// HotSpot's dynamic attach, as `jcmd` and the Attach API use it: load an
// agent library into a running JVM (`lookback attach`, `lookback detach`).
#pragma once

#include <sys/types.h>

#include <string>

namespace lookback::cli {

struct AttachOutcome {
  std::string error;    // "" when the JVM ran Agent_OnAttach
  int agent_result = 0;  // what Agent_OnAttach returned
};

// Loads `agent` (an absolute path) into JVM `pid` with `options`, waiting at
// most `timeout_s` for the JVM to answer (the agent's start-up, which
// rewrites every loaded class, is part of it).
AttachOutcome LoadAgent(pid_t pid, const std::string& agent, const std::string& options, int timeout_s);

// What a non-zero value of Agent_OnAttach (agent.cc, AttachResult) means.
std::string AgentResultText(int code);

// liblookback-jvm.so beside the runtime FindRuntime() finds; "" if missing.
std::string FindJvmAgent();

}  // namespace lookback::cli
