// LLVM XRay, driven by the traced program itself (clang only). Used by
// listing1.cc (built with -DLISTING1_XRAY) and, through xray_fdr_main.cc, by
// the real programs of bench/compare.sh.
//
//   BENCH_XRAY_FDR=<FDR flags>  bench_xray::Start() selects and initialises FDR
//                               mode with these flags (e.g.
//                               "func_duration_threshold_us=0"), then patches
//                               the sleds; bench_xray::Stop() finalises and
//                               flushes the log to XRAY_OPTIONS's
//                               xray_logfile_base.
//   BENCH_XRAY_COUNT=1          a handler that only counts sled hits; Stop()
//                               prints "xray_trace_points=N" on stderr.
//   neither                     the sleds stay unpatched (nops).
//
// XRAY_OPTIONS alone records nothing in FDR mode, and with clang 14
// __xray_log_init_mode("xray-fdr", ...) silently returns
// XRAY_LOG_UNINITIALIZED unless the mode was selected first
// (__xray_log_select_mode("xray-fdr"), or xray_mode=xray-fdr in XRAY_OPTIONS).
// A failure exits with status 3 so a benchmark cannot mistake an untraced run
// for a traced one.
#pragma once

#if !defined(__clang__)
#error "xray_fdr.h needs clang (-fxray-instrument)"
#endif

#include <xray/xray_interface.h>
#include <xray/xray_log_interface.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#define BENCH_XRAY_NEVER __attribute__((xray_never_instrument, no_instrument_function))

namespace bench_xray {

enum Mode { kOff, kFdr, kCount };
inline Mode g_mode = kOff;
inline uint64_t g_count = 0;

BENCH_XRAY_NEVER inline void CountHandler(int32_t, XRayEntryType) { ++g_count; }

[[noreturn]] BENCH_XRAY_NEVER inline void Fail(const char* what, int status) {
  fprintf(stderr, "bench_xray: %s failed (status %d)\n", what, status);
  fflush(stderr);
  _exit(3);
}

BENCH_XRAY_NEVER inline void Start() {
  const char* fdr = getenv("BENCH_XRAY_FDR");
  const char* count = getenv("BENCH_XRAY_COUNT");
  if (fdr != nullptr) {
    const XRayLogRegisterStatus sel = __xray_log_select_mode("xray-fdr");
    if (sel != XRayLogRegisterStatus::XRAY_REGISTRATION_OK) Fail("__xray_log_select_mode(\"xray-fdr\")", sel);
    const XRayLogInitStatus init = __xray_log_init_mode("xray-fdr", fdr);
    if (init != XRayLogInitStatus::XRAY_LOG_INITIALIZED) Fail("__xray_log_init_mode(\"xray-fdr\")", init);
    g_mode = kFdr;
  } else if (count != nullptr && count[0] == '1') {
    if (__xray_set_handler(CountHandler) != 1) Fail("__xray_set_handler", 0);
    g_mode = kCount;
  } else {
    return;
  }
  const XRayPatchingStatus patch = __xray_patch();
  if (patch != XRayPatchingStatus::SUCCESS) Fail("__xray_patch", patch);
}

BENCH_XRAY_NEVER inline void Stop() {
  if (g_mode == kFdr) {
    const XRayLogInitStatus fin = __xray_log_finalize();
    if (fin != XRayLogInitStatus::XRAY_LOG_FINALIZED) Fail("__xray_log_finalize", fin);
    const XRayLogFlushStatus flush = __xray_log_flushLog();
    if (flush != XRayLogFlushStatus::XRAY_LOG_FLUSHED) Fail("__xray_log_flushLog", flush);
  } else if (g_mode == kCount) {
    __xray_unpatch();
    fprintf(stderr, "xray_trace_points=%llu\n", static_cast<unsigned long long>(g_count));
  }
  g_mode = kOff;
}

}  // namespace bench_xray
