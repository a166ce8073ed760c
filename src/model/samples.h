// Reading SAMPLES (per-thread counters and scheduler states) for exporters
// and commands: names, units and the derived values they all show alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/reader.h"
#include "model/clock_model.h"

namespace lookback::model {

// "Running", "Sleeping", "Disk wait", ... for a /proc state letter.
const char* StateName(char state);

// CPU share between two samples: thread CPU ns over wall ns (0..1, may
// exceed 1 slightly through clock granularity; 0 when no time passed).
double CpuShare(const std::array<uint64_t, format::kSampleFields>& a, const std::array<uint64_t, format::kSampleFields>& b,
                const ClockModel& clock);

// One span of a state timeline, in TSC ticks.
struct StateSpan {
  char state;
  uint64_t begin_tsc, end_tsc;
};
// The state changes of thread `t` as spans; the last one ends at the thread's
// exit, or at the snapshot if it was alive.
std::vector<StateSpan> StateSpans(const format::ThreadSamples& s, const format::ThreadInfo& t);

// "every 1 ms of thread CPU time, perf task clock, allocation counting"
std::string DescribeSampling(const format::ThreadSamples& s);

}  // namespace lookback::model
