// liblookback-alloc.so: counts allocations per thread for sampling
// (lookback record --sample-alloc, docs/sampling.md). It defines malloc and
// friends and forwards to glibc's own entry points (__libc_malloc, ...), so
// no dlsym bootstrapping is needed and every block is glibc's.
//
// Sizes are malloc_usable_size() of the block, on allocation and on free, so
// "allocated - freed" is exactly what is in use. Per-thread counters are
// initial-exec thread-locals (plain adds); the process totals are two relaxed
// atomic adds per call, shared by all threads: the price of this option.
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/alloc_counter.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
}

#define LB_ALLOC_API extern "C" __attribute__((visibility("default"), no_instrument_function))

namespace {

struct ThreadCounters {
  uint64_t alloc_bytes, freed_bytes;
};
__thread ThreadCounters tls_counters __attribute__((tls_model("initial-exec")));
int64_t g_heap_bytes = 0;
int64_t g_heap_objects = 0;

__attribute__((no_instrument_function)) inline void* Counted(void* p) {
  if (p != nullptr) {
    const size_t n = malloc_usable_size(p);
    tls_counters.alloc_bytes += n;
    __atomic_fetch_add(&g_heap_bytes, static_cast<int64_t>(n), __ATOMIC_RELAXED);
    __atomic_fetch_add(&g_heap_objects, 1, __ATOMIC_RELAXED);
  }
  return p;
}

__attribute__((no_instrument_function)) inline void Uncount(void* p) {
  const size_t n = malloc_usable_size(p);
  tls_counters.freed_bytes += n;
  __atomic_fetch_sub(&g_heap_bytes, static_cast<int64_t>(n), __ATOMIC_RELAXED);
  __atomic_fetch_sub(&g_heap_objects, 1, __ATOMIC_RELAXED);
}

}  // namespace

LB_ALLOC_API void* malloc(size_t n) { return Counted(__libc_malloc(n)); }
LB_ALLOC_API void* calloc(size_t n, size_t size) { return Counted(__libc_calloc(n, size)); }
LB_ALLOC_API void free(void* p) {
  if (p == nullptr) return;
  Uncount(p);
  __libc_free(p);
}
LB_ALLOC_API void* realloc(void* p, size_t n) {
  if (p == nullptr) return Counted(__libc_malloc(n));
  const size_t old = malloc_usable_size(p);
  void* q = __libc_realloc(p, n);
  if (q == nullptr && n != 0) return nullptr;  // failed: p is untouched
  // Either way the old block is gone (realloc(p, 0) frees it and returns null).
  tls_counters.freed_bytes += old;
  __atomic_fetch_sub(&g_heap_bytes, static_cast<int64_t>(old), __ATOMIC_RELAXED);
  __atomic_fetch_sub(&g_heap_objects, 1, __ATOMIC_RELAXED);
  return Counted(q);
}
LB_ALLOC_API void* memalign(size_t align, size_t n) { return Counted(__libc_memalign(align, n)); }
LB_ALLOC_API void* aligned_alloc(size_t align, size_t n) { return Counted(__libc_memalign(align, n)); }
LB_ALLOC_API int posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = Counted(p);
  return 0;
}
LB_ALLOC_API void* valloc(size_t n) { return Counted(__libc_valloc(n)); }
LB_ALLOC_API void* pvalloc(size_t n) { return Counted(__libc_pvalloc(n)); }

LB_ALLOC_API void lb_alloc_read(LbAllocCounters* out) {
  out->thread_alloc_bytes = tls_counters.alloc_bytes;
  out->thread_freed_bytes = tls_counters.freed_bytes;
  const int64_t bytes = __atomic_load_n(&g_heap_bytes, __ATOMIC_RELAXED);
  const int64_t objects = __atomic_load_n(&g_heap_objects, __ATOMIC_RELAXED);
  // Blocks allocated before this library was loaded and freed through it make the totals dip below zero.
  out->heap_bytes = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
  out->heap_objects = objects > 0 ? static_cast<uint64_t>(objects) : 0;
}
