// Runtime configuration, read once from LOOKBACK_* environment variables.
// `lookback record` sets the same variables from its flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lookback::rt {

struct Config {
  std::string dir = "lookback-dumps";      // LOOKBACK_DIR
  uint64_t buffer_bytes = 8ull << 20;      // LOOKBACK_BUFFER_SIZE (rounded up to a power of two)
  std::vector<std::string> thread_patterns;  // LOOKBACK_THREADS (comma-separated globs; empty = all)
  uint32_t max_threads = 256;              // LOOKBACK_MAX_THREADS: rings alive at once (live + kept)
  uint64_t max_memory = 1ull << 30;        // LOOKBACK_MAX_MEMORY: all rings together
  uint32_t keep_exited = 8;                // LOOKBACK_KEEP_EXITED: rings of exited threads kept
  int dump_signal = -1;                    // LOOKBACK_DUMP_SIGNAL: 0 = none; -1 = SIGUSR2 if unhandled
  bool dump_at_exit = false;               // LOOKBACK_DUMP_AT_EXIT
  bool enabled = true;                     // LOOKBACK_ENABLED: 0 traces no thread until lb_thread_enable
  bool quiet = false;                      // LOOKBACK_QUIET: no informational lines on stderr
};

// One environment variable's problem, phrased for the user.
struct ConfigProblem {
  std::string message;
};

// Parses the environment. Bad values keep their defaults and add a problem;
// this never fails and never throws.
Config ParseConfig(const char* (*getenv_fn)(const char*), std::vector<ConfigProblem>* problems);

// Parsers shared with `lookback record`'s flag checks.
bool ParseSize(const std::string& text, uint64_t* out);  // "8M", "65536", "1G"
bool ParseBool(const std::string& text, bool* out);      // 1/0, true/false, yes/no, on/off
bool ParseSignal(const std::string& text, int* out);     // "USR2", "SIGUSR2", "12", "0"

}  // namespace lookback::rt
