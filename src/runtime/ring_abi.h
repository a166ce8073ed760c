// The number and the thread-local's symbol name of the ring ABI (hot_path.h).
//
// Kept in a header of its own, macros only, because the clang pass plugin
// (built against LLVM, not the runtime) needs the symbol name too.
//
// Why the ABI number is in the symbol name: code that inlines the fast path
// (the clang pass) reads the thread's Ring* from this thread-local and then
// the Ring's first cache line with the layout it was compiled with. A runtime
// of another ABI defines another symbol, so the dynamic linker never binds
// the two: the program keeps its own sentinel, its first trace point per
// thread reaches lb_pass_record_slow with its ABI number, and the runtime
// refuses. A ring of one layout can never reach code compiled for another.
#pragma once

// Bump on any change of what the fast path reads or writes: cache line 0 of
// Ring, lb_tls_ring's states, the record encoding. (1: before the number
// existed, symbol `lb_tls_ring`; 2: format version 4, four base slots; 3:
// clock mode and last reading in cache line 0, on_cpu at the start of line 1;
// 4: base slots 16-byte aligned for one SSE2 compare, EVENT tags looked up in
// the Ring, the slow path's arguments reordered; 5: Ring::filtered, which the
// clang pass's inlined code increments for a call of a shed function; 6: the
// pass's inlined code no longer counts them (the guard is read before the
// thread-local, and the budget prices those calls from their rate when shed):
// a runtime of 5 would under-price them, one of 6 would count them twice;
// 7: the epoch as its first TSC (epoch_tsc, tested by one subtraction) and
// the hot base slot (hot_base, hot_tag) in cache line 0;
// 8: Ring::lap, where a dense fast ring's untimed records go, after
// dense_sync in cache line 1.)
#ifndef LOOKBACK_RING_ABI
#define LOOKBACK_RING_ABI 8
#endif

#define LOOKBACK_RING_ABI_STR2(x) #x
#define LOOKBACK_RING_ABI_STR(x) LOOKBACK_RING_ABI_STR2(x)
// The symbol of `lb_tls_ring` (its name in source everywhere).
#define LOOKBACK_RING_TLS_SYMBOL "lb_tls_ring_abi" LOOKBACK_RING_ABI_STR(LOOKBACK_RING_ABI)
// The symbol of a name the clang pass puts into every program object, once per
// program (linkonce_odr: the check shape's recorders, the slow-path stub, the
// sentinel): with the ABI in it, objects built by passes of two ABIs and
// linked into one program keep a copy each instead of sharing one whose
// signature or Ring layout is the other's.
#define LOOKBACK_PASS_SYMBOL(name) name "_abi" LOOKBACK_RING_ABI_STR(LOOKBACK_RING_ABI)
