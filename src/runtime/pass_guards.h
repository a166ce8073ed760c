// Per-function guards of code built by the clang pass (docs/pass.md,
// "Shedding a function"): the runtime's way to stop recording the calls of one
// function whose trace points are inlined into the program, where there is no
// hook to consult a table.
//
// ABI with the pass (src/frontends/pass/lookback_pass.cc), fixed:
//   - every guarded function F has a one-byte guard in its module, 0 recorded,
//     nonzero shed. F's entry reads it (relaxed) before anything else, and
//     the invocation's exits follow that decision (a shed invocation's
//     trace points read nothing else and write nothing: no count either);
//   - each module has a table of PassGuardEntry in the section
//     `lookback_guards`; a constructor of the module passes [begin, end) of
//     its own table to lb_pass_register_guards, a destructor to
//     lb_pass_unregister_guards (weak references: a program run without the
//     runtime skips both).
//
// Who calls what:
//   - lb_pass_register_guards / lb_pass_unregister_guards: any thread, from
//     constructors and destructors of any module, before or after the runtime
//     initialised (dlopen, dlclose, exit);
//   - SetPassGuard: the runtime's control thread (thread-safe all the same:
//     it takes the registry's lock, never on a traced thread's hot path);
//   - SetShedQuery: the overhead budget, once it sheds anything.
// The registry is never freed (destructors of late modules may still run
// after the runtime's own).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lookback/lookback.h"

namespace lookback::rt {

// One entry of a module's `lookback_guards` table, as the pass emits it:
// {i64 key, ptr guard}. The key is the function's address, the key its trace
// points record.
struct PassGuardEntry {
  uint64_t fn;
  uint8_t* guard;
};
static_assert(sizeof(PassGuardEntry) == 16, "the pass emits {i64, ptr}");

// Sets the guard of every registered copy of function `fn` (a linkonce
// function instrumented in several object files has one guard per copy, and
// only the copy the linker kept runs: all are set), with a relaxed byte
// store: invocations that begin afterwards are recorded (shed == false) or
// not (shed == true); invocations already running keep their decision.
// Returns false when no registered module has a guard for `fn`.
bool SetPassGuard(uint64_t fn, bool shed);

// Guards registered by modules currently loaded (copies counted).
size_t PassGuardCount();

// Tables unregistered so far (lb_pass_unregister_guards): when it has not
// moved, every function that had a guard still has one.
uint64_t PassGuardUnregistrations();
// Whether a registered table still has a guard for `fn`. A function whose
// every guard was unregistered has no trace points left to run (its module
// is gone, or the JVM agent took its probes out, docs/jvm.md), so its shed
// calls cost nothing any more.
bool PassGuardRegistered(uint64_t fn);

// When set, a module registered afterwards (a dlopen'ed library) has each of
// its guards set to is_shed(fn) before lb_pass_register_guards returns, so
// it sheds what the process already sheds. is_shed runs on the registering
// thread with the registry's lock held: it must not call SetPassGuard and
// must not wait for a lock its caller may hold while calling SetPassGuard
// (reading an immutable snapshot of the shed set is the intended shape).
// nullptr unsets it. SetShedQuery itself takes the registry's lock, so no
// is_shed call that began before it is still running when it returns (the
// budget frees its previous snapshot then).
void SetShedQuery(bool (*is_shed)(uint64_t fn));

}  // namespace lookback::rt

// lb_pass_register_guards / lb_pass_unregister_guards are public
// (lookback.h, with lb_guard_entry, this file's PassGuardEntry): called by
// the constructor and destructor the pass adds to every module with guards,
// and by the JVM agent for its methods' guards.
extern "C" {
// For tests only (tests/integration/pass_test.cc): SetPassGuard(fn, shed != 0)
// from a program thread. Returns 1 when a guard was set, 0 when none is
// registered for `fn`. Not part of the public API.
int lb_debug_shed(uint64_t fn, int shed) __attribute__((visibility("default"), no_instrument_function));
}
