// The trace points that liblookback-pass inlines into every instrumented
// function. Compiled to LLVM bitcode at build time and embedded in the plugin,
// so the inlined sequence is the recorder's own fast path (runtime/hot_path.h),
// not a second copy of it: change hot_path.h and the pass follows.
//
// After inlining, __builtin_return_address(0) is the instrumented function's
// caller, which is what the hook front-end passes as `call_site`; it only
// matters on the slow path (UNWIND_TO after an exception or longjmp).
#include "runtime/hot_path.h"

// Not `inline`: the bitcode must keep a definition for the pass to clone.
#define LOOKBACK_PASS_HOOK __attribute__((always_inline, no_instrument_function))

extern "C" {

LOOKBACK_PASS_HOOK void lb_pass_enter(uint64_t key) {
  lookback::rt::Record(false, key, reinterpret_cast<uint64_t>(__builtin_return_address(0)));
}

LOOKBACK_PASS_HOOK void lb_pass_exit(uint64_t key) { lookback::rt::Record(true, key); }

}  // extern "C"
