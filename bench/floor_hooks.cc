// The floor hook: the least a timestamped ring recorder behind
// -finstrument-functions can do per trace point, to measure lookback against.
//
//   initial-exec TLS pointer to a ring -> rdtsc -> one 8-byte store at
//   slots[pos & mask] -> pos + 1
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
constexpr uint64_t kSlots = uint64_t{1} << 20;
constexpr uint64_t kHeader = 4096;

}  // namespace

// Set once, by the constructor below, before the benchmark's main() runs.
__thread FloorRing* floor_tls_ring __attribute__((tls_model("initial-exec"))) = nullptr;

__attribute__((constructor, no_instrument_function)) static void FloorInit() {
  void* mem = mmap(nullptr, kHeader + kSlots * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
  if (mem == MAP_FAILED) {
    perror("floor hook: mmap");
    abort();
  }
  FloorRing* r = static_cast<FloorRing*>(mem);
  r->pos = 0;
  r->mask = kSlots - 1;
  r->slots = reinterpret_cast<uint64_t*>(static_cast<char*>(mem) + kHeader);
  floor_tls_ring = r;
}

namespace {

__attribute__((always_inline, no_instrument_function)) inline void FloorRecord(uint64_t exit_bit, void* fn) {
  FloorRing* r = floor_tls_ring;
  const uint64_t pos = r->pos;
  // Same shape as lookback's 8-byte event: timestamp bits, an exit flag and
  // the low 32 bits of the function address.
  r->slots[pos & r->mask] = (__rdtsc() << 33) | exit_bit | static_cast<uint32_t>(reinterpret_cast<uintptr_t>(fn));
  __atomic_store_n(&r->pos, pos + 1, __ATOMIC_RELEASE);
}

}  // namespace

FLOOR_API void __cyg_profile_func_enter(void* fn, void*) { FloorRecord(0, fn); }
FLOOR_API void __cyg_profile_func_exit(void* fn, void*) { FloorRecord(uint64_t{1} << 32, fn); }

// Records written so far (the benchmark checks the hook really ran).
FLOOR_API uint64_t lb_floor_records(void) { return __atomic_load_n(&floor_tls_ring->pos, __ATOMIC_RELAXED); }
