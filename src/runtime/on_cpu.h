// Fast clock mode's deschedule detector: a word the kernel clears when the
// thread leaves the CPU, read on the fast path (Ring::on_cpu).
//
// glibc (2.35+) registers an rseq area for every thread. The kernel, on the
// way back to user space after it preempted or blocked the thread, delivered
// it a signal or migrated it, looks at the area's rseq_cs word; when it is
// non-zero and the thread is not inside the critical section it describes, the
// kernel sets it to zero. Arming = storing the address of a valid descriptor
// of an empty critical section there: from then on, zero means "was off CPU
// since it was armed". A thread that is never descheduled never pays for it;
// one that is pays one clock_gettime per deschedule (the slow path's
// accounting, runtime.cc). Another rseq user storing its own descriptor there
// only causes a spurious reading.
#pragma once

#include <cstdint>

namespace lookback::rt {

struct OnCpuWatch {
  const volatile uint64_t* word = nullptr;  // the thread's rseq_cs, or nullptr: no rseq here
};

// The calling thread's rseq_cs word, or {nullptr} when glibc did not
// register an rseq area (old glibc, GLIBC_TUNABLES=glibc.pthread.rseq=0, a
// kernel without rseq).
OnCpuWatch ThisThreadOnCpuWatch();

// Arms the calling thread's word (its owner only).
void ArmOnCpu(const volatile uint64_t* word);

// A non-zero word for rings that never look (exact clock).
extern const uint64_t kAlwaysOnCpu;

}  // namespace lookback::rt
