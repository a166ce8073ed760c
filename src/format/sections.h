// The file header and the sections of a dump (PROCESS, CLOCK, MODULES,
// NAMES, STATS, TRIGGER, THREAD's head, METADATA): their fields as one
// struct each, and each one's encoder.
// The writer (runtime/dump_writer.cc) fills the structs and encodes them
// here; the reader (reader.cc) decodes into the same structs, and
// tests/unit/sections_test.cc encodes each with distinct values and reads it
// back, so a field added to one side and not the other fails there.
// FORMAT.md documents the byte layout. Writer side: no reader code.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "format/encode.h"
#include "format/format.h"

namespace lookback::format {

struct ProcessInfo {
  uint32_t pid = 0, ppid = 0, dump_seq = 0;
  uint64_t dump_tsc = 0, dump_realtime_ns = 0, dump_monotonic_ns = 0;
  std::string name, exe, cmdline, reason;
};

struct ClockInfo {
  uint64_t ticks = 0, ns = 0;  // calibration: ticks per ns = ticks / ns
  uint64_t ref_tsc = 0, ref_monotonic_ns = 0, ref_realtime_ns = 0;
  uint32_t tsc_low_bits = 0, uncertainty_ppb = 0;
};

struct ModuleInfo {
  uint64_t bias = 0, lo = 0, hi = 0;
  std::string build_id;  // raw bytes
  std::string path;
};

struct StatsInfo {
  uint32_t untraced_memory = 0, untraced_pattern = 0, reclaimed = 0, invalid_keys = 0;
  uint64_t buffer_bytes = 0;
};

// What made the process write this dump (TRIGGER section; absent in dumps
// written before version 2).
struct TriggerInfo {
  std::string detector;     // "stall", "slow-scope", "slow-call", "crash", "explicit", "exit", "exec"
  uint32_t tid = 0;         // the thread it is about (0: none)
  uint32_t signal = 0;      // crash: the signal number
  uint64_t tsc = 0;         // when it fired
  uint64_t measured_ns = 0; // what was measured (stall length, scope/call duration)
  uint64_t threshold_ns = 0;
  uint64_t window_ns = 0;   // the dump keeps only this much before the snapshot (0: everything)
  uint64_t suppressed = 0;  // triggers merged into this dump or dropped by rate limits since the previous one
  std::string subject;      // thread pattern, scope name, function name, signal name, or request text
};

struct ThreadInfo {
  uint32_t tid = 0, flags = 0;
  uint64_t capacity = 0, first_index = 0, record_count = 0, lost = 0;
  uint64_t start_tsc = 0, exit_tsc = 0, snapshot_tsc = 0;
  std::string name;
  uint64_t records_offset = 0;  // file offset of the first record
};

// The file header (FORMAT.md, "Dump file"): written last by the writer, once
// the section count and size are known.
inline std::string EncodeFileHeader(uint16_t min_reader, uint32_t section_count, uint64_t file_size,
                                    uint64_t features = kFeatureX86Tsc) {
  std::string h;
  h.append(kMagic, 8);
  PutU16(&h, kDumpVersion);
  PutU16(&h, min_reader);
  PutU32(&h, kFileHeaderSize);
  PutU64(&h, features);
  PutU32(&h, section_count);
  PutU32(&h, 0);
  PutU64(&h, file_size);
  h.resize(kFileHeaderSize, '\0');
  return h;
}

// Payload encoders, field by field in FORMAT.md's order.
inline std::string EncodeProcess(const ProcessInfo& p) {
  std::string out;
  PutU32(&out, p.pid);
  PutU32(&out, p.ppid);
  PutU32(&out, p.dump_seq);
  PutU32(&out, 0);
  PutU64(&out, p.dump_tsc);
  PutU64(&out, p.dump_realtime_ns);
  PutU64(&out, p.dump_monotonic_ns);
  PutString(&out, p.name);
  PutString(&out, p.exe);
  PutString(&out, p.cmdline);
  PutString(&out, p.reason);
  return out;
}

inline std::string EncodeClock(const ClockInfo& k) {
  std::string out;
  PutU64(&out, k.ticks);
  PutU64(&out, k.ns);
  PutU64(&out, k.ref_tsc);
  PutU64(&out, k.ref_monotonic_ns);
  PutU64(&out, k.ref_realtime_ns);
  PutU32(&out, k.tsc_low_bits);
  PutU32(&out, k.uncertainty_ppb);
  return out;
}

inline std::string EncodeModules(const std::vector<ModuleInfo>& mods) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(mods.size()));
  for (const auto& m : mods) {
    PutU64(&out, m.bias);
    PutU64(&out, m.lo);
    PutU64(&out, m.hi);
    PutString(&out, m.build_id);
    PutString(&out, m.path);
  }
  return out;
}

inline std::string EncodeNames(const std::vector<std::pair<uint64_t, std::string>>& names) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(names.size()));
  for (const auto& [key, n] : names) {
    PutU64(&out, key);
    PutString(&out, n);
  }
  return out;
}

inline std::string EncodeStats(const StatsInfo& s) {
  std::string out;
  PutU32(&out, s.untraced_memory);
  PutU32(&out, s.untraced_pattern);
  PutU32(&out, s.reclaimed);
  PutU32(&out, s.invalid_keys);
  PutU64(&out, s.buffer_bytes);
  return out;
}

// THREAD's fixed part and name, padded to 8; its record_count records follow.
inline std::string EncodeThread(const ThreadInfo& t) {
  std::string out;
  PutU32(&out, t.tid);
  PutU32(&out, t.flags);
  PutU64(&out, t.capacity);
  PutU64(&out, t.first_index);
  PutU64(&out, t.record_count);
  PutU64(&out, t.lost);
  PutU64(&out, t.start_tsc);
  PutU64(&out, t.exit_tsc);
  PutU64(&out, t.snapshot_tsc);
  PutString(&out, t.name);
  PadTo8(&out);
  return out;
}

// CPU (version 6): a thread's (TSC, CPU ns) readings, taken every
// `interval_ns` (0: with events, not on a schedule).
// The fixed part alone (the writer copies `count` readings after it in place).
inline std::string EncodeCpuHead(uint32_t tid, uint64_t interval_ns, uint32_t count) {
  std::string out;
  PutU32(&out, tid);
  PutU32(&out, 0);
  PutU64(&out, interval_ns);
  PutU32(&out, count);
  PutU32(&out, 0);
  return out;
}
inline std::string EncodeCpu(uint32_t tid, uint64_t interval_ns, const std::vector<std::pair<uint64_t, uint64_t>>& readings) {
  std::string out = EncodeCpuHead(tid, interval_ns, static_cast<uint32_t>(readings.size()));
  for (const auto& [tsc, cpu_ns] : readings) {
    PutU64(&out, tsc);
    PutU64(&out, cpu_ns);
  }
  return out;
}

// METADATA: key/value strings, in the order given.
inline std::string EncodeMetadata(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string out;
  PutU32(&out, static_cast<uint32_t>(entries.size()));
  for (const auto& [k, v] : entries) {
    PutString(&out, k);
    PutString(&out, v);
  }
  return out;
}

inline std::string EncodeTrigger(const TriggerInfo& t) {
  std::string out;
  PutU32(&out, t.tid);
  PutU32(&out, t.signal);
  PutU64(&out, t.tsc);
  PutU64(&out, t.measured_ns);
  PutU64(&out, t.threshold_ns);
  PutU64(&out, t.window_ns);
  PutU64(&out, t.suppressed);
  PutString(&out, t.detector);
  PutString(&out, t.subject);
  return out;
}

}  // namespace lookback::format
