// The recorder's fast path: what runs at every traced function entry and exit.
//
// ABI shared by every front-end (compiler hooks now, an inlining pass and a JVM
// agent later): the initial-exec thread-local `lb_tls_ring` and the first cache
// line of `Ring`. Change either and you change the ABI.
//
// Thread-local state machine (lb_tls_ring):
//   a sentinel         thread not seen yet: the first trace point takes the
//                      slow path (sentinel's pos == next_sync) and sets it up.
//                      Any Ring whose `slots` is null is a sentinel: the
//                      runtime's own lb_sentinel_ring, or one a front-end
//                      brings (the clang pass defines a hidden one per
//                      program, see src/frontends/pass/lookback_pass.cc)
//   a real Ring*       tracing on
//   nullptr            tracing off for this thread (not selected, no memory,
//                      disabled, exited, or inside lookback's own slow path)
// so tracing off costs one TLS load and one predictable branch.
//
// Concurrency contract (see FORMAT.md, "Snapshots"):
//   - the owner thread is the only writer of slots[] and of pos, next_sync,
//     epoch and fn_base; it publishes records by storing pos with release
//     semantics after the slot stores, and issues a release fence before the
//     first slot store of each publication;
//   - the control thread copies slots with relaxed loads, then an acquire
//     fence, then re-reads pos; it throws away every index the owner might
//     have been overwriting meanwhile. On x86-64 every one of these is a
//     plain mov: the fences only stop the compiler from reordering.
//   - no lock, allocation, syscall or errno write on this path.
#pragma once

#include <x86intrin.h>

#include <atomic>
#include <cstdint>

#include "format/format.h"

#define LOOKBACK_HOT inline __attribute__((always_inline, no_instrument_function))

namespace lookback::rt {

// At most this many slots are written before one publication of pos (EPOCH,
// FN_BASE, RESUME, event). Snapshot readers widen their "maybe torn" margin by it.
inline constexpr uint64_t kMaxSlotsPerPublish = 4;
// Open scopes per thread whose start the detectors can see.
inline constexpr uint32_t kMaxWatchedScopes = 8;

struct alignas(64) Ring {
  // ---- cache line 0: the hot path reads all of it, the owner writes it ----
  uint64_t pos;        // records ever written by the owner; atomic, release-published
  uint64_t next_sync;  // when pos reaches it, EPOCH and FN_BASE are re-announced
  uint64_t epoch;      // tsc >> kTscLowBits currently announced in the ring (~0: none)
  uint64_t fn_base;    // key >> 32 currently announced (~0: none)
  uint64_t mask;       // capacity - 1 (capacity is a power of two); immutable
  uint64_t* slots;     // capacity slots; immutable
  uint64_t pad0[2];
  // ---- cache line 1+: cold metadata, see runtime.cc ----
  uint64_t capacity = 0;
  uint64_t map_bytes = 0;  // size of the mapping holding header and slots
  uint64_t start_tsc = 0;
  std::atomic<uint64_t> exit_tsc{0};  // written once by the owner at exit, before state
  std::atomic<uint32_t> state{0};     // RingState
  uint32_t tid = 0;
  uint64_t exit_order = 0;  // for retention: lower exited earlier
  char exit_name[16] = {};  // the thread's name at exit; valid once state == kExited
  // Set by the owner before the ring is registered; freed with the ring (sampler.h).
  struct SampleBuffer* samples = nullptr;
  // ---- scopes (lb_scope_begin/end): owner writes, the control thread reads ----
  // The owner fills scope_id/scope_start[d] before publishing depth d + 1
  // (release); the reader loads the depth (acquire), then the entries, and
  // re-reads the start to drop an entry that was being replaced.
  std::atomic<uint32_t> scope_depth{0};
  std::atomic<uint32_t> scopes_used{0};  // 1 once the thread has begun a scope
  std::atomic<uint32_t> scope_id[kMaxWatchedScopes] = {};
  std::atomic<uint64_t> scope_start[kMaxWatchedScopes] = {};  // tsc
  // A scope that ended over its threshold, for the control thread to report
  // (it may never have seen it open): start tsc last, with release.
  std::atomic<uint32_t> late_scope_id{0};
  std::atomic<uint64_t> late_scope_end{0};
  std::atomic<uint64_t> late_scope_start{0};
};
static_assert(__builtin_offsetof(Ring, pos) == 0 && __builtin_offsetof(Ring, slots) == 40);
static_assert(__builtin_offsetof(Ring, capacity) == 64, "hot fields fill exactly one cache line");

enum RingState : uint32_t { kRingLive = 1, kRingExited = 2 };

}  // namespace lookback::rt

extern "C" {
// The calling thread's ring (see the state machine above).
extern __thread lookback::rt::Ring* lb_tls_ring __attribute__((tls_model("initial-exec"), visibility("default")));
// Sends a thread's first trace point down the slow path (pos == next_sync == 0).
extern lookback::rt::Ring lb_sentinel_ring __attribute__((visibility("default")));
// Out of line and cold: thread setup, EPOCH/FN_BASE announcements, bad keys.
void lb_record_slow(lookback::rt::Ring* r, bool exit, uint64_t key, uint64_t tsc, uint64_t call_site)
    __attribute__((noinline, cold, no_instrument_function, visibility("default")));
}

namespace lookback::rt {

LOOKBACK_HOT bool IsSentinel(const Ring* r) { return r != nullptr && r->slots == nullptr; }

LOOKBACK_HOT uint64_t LoadRelaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

// Record one event at a given timestamp. Separate from Record() so tests can
// drive the encoder with a fake clock; the real hooks pass __rdtsc().
// `call_site` (the caller's return address, 0 if unknown) only reaches the
// slow path, which records it after a non-local exit (see kUnwindTo).
LOOKBACK_HOT void RecordAt(Ring* r, bool exit, uint64_t key, uint64_t tsc, uint64_t call_site = 0) {
  const uint64_t pos = LoadRelaxed(&r->pos);
  const uint64_t changed = ((tsc >> format::kTscLowBits) ^ r->epoch) | ((key >> 32) ^ r->fn_base);
  if (__builtin_expect((changed != 0) | (pos == r->next_sync), 0)) {
    lb_record_slow(r, exit, key, tsc, call_site);
    return;
  }
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&r->slots[pos & r->mask], format::MakeEvent(exit, tsc, key), __ATOMIC_RELAXED);
  __atomic_store_n(&r->pos, pos + 1, __ATOMIC_RELEASE);
}

LOOKBACK_HOT void Record(bool exit, uint64_t key, uint64_t call_site = 0) {
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r == nullptr, 0)) return;
  RecordAt(r, exit, key, __rdtsc(), call_site);
}

}  // namespace lookback::rt
