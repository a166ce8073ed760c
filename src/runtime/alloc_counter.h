// The interface between liblookback and liblookback-alloc.so, the optional
// malloc/free interposer that counts allocations per thread (docs/sampling.md).
// liblookback references lb_alloc_read weakly: without the interposer loaded
// the allocation fields of a sample stay 0.
#pragma once

#include <stdint.h>

extern "C" {
struct LbAllocCounters {
  uint64_t thread_alloc_bytes;  // usable bytes this thread ever allocated
  uint64_t thread_freed_bytes;  // usable bytes this thread ever freed
  uint64_t heap_bytes;          // process: usable bytes allocated and not yet freed
  uint64_t heap_objects;        // process: blocks allocated and not yet freed
};
// Async-signal-safe: reads the calling thread's counters and the process totals.
void lb_alloc_read(struct LbAllocCounters* out) __attribute__((visibility("default")));
}
