#include "model/samples.h"

#include <fmt/format.h>

namespace lookback::model {

const char* StateName(char state) {
  switch (state) {
    case 'R': return "Running";
    case 'S': return "Sleeping";
    case 'D': return "Disk wait";
    case 'T': return "Stopped";
    case 't': return "Tracing stop";
    case 'Z': return "Zombie";
    case 'X': return "Dead";
    case 'I': return "Idle";
    case 'P': return "Parked";
    case 'W': return "Waking";
    case 'K': return "Wakekill";
    default: return "Unknown";
  }
}

double CpuShare(const std::array<uint64_t, format::kSampleFields>& a, const std::array<uint64_t, format::kSampleFields>& b,
                const ClockModel& clock) {
  if (b[format::kSampleTsc] <= a[format::kSampleTsc] || b[format::kSampleCpuNs] < a[format::kSampleCpuNs]) return 0;
  const double wall = clock.TicksToNs(b[format::kSampleTsc] - a[format::kSampleTsc]);
  return wall > 0 ? static_cast<double>(b[format::kSampleCpuNs] - a[format::kSampleCpuNs]) / wall : 0;
}

std::vector<StateSpan> StateSpans(const format::ThreadSamples& s, const format::ThreadInfo& t) {
  const uint64_t end_tsc = t.exit_tsc != 0 ? t.exit_tsc : t.snapshot_tsc;
  std::vector<StateSpan> out;
  for (size_t i = 0; i < s.states.size(); ++i) {
    const uint64_t begin = s.states[i].tsc;
    uint64_t end = i + 1 < s.states.size() ? s.states[i + 1].tsc : end_tsc;
    if (end < begin) end = begin;  // an untrusted dump's times may step back
    out.push_back({s.states[i].state, begin, end});
  }
  return out;
}

std::string DescribeSampling(const format::ThreadSamples& s) {
  std::string out = fmt::format("every {:.3g} ms of {}", static_cast<double>(s.interval_ns) / 1e6,
                                (s.flags & format::kSampleWall) ? "wall time" : "thread CPU time");
  if (!(s.flags & format::kSampleWall)) out += (s.flags & format::kSamplePerf) ? ", perf task clock" : ", POSIX CPU timer";
  if (s.flags & format::kSampleAlloc) out += ", allocation counting";
  if (!(s.flags & format::kSampleStates)) out += ", no state polling";
  return out;
}

}  // namespace lookback::model
