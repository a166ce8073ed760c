// Builds a whole dump from events known in advance (writer side, outside a
// traced process): what `lookback import` turns Android's traces into. The
// runtime's dump writer (runtime/dump_writer.cc) packs rings it copies; this
// one encodes each thread's events as a ring that never wrapped, with the
// same records (EPOCH, FN_BASE, EVENT), so the reader and decoder need
// nothing new for it. No periodic syncs: a window that starts at the
// thread's first record has every announcement it refers to.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "format/format.h"

namespace lookback::format {

struct BuiltEvent {
  bool exit = false;
  uint64_t key = 0;  // < kKeyLimit
  uint64_t tsc = 0;  // non-decreasing within a thread
};

struct BuiltThread {
  uint32_t tid = 0;
  std::string name;
  bool main = false;
  std::vector<BuiltEvent> events;
  // CPU section readings (tsc, thread CPU ns), both non-decreasing; empty:
  // no CPU section for this thread.
  std::vector<std::pair<uint64_t, uint64_t>> cpu;
  uint64_t end_tsc = 0;  // the thread's exit (0: the last event's TSC)
};

struct BuiltDump {
  uint32_t pid = 0;
  std::string process_name, exe, reason;
  // The clock: `ticks` ticks per `ns` nanoseconds, and one (tsc, monotonic,
  // realtime) reference triple.
  uint64_t ticks = 1, ns = 1;
  uint64_t ref_tsc = 0, ref_monotonic_ns = 0, ref_realtime_ns = 0;
  uint64_t dump_tsc = 0;  // 0: the latest event's TSC
  std::vector<BuiltThread> threads;
  std::map<uint64_t, std::string> names;
  std::map<std::string, std::string> metadata;
};

// The dump's bytes (FORMAT.md, version kDumpVersion).
std::string EncodeDump(const BuiltDump& d);

}  // namespace lookback::format
