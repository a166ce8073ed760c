// Native front-end: the hooks that gcc and clang call at every function entry
// and exit under -finstrument-functions. They override glibc's no-op hooks,
// whether liblookback is linked in or preloaded.
#include <cstdint>

#include "runtime/hot_path.h"

extern "C" {

__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_enter(void* fn, void* call_site) {
  lookback::rt::Record(false, reinterpret_cast<uintptr_t>(fn), reinterpret_cast<uintptr_t>(call_site));
}

__attribute__((no_instrument_function, visibility("default"))) void __cyg_profile_func_exit(void* fn, void*) {
  lookback::rt::Record(true, reinterpret_cast<uintptr_t>(fn));
}

}  // extern "C"
