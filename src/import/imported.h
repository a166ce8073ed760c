// A foreign method trace as the importers read it (one parser per format:
// art_trace.h, nanoscope.h), before it becomes a lookback dump (to_dump.h).
// Neutral on purpose: each parser fills the same few fields, and only
// to_dump.cc knows how a dump encodes them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace lookback::import {

enum class Action : uint8_t { kEnter = 0, kExit = 1, kUnroll = 2 };  // ART's action bits

struct ImportedEvent {
  Action action = Action::kEnter;
  uint32_t method = 0;   // an id of ImportedTrace::methods
  uint64_t time_ns = 0;  // the trace's primary clock (ImportedTrace::clock)
  uint64_t cpu_ns = 0;   // the thread's CPU clock, when has_cpu
};

struct ImportedThread {
  uint32_t tid = 0;
  std::string name;
  std::vector<ImportedEvent> events;
  // Thread CPU time read beside the events (ART's dual clock: every event;
  // Nanoscope's .timer file: every sample), as (time_ns, cpu_ns).
  std::vector<std::pair<uint64_t, uint64_t>> cpu;
};

struct ImportedTrace {
  std::string format;  // import.format: "art-trace", "nanoscope"
  // import.clock: what time_ns is and which clocks the file had:
  // "wall", "thread-cpu" (time_ns is thread CPU time), "dual" (wall, with cpu),
  // "monotonic" (Nanoscope), "monotonic+thread-cpu".
  std::string clock;
  uint32_t pid = 0;
  std::string process_name;
  // CLOCK_REALTIME ns at time_ns == 0 (0: unknown).
  uint64_t realtime_at_zero_ns = 0;
  std::map<uint32_t, std::string> methods;  // id -> Java name, PrettyMethod style
  std::vector<ImportedThread> threads;
  std::map<std::string, std::string> metadata;  // import.* facts from the file
  // What could not be read: a line each, with its offset (not failures).
  std::vector<Error> warnings;
};

}  // namespace lookback::import
