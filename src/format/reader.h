// Reader for .lbk dumps. A dump is untrusted input: every read is bounds
// checked and every problem is reported with the byte offset where it was
// found. Fields straight from the file that have not been validated carry an
// `_untrusted` suffix.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>

#include "common/result.h"
#include <vector>

#include "format/format.h"
#include "format/sections.h"

namespace lookback::format {

using lookback::Error;  // src/common/result.h
using lookback::Result;


// Per-thread samples (SAMPLES section, version 3): lookback record --sample.
struct StateChange {
  uint64_t tsc = 0;
  char state = '?';  // the kernel's letter: R, S, D, T, t, Z, X, I, ...
};
struct ThreadSamples {
  size_t thread_index = 0;  // index into Dump::threads of the THREAD section it follows
  uint32_t tid = 0, flags = 0;  // SampleFlag
  uint64_t interval_ns = 0, lost = 0;
  // Each sample has kSampleFields values in SampleField order (fields the
  // writer did not have are 0).
  std::vector<std::array<uint64_t, kSampleFields>> samples;
  std::vector<StateChange> states;
};

// A thread's CPU time as the control thread read it (CPU section, version
// 6): readings in the records' clock, the TSC and the CPU time both
// non-decreasing (a reader drops a reading that is not).
struct CpuReading {
  uint64_t tsc = 0;
  uint64_t cpu_ns = 0;  // the thread's CPU time since it began
};
struct ThreadCpu {
  size_t thread_index = 0;  // index into Dump::threads of the THREAD section it follows
  uint32_t tid = 0;
  uint64_t interval_ns = 0;  // between readings (a reading of a thread whose CPU time did not move is stretched instead)
  std::vector<CpuReading> readings;
};

// The overhead budget as the writer ran it (METADATA budget.*; runtime/budget.h).
struct ShedInfo {
  uint64_t key = 0;
  uint64_t at_ns = 0;        // CLOCK_MONOTONIC when it was shed
  uint64_t until_ns = 0;     // when it came back (0: still shed at the dump)
  uint64_t calls_per_s = 0;  // its calls per second of CPU time then
  uint64_t mean_ns = 0;      // the mean duration of its calls then (0: not measured)
  uint32_t tid = 0;          // the thread whose estimate shed it
};
struct BudgetEstimate {
  uint32_t tid = 0;
  uint32_t estimate_bp = 0;  // basis points of the thread's CPU time
  uint64_t tp_per_s = 0;     // trace points recorded per second of its CPU time
  uint64_t filtered_per_s = 0;  // calls of shed (or excluded) functions the hooks dropped, per CPU second
};
struct BudgetInfo {
  std::string percent = "off";  // "3%", "off"; "off" for dumps of runtimes without a budget
  std::string history = "off";  // "2s", "500ms", "off": the history it keeps in each busy ring
  uint64_t cost_ps = 0;           // one trace point's measured cost (0: not measured yet)
  uint64_t filtered_cost_ps = 0;  // a call the filter drops (the hook still runs)
  uint64_t pass_shed_cost_ps = 0;  // a shed function's trace point in pass-built code (0: not in the dump)
  std::vector<BudgetEstimate> threads;
  std::vector<ShedInfo> shed;   // in the order shed
  // The functions not recorded at CLOCK_MONOTONIC `ns`.
  bool ShedAt(uint64_t key, int64_t ns) const;
};

class Dump {
 public:
  // Maps and parses a file.
  static Result<Dump> Open(const std::string& path);
  // Parses bytes that outlive the Dump (the fuzzer's entry point).
  // With `salvage`, damage after a readable header becomes warnings: a
  // truncated file keeps the sections that are whole and the records of a
  // cut THREAD section that are there (`lookback verify`). Without it, any
  // damage is an error.
  static Result<Dump> Parse(std::span<const uint8_t> bytes, bool salvage = false);
  static Result<Dump> Open(const std::string& path, bool salvage);

  uint16_t version = 0;
  uint16_t min_reader = 0;  // the oldest reader the writer says can read it (5 with a fast-clock ring)
  uint64_t features = 0;
  ProcessInfo process;
  ClockInfo clock;
  std::vector<ModuleInfo> modules;
  std::vector<ThreadInfo> threads;
  std::map<uint64_t, std::string> names;
  StatsInfo stats;
  std::optional<TriggerInfo> trigger;
  std::vector<ThreadCpu> cpu;  // CPU section, one per thread that has one
  std::vector<ThreadSamples> samples;  // in THREAD order
  // METADATA section (version 4): key -> value, e.g. how long each phase of
  // writing this dump took (format::metadata). Empty for older dumps.
  std::map<std::string, std::string> metadata;
  BudgetInfo budget;  // parsed from metadata
  // Problems that did not stop parsing (unknown sections, trailing bytes...).
  std::vector<Error> warnings;

  // How this dump's records are laid out (by its version).
  RecordLayout layout() const { return LayoutOfVersion(version); }
  // Record i (0-based within the thread's window); i < record_count.
  uint64_t Record(const ThreadInfo& t, uint64_t i) const;
  // The samples of a thread of this dump, or nullptr.
  const ThreadSamples* SamplesOf(const ThreadInfo& t) const;
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::shared_ptr<void> mapping_;
  std::span<const uint8_t> bytes_;
};

// METADATA budget.* into `out`; an error names the bad entry.
std::optional<Error> ParseBudgetMetadata(const std::map<std::string, std::string>& metadata, BudgetInfo* out);

// Renders a build id as lowercase hex.
std::string HexBuildId(const std::string& raw);

}  // namespace lookback::format
