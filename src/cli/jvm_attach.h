// HotSpot's dynamic attach, as `jcmd` and the Attach API use it: load an
// agent library into a running JVM (`lookback attach`, `lookback detach`).
#pragma once

#include <sys/types.h>

#include <string>

#include "common/result.h"

namespace lookback::cli {

// Loads `agent` (an absolute path) into JVM `pid` with `options`, waiting at
// most `timeout_s` for the JVM to answer (the agent's start-up, which
// rewrites every loaded class, is part of it). The value is what the agent's
// Agent_OnAttach returned; an error, why the JVM did not run it.
Result<int> LoadAgent(pid_t pid, const std::string& agent, const std::string& options, int timeout_s);

// What a non-zero value of Agent_OnAttach (agent.cc, AttachResult) means.
std::string AgentResultText(int code);

// liblookback-jvm.so beside the runtime FindRuntime() finds; "" if missing.
std::string FindJvmAgent();

}  // namespace lookback::cli
