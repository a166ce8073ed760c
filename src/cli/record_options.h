// The recorder's settings as `record` and `attach` take them: flags that map
// one-to-one onto the LOOKBACK_* variables (README's table), checked with the
// runtime's own parser before anything starts.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"

namespace lookback::cli {

struct RecordOptions {
  std::string dir = "lookback-dumps";
  std::string buffer_size, threads, max_threads, max_memory, keep_exited, dump_signal, dump_memory;
  std::string sample, sample_interval, state_interval, sample_signal;  // docs/sampling.md
  bool sample_alloc = false;
  bool no_exit_dump = false;
  bool no_crash = false;
  bool quiet = false;
  std::string jvm_mode = "inline";  // docs/jvm.md
  std::vector<std::string> jvm_include, jvm_exclude;
  bool jvm_probe_inlined = false;  // probes in methods C2 always inlines too (agent option inlined=probe)
  std::string jvm_startup = "defer";  // agent option startup=: defer, skip, sync or async (docs/jvm.md)
  std::string jvm_cache;             // agent option cache=: a directory or off; empty: the agent's default
  std::string jvm_shed_memory;       // agent option shed_memory=: a directory or off; empty: the agent's default
  std::string jvm_writes = "java";   // agent option writes=: java or native (docs/jvm.md)
  // Trigger flags: variable -> value, checked by the runtime's own parser.
  std::map<std::string, std::string> triggers;
  std::vector<std::string> command;
};

// Declares the flags on `sub` (record's and attach's).
void AddRecorderFlags(CLI::App* sub, const std::shared_ptr<RecordOptions>& o);
// kUsage naming the flag that is wrong.
Outcome CheckRecorderFlags(const RecordOptions& o);
// The LOOKBACK_* settings the flags give, with the dump directory `dir`.
std::vector<std::pair<std::string, std::string>> RecorderSettings(const RecordOptions& o, const std::string& dir);

// liblookback.so beside this lookback, or in ../lib; LOOKBACK_LIBRARY overrides. "" if none.
std::string FindRuntime();
// `p` made absolute against the working directory.
std::string Absolute(const std::string& p);

}  // namespace lookback::cli
