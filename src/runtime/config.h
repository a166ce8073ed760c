// Runtime configuration, read once from LOOKBACK_* environment variables.
// `lookback record` sets the same variables from its flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lookback::rt {

// The detectors that can ask for a dump (docs/triggers.md).
enum class Detector : uint8_t { kStall, kSlowScope, kSlowCall, kCrash, kExplicit, kCount };
inline constexpr const char* kDetectorNames[] = {"stall", "slow-scope", "slow-call", "crash", "explicit"};
inline constexpr size_t kDetectorCount = static_cast<size_t>(Detector::kCount);

// "PATTERN:DURATION": a thread-name glob, scope name or function-name glob and its threshold.
struct Watch {
  std::string pattern;
  uint64_t threshold_ns = 0;
};

// The overhead budget's default, 3 % (docs/performance.md, "The overhead budget").
inline constexpr uint32_t kDefaultBudgetBp = 300;
// The history the budget keeps in each busy thread's ring by default: 2 s
// for the default 8 MiB ring, and for a smaller ring the same share of it
// (64 KiB: 16 ms). Either way a busy thread is held to the same rate, about
// half a million records a second of its CPU time, where the budget alone
// lets one at 10 ns a trace point record 3 M and its ring hold a third of a
// second (docs/performance.md, "A history floor"). A larger ring keeps 2 s
// and holds more detail. LOOKBACK_HISTORY=off leaves the budget alone.
inline constexpr uint64_t kDefaultHistoryNs = 2'000'000'000;
inline constexpr uint64_t kDefaultHistoryRingBytes = 8ull << 20;
uint64_t DefaultHistoryNs(uint64_t buffer_bytes);

struct Config {
  std::string dir = "lookback-dumps";      // LOOKBACK_DIR
  uint64_t buffer_bytes = 8ull << 20;      // LOOKBACK_BUFFER_SIZE (rounded up to a power of two)
  std::vector<std::string> thread_patterns;  // LOOKBACK_THREADS (comma-separated globs; empty = all)
  uint32_t max_threads = 256;              // LOOKBACK_MAX_THREADS: rings alive at once (live + kept)
  uint64_t max_memory = 1ull << 30;        // LOOKBACK_MAX_MEMORY: all rings together
  uint32_t keep_exited = 8;                // LOOKBACK_KEEP_EXITED: rings of exited threads kept
  uint64_t dump_memory = 0;                // LOOKBACK_DUMP_MEMORY: most a dump's copy of the rings may take (0: all)
  int dump_signal = -1;                    // LOOKBACK_DUMP_SIGNAL: 0 = none; -1 = SIGUSR2 if unhandled
  bool dump_at_exit = false;               // LOOKBACK_DUMP_AT_EXIT
  bool enabled = true;                     // LOOKBACK_ENABLED: 0 traces no thread until lb_thread_enable
  bool quiet = false;                      // LOOKBACK_QUIET: no informational lines on stderr
  // LOOKBACK_HOST: the host name recorded in dumps (METADATA process.host);
  // empty = the machine's (gethostname at start-up). For fleets whose
  // machines share names, containers, and tests.
  std::string host;
  // LOOKBACK_CLOCK: "exact" (1: a TSC reading per record) or "fast[:N]" (one
  // reading per N record positions, N a power of two from 2 to 64, default 8,
  // plus one after every deschedule; FORMAT.md, "Fast clock").
  uint32_t clock_group = 1;
  // LOOKBACK_BUDGET: the overhead budget in basis points (1/100 %) of each
  // thread's CPU time; 0 = off (every call recorded). budget.h.
  uint32_t budget_bp = kDefaultBudgetBp;
  // LOOKBACK_HISTORY: with the budget on, also shed until each thread records
  // at most what its ring holds for this long per second of its CPU time;
  // 0 = off (the budget alone); unset, DefaultHistoryNs(buffer_bytes). budget.h.
  uint64_t history_ns = kDefaultHistoryNs;

  // Triggers and their policy (docs/triggers.md).
  std::vector<Watch> stall;                // LOOKBACK_STALL: thread glob : no trace point for this long
  std::vector<std::string> exclude;        // LOOKBACK_EXCLUDE: function globs whose calls are not recorded (hooks)
  std::vector<std::string> stall_idle;     // LOOKBACK_STALL_IDLE: function globs where a thread is idle
  std::vector<Watch> slow_scope;           // LOOKBACK_SLOW_SCOPE: scope name : longest allowed
  std::vector<Watch> slow_call;            // LOOKBACK_SLOW_CALL: function glob : longest allowed
  bool crash = true;                       // LOOKBACK_CRASH: dump on SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT
  // LOOKBACK_ATTACHED: loaded into a process that is already running (`lookback attach`):
  // the crash handlers it has installed are its own, and run first (crash.cc).
  bool attached = false;
  uint64_t post_trigger_ns = 0;            // LOOKBACK_POST_TRIGGER: keep recording this long, then dump
  uint64_t window_ns = 0;                  // LOOKBACK_WINDOW: keep only this much before the snapshot (0: all)
  // LOOKBACK_RATE_LIMIT: dumps per hour per detector (0: unlimited).
  uint32_t rate_limit[kDetectorCount] = {12, 12, 12, 0, 0};
  // LOOKBACK_COOLDOWN: least time between two dumps of one detector.
  uint64_t cooldown_ns[kDetectorCount] = {10'000'000'000, 10'000'000'000, 10'000'000'000, 0, 0};
  uint32_t max_dumps = 100;                // LOOKBACK_MAX_DUMPS: *.lbk files kept in dir (0: no limit)
  uint64_t max_dump_bytes = 4ull << 30;    // LOOKBACK_MAX_DUMP_BYTES: bytes of *.lbk kept in dir (0: no limit)
  // Sampling (docs/sampling.md).
  uint8_t sample_mode = 0;                 // LOOKBACK_SAMPLE: 0 off, 1 cpu (thread CPU time), 2 wall
  uint64_t sample_interval_ns = 1'000'000; // LOOKBACK_SAMPLE_INTERVAL
  uint64_t state_interval_ns = 10'000'000; // LOOKBACK_STATE_INTERVAL: 0 = off
  int sample_signal = 23;                  // LOOKBACK_SAMPLE_SIGNAL (SIGURG: not queued, ignored by default)
  std::string config_file;                 // LOOKBACK_CONFIG: name = value lines, overridden by the environment
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
bool ParseDuration(const std::string& text, uint64_t* ns);  // "100ms", "2s", "500us", "1m", "250" (ms)
bool ParseClock(const std::string& text, uint32_t* group);
// "off" or "0" -> 0; "3", "3%", "2.5%" -> basis points (0.1 % to 50 %).
bool ParseBudget(const std::string& text, uint32_t* basis_points);
// 300 -> "3%", 250 -> "2.5%", 0 -> "off".
std::string BudgetText(uint32_t basis_points);
std::string HistoryText(uint64_t ns);  // "2s", "500ms", "976us", "off" (0)
// "PATTERN:DURATION[,PATTERN:DURATION...]"; the duration follows the last colon.
bool ParseWatches(const std::string& text, std::vector<Watch>* out, std::string* why);
// The variables lookback reads, for `lookback record` and config files.
extern const char* const kConfigVariables[];

}  // namespace lookback::rt
