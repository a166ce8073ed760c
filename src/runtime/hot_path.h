// The recorder's fast path: what runs at every traced function entry and exit.
//
// ABI shared by every front-end (the compiler hooks, the clang pass, which
// inlines this code into programs, and the JVM agent through lb_enter/lb_exit,
// whose Java probe also writes RecordNow's untimed record and RecordAtPos's
// exact EVENT itself: src/frontends/jvm/java/probe/java/lang/LookbackProbe.java,
// lb_thread_fast_ring; its layout() hands it the offsets):
// the initial-exec thread-local `lb_tls_ring`, the first cache line of `Ring`
// and the fields the fast path reads or writes beyond it (hot_tag[1], base,
// on_cpu, sparse_ticks, dense_sync, lap, event_tags, filtered). Change any and
// you change the ABI: bump ring_abi.h.
//
// The common case, an exact reading with nothing to announce, is kept to the
// checks the format needs, and above all to a short chain of dependent steps
// into the record's store, which is what costs on Intel (rdtsc does not hide
// it as it does on AMD; docs/performance.md, "The hot path per CPU"): one
// compare against next_sync (syncs and every other mode), one subtraction
// that both tests the epoch and gives the record's timestamp bits, and a
// scalar test of the key against the hot base slot whose result is the
// record's low half, with a tag loaded independently of it.
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
//     epoch_tsc, hot_base, hot_tag, base[], last_tsc, dense_sync, lap and victim (and the kernel clears *on_cpu);
//     it publishes records by storing pos with release
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
#include "runtime/ring_abi.h"

#define LOOKBACK_HOT inline __attribute__((always_inline, no_instrument_function))
#define LOOKBACK_HOT_LAMBDA __attribute__((always_inline, no_instrument_function))

namespace lookback::rt {

using format::kMaxSlotsPerPublish;
// Open scopes per thread whose start the detectors can see.
inline constexpr uint32_t kMaxWatchedScopes = 8;

// The version of this ABI (ring_abi.h: cache line 0 of Ring, lb_tls_ring's
// states, the record encoding the fast path writes). It is part of
// lb_tls_ring's symbol name, and code that inlines the fast path into a
// program (the clang pass) passes it to the runtime with its first slow-path
// call; a runtime of another ABI then turns tracing off instead of handing out
// a ring the program would misread (lb_pass_record_slow).
inline constexpr uint32_t kRingAbi = LOOKBACK_RING_ABI;
inline constexpr uint32_t kNoBase = ~uint32_t{0};  // an empty base slot: no valid key has this base
// lb_ring_slow's `tsc` when the caller did not read the clock (a fast ring's
// untimed record): the slow path reads it. All ones: no TSC reaches it (a
// century at 5 GHz), nor does a test's or a front-end's own clock, which may
// well start at 0.
inline constexpr uint64_t kReadTscInSlowPath = ~uint64_t{0};

struct EventTags {
  uint64_t of[2][1u << format::kBaseSlots];  // [exit][1 << slot]
};
constexpr EventTags MakeEventTags() {
  EventTags t{};
  for (unsigned exit = 0; exit < 2; ++exit) {
    for (unsigned slot = 0; slot < format::kBaseSlots; ++slot) t.of[exit][1u << slot] = format::EventTag(exit != 0, slot);
  }
  return t;
}

struct alignas(64) Ring {
  // ---- cache line 0: the hot path reads all of it, the owner writes it ----
#ifdef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
  uint64_t foreign;    // only in the ABI test's second layout (tests/CMakeLists.txt, pass_abi)
#endif
  uint64_t pos;        // records ever written by the owner; atomic, release-published
  uint64_t next_sync;  // pos >= next_sync: not the exact common case (a sync is due, a
                       // visit to the slow path was asked for, or 0: a dense fast ring, see RecordNow)
  // The first TSC of the epoch currently announced in the ring: epoch << kTscLowBits
  // (~0: none, only in a ring that has not synced yet, whose next_sync is 0).
  // tsc - epoch_tsc below 2^kTscLowBits is the hot path's epoch test and the record's timestamp bits.
  uint64_t epoch_tsc;
  uint64_t mask;       // capacity - 1 (capacity is a power of two); immutable
  uint64_t* slots;     // capacity slots; immutable
#ifndef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
  // Reading schedule: 0, a TSC reading per record (exact rings always; fast
  // rings while their records are sparse); N - 1 for one reading per N
  // positions (fast rings while dense, N = fast_mask + 1). Owner only.
  uint32_t clock_mask;
  uint32_t last_tsc;   // dense fast rings: low 32 bits of the latest reading (the density test)
#endif
  // The hot slot: the base slot most of the latest records used, chosen by
  // the slow path (SetHotSlot), and tested with scalar code: key ^ hot_base
  // has a zero upper half exactly when the key's base is the hot slot's, and
  // is then the key's low 32 bits, the record's low half; the record's tag
  // is hot_tag[exit], a load that waits for nothing. (The SSE2 compare of
  // all four slots, SlotsHolding, then the tag looked up by its result, made
  // a chain of dependent steps into every record's store: about 0.4 ns a
  // trace point on Intel.) hot_base = the slot's base << 32 (kNoBase << 32:
  // no hot slot, which no key below 2^56 matches). Owner only.
  uint64_t hot_base = uint64_t{0xffffffffu} << 32;
  uint64_t hot_tag[2] = {};  // EventTag(exit, hot slot); [1] opens cache line 1
  // ---- cache line 1: the other base slots, fast mode's untimed path, then cold metadata (runtime.cc) ----
  // key >> 32 announced in each base slot (kNoBase: empty). 16-byte aligned:
  // a key outside the hot slot compares all four with one SSE2 compare (SlotsHolding).
  alignas(16) uint32_t base[format::kBaseSlots];
  // Fast mode: the calling thread's rseq_cs word (glibc's rseq area). The
  // runtime stores a descriptor's address there when it takes a reading; the
  // kernel clears it whenever the thread is descheduled or takes a signal,
  // so zero here means "not continuously on CPU since the last reading" and
  // the next record takes a reading (on_cpu.h, FORMAT.md "Fast clock").
  // Exact rings point at a constant non-zero word; immutable.
  const volatile uint64_t* on_cpu = nullptr;
  // Fast mode: a group of records that took longer than this (ticks) since
  // the last reading is sparse: the ring reads the TSC at every record until
  // a group is dense again, since a reading then costs little next to the
  // time between records and leaves no long untimed stretch. Immutable.
  uint32_t sparse_ticks = 0;
  uint32_t fast_mask = 0;  // immutable: the configured group size - 1 (0: an exact ring)
  // Dense fast rings: the next sync's position (a reading position), since
  // their next_sync is 0. Owner only.
  uint64_t dense_sync = 0;
  // Dense fast rings: the address of position 0 in the current lap (slots
  // minus 8 times the lap's first position), so that an untimed record is
  // stored at lap + 8 * pos, without the mask's load and `and`: 5-8 % of a
  // fast trace point on the Xeon (docs/performance.md, "The hot path per
  // CPU"). The slow path sets it whenever it reschedules a dense ring
  // (Reschedule, runtime.cc), and keeps dense_sync at or before the next
  // lap's first position, a reading position (the capacity is a multiple of
  // the group), so no untimed record is written past the lap it was set for.
  // Owner only.
  uintptr_t lap = 0;
  uint32_t victim = 0;     // slow path only: the slot the next new base replaces (round robin)
  uint32_t abi = 0;        // kRingAbi of the runtime that set this ring up (for debuggers and dumps)
  // Slow path only (owner): the sync schedule (next_sync may come earlier,
  // to look at a fast ring's density), where the density measurement began,
  // and CLOCK_MONOTONIC and thread CPU time when on_cpu was last armed.
  uint64_t sync_at = 0;
  uint64_t adapt_pos = 0, adapt_tsc = 0;
  uint64_t armed_mono_ns = 0;
  uint64_t armed_cpu_ns = 0;
  // The hot path's EVENT tags (format::EventTag) by exit and by the one-hot
  // mask of the slot that holds the key's base (SlotsHolding: 1, 2, 4, 8), so
  // that a record's top bits are one load, not a bit scan and two shifts.
  // Immutable; a sentinel's are zero (it never gets this far).
  EventTags event_tags = MakeEventTags();
  // ---- cold metadata, see runtime.cc ----
  // Calls of shed or excluded functions that were not recorded: each filter
  // table hit of the hooks and lb_enter/lb_exit (exclude.h). They still cost
  // the hook call, which the overhead budget counts (budget.h). The clang
  // pass's guard does not count the calls it skips (ring ABI 6: a store per
  // call would be most of what such a call costs); the budget prices those
  // from their rate when shed. Owner writes (CountFiltered), the control
  // thread reads.
  uint64_t filtered = 0;
  uint64_t capacity = 0;
  uint64_t map_bytes = 0;  // size of the mapping holding header and slots
  uint64_t start_tsc = 0;
  // The thread's CPU time (CLOCK_THREAD_CPUTIME_ID) when its ring was set
  // up, read beside start_tsc: the CPU log's first reading (cpu_log.cc), so
  // that work done before the control thread's first reading of the thread
  // counts as on CPU. 0: not read.
  uint64_t start_cpu_ns = 0;
  std::atomic<uint64_t> exit_tsc{0};  // written once by the owner at exit, before state
  std::atomic<uint32_t> state{0};     // RingState
  uint32_t tid = 0;
  uint64_t exit_order = 0;  // for retention: lower exited earlier
  char exit_name[16] = {};  // the thread's name at exit; valid once state == kExited
  // The name the thread gave itself for lookback (lb_thread_set_name: a
  // managed runtime's thread name, which may be longer than the kernel's 15
  // characters and is not the kernel's); empty: the kernel's name is used.
  // The owner writes it between two increments of given_name_gen (odd while
  // writing); readers copy it and retry if the generation moved (RingName).
  std::atomic<uint32_t> given_name_gen{0};
  char given_name[64] = {};
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
#ifndef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
static_assert(__builtin_offsetof(Ring, pos) == 0 && __builtin_offsetof(Ring, mask) == 24 && __builtin_offsetof(Ring, slots) == 32 &&
              __builtin_offsetof(Ring, clock_mask) == 40 && __builtin_offsetof(Ring, hot_base) == 48 &&
              __builtin_offsetof(Ring, hot_tag) == 56, "the exact path's fields fill cache line 0 (hot_tag[1] opens line 1)");
#endif

enum RingState : uint32_t { kRingLive = 1, kRingExited = 2 };

}  // namespace lookback::rt

extern "C" {
// The calling thread's ring (see the state machine above).
// Its symbol carries the ABI number (ring_abi.h): lb_tls_ring_abi8 (LOOKBACK_RING_TLS_SYMBOL).
extern __thread lookback::rt::Ring* lb_tls_ring __asm__(LOOKBACK_RING_TLS_SYMBOL)
    __attribute__((tls_model("initial-exec"), visibility("default")));
// Sends a thread's first trace point down the slow path (pos == next_sync == 0).
extern lookback::rt::Ring lb_sentinel_ring __attribute__((visibility("default")));
// Out of line and cold: thread setup, EPOCH/FN_BASE announcements, syncs, bad
// keys. Internal to the runtime: code outside it (the clang pass) reaches it
// through lb_pass_record_slow, which checks the caller's kRingAbi first.
// Its arguments are in the order that lets a hook keep its own in place: key
// and call site arrive in the first two argument registers.
void lb_ring_slow(uint64_t key, uint64_t call_site, uint64_t tsc, lookback::rt::Ring* r, bool exit)
    __attribute__((noinline, cold, no_instrument_function, visibility("hidden")));
// The slow path for code inlined outside the runtime: `abi` is the caller's
// kRingAbi. Returns 0 when the runtime refuses (another ABI): the caller then
// sets its own thread-local to nullptr. Its signature never changes, whatever
// the ABI becomes.
int lb_pass_record_slow(uint32_t abi, lookback::rt::Ring* r, bool exit, uint64_t key, uint64_t tsc,
                         uint64_t call_site)
    __attribute__((noinline, cold, no_instrument_function, visibility("default")));
}

namespace lookback::rt {

LOOKBACK_HOT bool IsSentinel(const Ring* r) { return r != nullptr && r->slots == nullptr; }

// `n` calls of shed or excluded functions not recorded, on the calling
// thread's ring (owner only: a relaxed store, a plain add on x86-64).
LOOKBACK_HOT void CountFiltered(Ring* r, uint64_t n = 1) {
  __atomic_store_n(&r->filtered, __atomic_load_n(&r->filtered, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

LOOKBACK_HOT uint64_t LoadRelaxed(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

// Which of the four base slots hold the key's base (key >> 32): bit s set for slot s,
// 0 for none. One SSE2 compare of all four, no branch, so calls that
// alternate between regions cost what calls within one region cost. Slots
// never hold the same base twice, so at most one bit is set. An empty slot
// (kNoBase) matches no key below 2^56 (the hot path's callers pass only such
// keys: code addresses and tagged method ids; lb_enter/lb_exit check theirs).
LOOKBACK_HOT unsigned SlotsHolding(const Ring* r, uint64_t key) {
  // key >> 32 in every lane, straight from the key's upper half.
  const __m128i k = _mm_shuffle_epi32(_mm_cvtsi64_si128(static_cast<long long>(key)), 0x55);
  const __m128i b = _mm_load_si128(reinterpret_cast<const __m128i*>(r->base));
  return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(k, b))));
}

// Owner, outside the hot path: base slot `slot` becomes the hot slot (or
// none, kBaseSlots). Called whenever the slots change, so that hot_base
// always equals a slot's base or matches nothing.
LOOKBACK_HOT void SetHotSlot(Ring* r, unsigned slot) {
  if (slot >= format::kBaseSlots || r->base[slot] == kNoBase) {
    r->hot_base = uint64_t{kNoBase} << 32;
    r->hot_tag[0] = r->hot_tag[1] = 0;
    return;
  }
  r->hot_base = uint64_t{r->base[slot]} << 32;
  r->hot_tag[0] = format::EventTag(false, slot);
  r->hot_tag[1] = format::EventTag(true, slot);
}

// The publication protocol (see the concurrency contract above), with the
// slot of position `pos` given.
LOOKBACK_HOT void PublishAt(Ring* r, uint64_t* slot, uint64_t pos, uint64_t record) {
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(slot, record, __ATOMIC_RELAXED);
  __atomic_store_n(&r->pos, pos + 1, __ATOMIC_RELEASE);
}

LOOKBACK_HOT void Publish(Ring* r, uint64_t pos, uint64_t record) { PublishAt(r, &r->slots[pos & r->mask], pos, record); }

// Record one event at a given timestamp (a reading, in either clock mode) at
// position `pos` (the owner's current r->pos), once the caller has seen that
// no sync is due. When nothing needs announcing, that is one EVENT; an epoch
// that moved (either way) or a key base in no slot goes to the slow path.
// `call_site` (the
// caller's return address, 0 if unknown) only reaches the slow path, which
// records it after a non-local exit (see kUnwindTo).
//
// kDense: the ring reads the clock once per group (clock_mask != 0), and its
// syncs are due at dense_sync. A reading there also goes to the slow path
// when the thread was descheduled since its last reading, which accounts the
// time off CPU (kOffCpu) before this reading and re-arms on_cpu (no reading
// may pass a deschedule unaccounted, or the OFFCPU written later would be
// applied to records that came after it), and when its group took longer
// than sparse_ticks, which switches the ring to a reading per record. Only
// dense rings keep last_tsc.
//
// On Intel every instruction here counts (rdtsc's microcode does not hide
// the ones around it as it does on AMD; docs/performance.md, "The hot path
// per CPU"), so the exact path is kept to the checks the format needs.
template <bool kDense>
LOOKBACK_HOT void RecordAtPos(Ring* r, uint64_t pos, bool exit, uint64_t key, uint64_t tsc, uint64_t call_site) {
  // In the announced epoch, this is the TSC's low bits; a TSC in another
  // epoch, later or (migration between unsynchronised cores) earlier, gives
  // 2^kTscLowBits or more, unsigned.
  const uint64_t offset = tsc - r->epoch_tsc;
  bool slow = offset >= (uint64_t{1} << format::kTscLowBits);
#ifndef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
  if constexpr (kDense) {
    slow = slow || pos >= r->dense_sync || *r->on_cpu == 0 ||
           static_cast<uint32_t>(tsc) - r->last_tsc > r->sparse_ticks;
  }
#endif
  // The slow path gets the reading rebuilt from the offset, so that the
  // common case need not keep it in a register of its own.
  auto to_slow_path = [&]() LOOKBACK_HOT_LAMBDA {
    lb_ring_slow(key, call_site, offset + __atomic_load_n(&r->epoch_tsc, __ATOMIC_RELAXED), r, exit);
  };
  if (__builtin_expect(slow, 0)) {
    to_slow_path();
    return;
  }
  // Dense rings note the reading (their density test) once it is certain to be published here.
  auto publish = [&](uint64_t record) LOOKBACK_HOT_LAMBDA {
#ifndef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
    if constexpr (kDense) r->last_tsc = static_cast<uint32_t>(tsc);
#endif
    Publish(r, pos, record);
  };
  // The key's low half when its base is the hot slot's (see Ring::hot_base).
  const uint64_t low = key ^ r->hot_base;
  if (__builtin_expect((low >> 32) != 0, 0)) {
    // Another slot, or none. Straight-line code of its own, so that the hot
    // slot's path carries no choice of tag or low half.
    const unsigned held = SlotsHolding(r, key);
    if (__builtin_expect(held == 0, 0)) {
      to_slow_path();
      return;
    }
    publish(r->event_tags.of[exit][held] | format::EventBodyFromParts(offset, key & format::kKeyLowMask));
    return;
  }
  publish(r->hot_tag[exit] | format::EventBodyFromParts(offset, low));
}

LOOKBACK_HOT uint64_t DenseClockMask(const Ring* r) {
#ifndef LOOKBACK_TEST_FOREIGN_RING_LAYOUT
  return r->clock_mask;
#else
  (void)r;
  return 0;
#endif
}

// A reading at `tsc`, in either clock mode (scopes, and tests that drive the
// encoder with a fake clock).
LOOKBACK_HOT void RecordReading(Ring* r, bool exit, uint64_t key, uint64_t tsc, uint64_t call_site = 0) {
  const uint64_t pos = LoadRelaxed(&r->pos);
  if (__builtin_expect(pos < r->next_sync, 1)) {
    RecordAtPos<false>(r, pos, exit, key, tsc, call_site);
  } else if (DenseClockMask(r) != 0) {
    RecordAtPos<true>(r, pos, exit, key, tsc, call_site);
  } else {
    lb_ring_slow(key, call_site, tsc, r, exit);
  }
}

// Record one event now.
//
// One compare decides between the common case and everything else: exact
// rings (and sparse fast rings) hold the position of their next sync in
// next_sync, dense fast rings hold 0 there, so `pos < next_sync` means "an
// exact reading, no sync due". Exact mode then reads the TSC.
//
// Dense fast rings read it at one position in clock_mask + 1 (their syncs
// fall on such a position, dense_sync) and when the thread was descheduled
// since the last reading (on_cpu cleared by the kernel); every other record
// is an UNTIMED_ENTRY/EXIT holding the whole key and no time (the readings
// around it bound it), so it needs neither the clock nor the base slots: a
// constant in the clang pass's inlined code. Code that wants the next record
// on the slow path sets next_sync to pos and clears *on_cpu as well.
LOOKBACK_HOT void RecordNow(Ring* r, bool exit, uint64_t key, uint64_t call_site = 0) {
  const uint64_t pos = LoadRelaxed(&r->pos);
  if (__builtin_expect(pos >= r->next_sync, 0)) {
    const uint64_t clock_mask = DenseClockMask(r);
    // The untimed position first: it is most of a dense ring's records, and
    // an exact ring (clock_mask 0) never has one, so no test of the mode
    // comes before it.
    if (__builtin_expect((pos & clock_mask) != 0, 1)) {
      if (__builtin_expect(*r->on_cpu == 0, 0)) {
        lb_ring_slow(key, call_site, kReadTscInSlowPath, r, exit);  // one rdtsc per trace point inlined, not two
        return;
      }
      PublishAt(r, reinterpret_cast<uint64_t*>(r->lap + 8 * pos), pos, format::MakeUntimed(exit, key));  // Ring::lap
      return;
    }
    if (clock_mask == 0) {
      lb_ring_slow(key, call_site, kReadTscInSlowPath, r, exit);  // a sync (the slow path reads the clock)
      return;
    }
    RecordAtPos<true>(r, pos, exit, key, __rdtsc(), call_site);
    return;
  }
  RecordAtPos<false>(r, pos, exit, key, __rdtsc(), call_site);
}

LOOKBACK_HOT void Record(bool exit, uint64_t key, uint64_t call_site = 0) {
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r == nullptr, 0)) return;
  RecordNow(r, exit, key, call_site);
}

}  // namespace lookback::rt
