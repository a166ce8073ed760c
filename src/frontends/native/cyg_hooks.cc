// Native front-end: the hooks that gcc and clang call at every function entry
// and exit under -finstrument-functions. They override glibc's no-op hooks,
// whether liblookback is linked in or preloaded.
#include <cstdint>

#include "runtime/exclude.h"
#include "runtime/hot_path.h"

namespace {

// Record() with the run-time exclusion filter (LOOKBACK_EXCLUDE) in front of
// it. The filter is looked at only when tracing is on for the thread, so
// tracing off costs what it did; without a filter it is one load of a global
// and a branch that is never taken.
LOOKBACK_HOT void FilteredRecord(bool exit, uint64_t key, uint64_t call_site) {
  lookback::rt::Ring* r = lb_tls_ring;
  if (__builtin_expect(r == nullptr, 0)) return;
  const uint64_t* excluded = lookback::rt::ExcludeTable();
  if (__builtin_expect(excluded != nullptr, 0) && lookback::rt::Excluded(excluded, key)) {
    lookback::rt::CountFiltered(r);
    return;
  }
  lookback::rt::RecordNow(r, exit, key, call_site);
}

}  // namespace

extern "C" {

__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_enter(void* fn, void* call_site) {
  FilteredRecord(false, reinterpret_cast<uintptr_t>(fn), reinterpret_cast<uintptr_t>(call_site));
}

__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_exit(void* fn, void*) {
  FilteredRecord(true, reinterpret_cast<uintptr_t>(fn), 0);
}

}  // extern "C"
