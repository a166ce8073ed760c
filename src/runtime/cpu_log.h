// Every traced thread's CPU time, always (no --sample needed): every
// kCpuLogTickNs the control thread reads each live thread's CPU clock and
// logs (TSC, CPU ns) in that thread's CpuLog. Dumps carry the log (FORMAT.md,
// CPU section), so that report, chains, sql and the exporters can tell a
// call's time on CPU from its time blocked: interpolated between two
// readings, the thread's CPU time at any moment is known to within one tick
// of what it did, and a thread that only slept is seen to have slept.
//
// Cost: one clock_gettime per live thread per tick on the control thread
// (0.25 µs measured; past 500 threads the tick stretches so that this stays
// near 1 % of a core), nothing on the traced threads. A thread whose CPU
// time did not move since its last two readings costs no slot: the last
// reading's TSC moves forward instead, so a thread asleep for an hour takes
// two entries.
//
// Single writer (the control thread), no locks: a reader loads pos
// (acquire), checks whose log it is, copies, fences, re-reads pos and the
// owner and drops what may have been overwritten meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace lookback::rt {

struct Ring;

inline constexpr uint64_t kCpuLogTickNs = 10'000'000;
// With more than 500 live threads the tick stretches to this much per thread.
inline constexpr uint64_t kCpuLogNsPerThread = 20'000;
inline constexpr uint64_t kCpuLogCapacity = 2048;  // 20 s of a busy thread at 10 ms (power of two)

// Control thread: reads the CPU clocks of the live threads when due.
// Returns the CLOCK_MONOTONIC ns of the next tick.
uint64_t CpuLogTick(uint64_t now_ns);

// The log of ring `r` as (tsc, cpu ns) pairs flattened, oldest first, and
// for a live thread one more reading taken now (so the log reaches the
// snapshot). Empty when the control thread never read this thread's clock.
// Any thread; caller holds ControlMutex() or is the control thread (r stays
// mapped).
void CopyCpuLog(const Ring& r, bool live, std::vector<uint64_t>* out);

// CPU time of thread `tid` of this process (any thread), ns; *ok false when
// the thread is gone.
uint64_t ThreadCpuNsOf(uint32_t tid, bool* ok);

}  // namespace lookback::rt
