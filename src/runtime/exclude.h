// Run-time exclusion filter for the hook front-end and lb_enter/lb_exit
// (LOOKBACK_EXCLUDE, `lookback record --exclude`, and the functions the
// overhead budget sheds, budget.h): calls of these functions are not recorded.
//
// It exists for builds that cannot exclude at compile time: clang's
// -finstrument-functions has no exclude lists (gcc's does; the clang pass has
// -lookback-exclude), and programs built by someone else. The hooks still
// run for an excluded function; what is saved is the record (the timestamp
// and the ring space), not the call.
//
// The set is an immutable open-addressing table of function addresses,
// published through one atomic pointer (nullptr: no filter). Writers (the
// runtime's initialisation, then the control thread when modules are loaded)
// build a new table and publish it; old tables are never freed, since a hook
// may still be reading one, and they are only replaced when modules change.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/hot_path.h"

#define LOOKBACK_EXCLUDE_HOT inline __attribute__((always_inline, no_instrument_function))

namespace lookback::rt {

// table[0] = slot mask; table[1 .. mask + 1] = keys, 0 = empty. Accessed
// with __atomic builtins, not std::atomic: in an unoptimised build
// std::atomic's member functions are out-of-line template instances, and an
// instrumented program's copy of them would call the hook that calls them.
// Hidden: the hooks load it with one RIP-relative mov, not through the GOT.
extern const uint64_t* g_exclude_table __attribute__((visibility("hidden")));

LOOKBACK_EXCLUDE_HOT const uint64_t* ExcludeTable() { return __atomic_load_n(&g_exclude_table, __ATOMIC_ACQUIRE); }

LOOKBACK_EXCLUDE_HOT bool Excluded(const uint64_t* table, uint64_t key) {
  const uint64_t mask = table[0];
  for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 40;; ++i) {
    const uint64_t k = table[1 + (i & mask)];
    if (k == key) return true;
    if (k == 0) return false;
  }
}

// The overhead budget's shed functions (budget.h), filtered with the
// excluded ones in the same table: the hooks pay one lookup either way.
void SetShedFilter(const std::vector<uint64_t>& keys) __attribute__((no_instrument_function));
// Adds `key` (a function no program calls) to the published table, or takes
// it out again (0), so MeasureTracePoint times the hooks' filtered path as a
// program's shed function takes it. Other threads meanwhile pay a lookup.
void SetCalibrationKey(uint64_t key) __attribute__((no_instrument_function));

// Resolves LOOKBACK_EXCLUDE against the loaded modules and publishes the
// table (an empty match publishes nothing). Not on any trace-point path.
void RefreshExcludes() __attribute__((no_instrument_function));
// Calls RefreshExcludes() if modules were loaded or unloaded since the last
// call and at least `min_interval_ns` has passed. For the control thread.
void RefreshExcludesIfModulesChanged(uint64_t now_ns, uint64_t min_interval_ns) __attribute__((no_instrument_function));

}  // namespace lookback::rt
