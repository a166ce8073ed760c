// The floor hook: the least a timestamped ring recorder behind
// -finstrument-functions can do per trace point, to measure lookback against.
//
//   initial-exec TLS pointer to a ring -> rdtsc -> one 8-byte store at
//   slots[pos & mask] -> pos + 1
//
// Built a second time with -DLB_FLOOR_GROUP=8 (listing1_floor_fast): the
// floor of a fast-clock recorder, which reads the clock at one record in 8
// (lookback's default group, LOOKBACK_CLOCK=fast) and writes the others
// untimed. Every record still needs its slot, so the chain from one trace
// point's position store to the next one's load remains: on a CPU without
// memory renaming (Intel) that store-to-load forwarding is most of what an
// untimed record costs, and this floor measures it (docs/performance.md,
// "The fast clock's floor").
//
// Nothing else: no null check, no thread setup, no epoch or function-base
// bookkeeping, no slow path. One ring, set up by a constructor for the
// thread that loads the library (the benchmark's only thread; any other
// thread would crash on the null pointer).
// Built as a shared library, like liblookback.so, so both are reached through
// the same PLT call.
#include <sys/mman.h>
#include <x86intrin.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define FLOOR_API extern "C" __attribute__((no_instrument_function, visibility("default")))

namespace {

struct FloorRing {
  uint64_t pos;
  uint64_t mask;
  uint64_t* slots;
};

// Same size and layout as lookback's default ring (LOOKBACK_BUFFER_SIZE=8M):
// a 4 KiB header page, then 2^20 slots, in an anonymous MAP_NORESERVE mapping
// faulted in lazily. Allocated at run time, so the compiler can neither fold
// the pointer nor drop the stores into the ring.
//
// With LB_FLOOR_HUGEPAGE=1 the slots are mapped as lookback maps them (2 MiB
// aligned, MADV_HUGEPAGE): bench/compare.sh sets it, so that short runs of
// real programs do not charge the floor with 2048 4 KiB page faults (about
// 20 ms here) that lookback does not pay. Without it (Listing 1, whose runs
// warm the ring up first), 4 KiB pages as before.
constexpr uint64_t kSlots = uint64_t{1} << 20;
constexpr uint64_t kHeader = 4096;
constexpr uint64_t kHuge = uint64_t{2} << 20;

}  // namespace

// Set once, by the constructor below, before the benchmark's main() runs.
__thread FloorRing* floor_tls_ring __attribute__((tls_model("initial-exec"))) = nullptr;

__attribute__((constructor, no_instrument_function)) static void FloorInit() {
  const char* huge_env = getenv("LB_FLOOR_HUGEPAGE");
  const bool huge = huge_env != nullptr && huge_env[0] == '1';
  const uint64_t bytes = kHeader + kSlots * 8;
  char* raw = static_cast<char*>(mmap(nullptr, huge ? bytes + kHuge : bytes, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (raw == MAP_FAILED) {
    perror("floor hook: mmap");
    abort();
  }
  void* mem = raw;
  if (huge) {
    const uint64_t slots = (reinterpret_cast<uint64_t>(raw) + kHeader + kHuge - 1) & ~(kHuge - 1);
    mem = reinterpret_cast<void*>(slots - kHeader);
    madvise(reinterpret_cast<void*>(slots), kSlots * 8, MADV_HUGEPAGE);
  }
  FloorRing* r = static_cast<FloorRing*>(mem);
  r->pos = 0;
  r->mask = kSlots - 1;
  r->slots = reinterpret_cast<uint64_t*>(static_cast<char*>(mem) + kHeader);
  floor_tls_ring = r;
}

namespace {

#ifndef LB_FLOOR_GROUP
#define LB_FLOOR_GROUP 1
#endif
static_assert((LB_FLOOR_GROUP & (LB_FLOOR_GROUP - 1)) == 0, "the clock group is a power of two");

__attribute__((always_inline, no_instrument_function)) inline void FloorRecord(uint64_t exit_bit, void* fn) {
  FloorRing* r = floor_tls_ring;
  const uint64_t pos = r->pos;
  // Same shape as lookback's 8-byte event: timestamp bits, an exit flag and
  // the low 32 bits of the function address.
  uint64_t record = exit_bit | static_cast<uint32_t>(reinterpret_cast<uintptr_t>(fn));
  if (LB_FLOOR_GROUP == 1 || (pos & (LB_FLOOR_GROUP - 1)) == 0) record |= __rdtsc() << 33;
  r->slots[pos & r->mask] = record;
  __atomic_store_n(&r->pos, pos + 1, __ATOMIC_RELEASE);
}

}  // namespace

FLOOR_API void __cyg_profile_func_enter(void* fn, void*) { FloorRecord(0, fn); }
FLOOR_API void __cyg_profile_func_exit(void* fn, void*) { FloorRecord(uint64_t{1} << 32, fn); }

// Records written so far (the benchmark checks the hook really ran).
FLOOR_API uint64_t lb_floor_records(void) { return __atomic_load_n(&floor_tls_ring->pos, __ATOMIC_RELAXED); }

// With LB_FLOOR_REPORT=1, the count is printed on stderr at exit
// ("lb_floor_records=N"): bench/compare.sh counts the trace points of real
// programs this way. Calls made after this destructor are not counted.
__attribute__((destructor, no_instrument_function)) static void FloorReport() {
  const char* report = getenv("LB_FLOOR_REPORT");
  if (report != nullptr && report[0] == '1') {
    fprintf(stderr, "lb_floor_records=%llu\n", static_cast<unsigned long long>(lb_floor_records()));
  }
}
