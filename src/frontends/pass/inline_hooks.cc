// The trace points that liblookback-pass inlines into every instrumented
// function. Compiled to LLVM bitcode at build time and embedded in the plugin,
// so the inlined sequence is the recorder's own fast path (runtime/hot_path.h),
// not a second copy of it: change hot_path.h and the pass follows.
//
// Two shapes (-lookback-inline=check|full, docs/pass.md):
//   check  inline: the TLS load and a test; the record itself is a call to
//          lb_pass_enter_on / lb_pass_exit_on, one copy per program
//          (linkonce_odr, hidden).
//   full   inline: the whole of Record(), timestamp and store included.
//
// After inlining, __builtin_return_address(0) is the instrumented function's
// caller, which is what the hook front-end passes as `call_site`; it only
// matters on the slow path (UNWIND_TO after an exception or longjmp).
#include "runtime/hot_path.h"

using lookback::rt::Ring;

// Not `inline`: the bitcode must keep a definition for the pass to clone.
#define LOOKBACK_PASS_HOOK __attribute__((always_inline, no_instrument_function))
#define LOOKBACK_PASS_OUTLINED __attribute__((noinline, no_instrument_function))

namespace {
// The unused third argument of lb_pass_enter_on: no instruction.
inline __attribute__((always_inline, no_instrument_function)) uint64_t Unset() {
  uint64_t v;
  __asm__("" : "=r"(v));
  return v;
}
}  // namespace

extern "C" {

// ---- full ----
LOOKBACK_PASS_HOOK void lb_pass_enter(uint64_t key) {
  lookback::rt::Record(false, key, reinterpret_cast<uint64_t>(__builtin_return_address(0)));
}

LOOKBACK_PASS_HOOK void lb_pass_exit(uint64_t key) { lookback::rt::Record(true, key); }

// ---- check ----
// The arguments sit where the slow path (lb_ring_slow: key, call_site, tsc,
// ring, exit) wants them and where rdtsc (rax, rdx) leaves them alone, so the
// record moves no register: the third is a placeholder for the reading, which
// the caller leaves undefined.
//
// Their symbols carry the ring ABI (lb_pass_enter_on_abi8): each program
// object holds a linkonce_odr copy, and objects built by passes of two ABIs
// may be linked into one program; under one name the linker would keep one
// copy, whose arguments or ring layout the other objects' calls do not match.
// Under two names each object keeps its own (and the older one's thread-local,
// of another ABI, sends it to the runtime's refusal, not into a ring).
#define LOOKBACK_PASS_OUTLINED_NAME(name) __asm__(LOOKBACK_PASS_SYMBOL(#name))
LOOKBACK_PASS_OUTLINED void lb_pass_enter_on(uint64_t key, uint64_t call_site, uint64_t, Ring* r)
    LOOKBACK_PASS_OUTLINED_NAME(lb_pass_enter_on);
LOOKBACK_PASS_OUTLINED void lb_pass_exit_on(uint64_t key, Ring* r) LOOKBACK_PASS_OUTLINED_NAME(lb_pass_exit_on);

void lb_pass_enter_on(uint64_t key, uint64_t call_site, uint64_t, Ring* r) {
  lookback::rt::RecordNow(r, false, key, call_site);
}

void lb_pass_exit_on(uint64_t key, Ring* r) { lookback::rt::RecordNow(r, true, key); }

// Tracing on is the expected case (lookback is meant to stay on): the call is
// laid out where the test falls through, so a traced call pays no taken
// branch to reach it and back (on the Xeon, 0.47 ns per trace point less than
// the call laid out at the end of the function, and 0.2 ns more while
// tracing is off: docs/performance.md, "The hot path per CPU").
LOOKBACK_PASS_HOOK void lb_pass_enter_check(uint64_t key) {
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r != nullptr, 1)) {
    lb_pass_enter_on(key, reinterpret_cast<uint64_t>(__builtin_return_address(0)), Unset(), r);
  }
}

LOOKBACK_PASS_HOOK void lb_pass_exit_check(uint64_t key) {
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r != nullptr, 1)) lb_pass_exit_on(key, r);
}

// ---- guarded (-lookback-guards=1, the default): the same two shapes behind a
// per-function byte the runtime sets to shed the function (docs/pass.md,
// "Shedding a function"). The entry hook returns whether this invocation is
// recorded; the pass keeps that bit in a local and hands it to every exit
// hook of the invocation, so an invocation's exits follow its entry whatever
// the guard does in between (recursion included), and nesting stays exact.
//
// The guard is read first, before the thread-local: a shed function's call
// costs a byte load (RIP-relative) and a branch at entry, and a test of the
// bit at each exit, with no thread-local load and no store. Its calls are not
// counted per call (Ring::filtered is the hooks' and lb_enter's): the budget
// prices them from the call rate it shed them at (budget.h, pass_shed_ns).
// Tracing off pays the byte load and the bit test on top of the unguarded
// trace points (docs/pass.md has the figures). An invocation of a function
// not shed that began with tracing off keeps the unguarded behaviour at its
// exits (recorded if tracing came on meanwhile, as without guards); one of a
// shed function is never recorded.
//
// Laid out for a function not shed; a shed invocation's entry takes one
// branch, over the thread-local test.
LOOKBACK_PASS_HOOK bool lb_pass_enter_guarded(uint64_t key, const uint8_t* guard) {
  const bool recorded = __atomic_load_n(guard, __ATOMIC_RELAXED) == 0;
  if (__builtin_expect(recorded, 1)) {
    Ring* r = lb_tls_ring;
    if (__builtin_expect(r != nullptr, 1)) {
      lookback::rt::RecordNow(r, false, key, reinterpret_cast<uint64_t>(__builtin_return_address(0)));
    }
  }
  return recorded;
}

LOOKBACK_PASS_HOOK void lb_pass_exit_guarded(uint64_t key, bool recorded) {
  if (!recorded) return;
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r != nullptr, 1)) lookback::rt::RecordNow(r, true, key);
}

LOOKBACK_PASS_HOOK bool lb_pass_enter_check_guarded(uint64_t key, const uint8_t* guard) {
  const bool recorded = __atomic_load_n(guard, __ATOMIC_RELAXED) == 0;
  if (__builtin_expect(recorded, 1)) {
    Ring* r = lb_tls_ring;
    if (__builtin_expect(r != nullptr, 1)) {
      lb_pass_enter_on(key, reinterpret_cast<uint64_t>(__builtin_return_address(0)), Unset(), r);
    }
  }
  return recorded;
}

// The bit first: a shed invocation's exits skip the thread-local load, and
// tracing off pays the bit's test (a register, or a stack slot) on top of
// the unguarded test. clang 14 -O2 tests the guard byte it keeps for the bit
// directly (an empty asm on `recorded` here, as the previous shape had, made
// it materialise the bit with a sete and test that instead).
LOOKBACK_PASS_HOOK void lb_pass_exit_check_guarded(uint64_t key, bool recorded) {
  if (__builtin_expect(recorded, 1)) {
    Ring* r = lb_tls_ring;
    if (__builtin_expect(r != nullptr, 1)) lb_pass_exit_on(key, r);
  }
}

// The slow path as the program sees it (lookback_pass.cc makes it a hidden
// linkonce_odr copy per program and sends the hot path's lb_ring_slow calls
// here): the runtime's checked entry when a runtime is loaded, passing the
// ring ABI this code was built for; without a runtime, tracing off for this
// thread for good (one call per thread).
#pragma weak lb_pass_record_slow
LOOKBACK_PASS_OUTLINED __attribute__((cold)) void lb_pass_slow(uint64_t key, uint64_t call_site, uint64_t tsc, Ring* r,
                                                                 bool exit) LOOKBACK_PASS_OUTLINED_NAME(lb_pass_slow);
void lb_pass_slow(uint64_t key, uint64_t call_site, uint64_t tsc, Ring* r, bool exit) {
  if (&lb_pass_record_slow == nullptr || lb_pass_record_slow(lookback::rt::kRingAbi, r, exit, key, tsc, call_site) == 0) {
    lb_tls_ring = nullptr;
  }
}

}  // extern "C"
