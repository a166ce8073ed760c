// Hubble's Listing 1, ported to C++: a call chain of depth 10 whose leaf does
// `work` iterations of a loop the optimiser cannot delete, called many times.
//
// One source, several builds (bench/CMakeLists.txt): uninstrumented,
// -finstrument-functions (gcc) or -finstrument-functions-after-inlining
// (clang) linked with nothing (glibc's no-op hooks), with liblookback.so, or
// with the floor hook (floor_hooks.cc), -pg for uftrace and gprof, and (clang)
// -fxray-instrument -DLISTING1_XRAY for LLVM XRay, which the program sets up
// itself when BENCH_XRAY_FDR or BENCH_XRAY_COUNT is set (xray_fdr.h): FDR mode
// initialised before the warm-up, the log flushed after the result is printed.
//
// Only the nine Level<N> functions and the leaf are instrumented (everything
// else here is no_instrument_function and xray_never_instrument), so one
// top-level call is exactly 10 function calls and 20 trace points (10 mcount
// calls with -pg).
//
//   listing1_<variant> WORK CALLS WARMUP
//
// runs WARMUP top-level calls (enough to fill a ring once, so first-lap page
// faults are not timed), then times CALLS top-level calls with
// clock_gettime(CLOCK_MONOTONIC) and prints one line:
//
//   listing1 work=W calls=N warmup=M elapsed_ns=T floor_records=R sink=S
//
// floor_records is the floor hook's record count (-1 when the floor hook is
// not linked in); the driver uses it to check the hook really ran.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#if defined(__clang__)
#define BENCH_NO_INSTRUMENT __attribute__((no_instrument_function, xray_never_instrument))
#define BENCH_NOINLINE __attribute__((noinline))
#else
#define BENCH_NO_INSTRUMENT __attribute__((no_instrument_function))
#define BENCH_NOINLINE __attribute__((noinline, noclone))
#endif

#if defined(LISTING1_XRAY)
#include "xray_fdr.h"
#endif

// Defined by the floor hook library only.
extern "C" uint64_t lb_floor_records(void) __attribute__((weak));

namespace {

constexpr int kDepth = 10;

// The leaf: `work` iterations of a trivial loop. The empty asm makes the
// accumulator opaque, so the loop can be neither deleted nor folded.
BENCH_NOINLINE uint64_t Leaf(int work) {
  uint64_t acc = static_cast<uint64_t>(work);
  for (int i = 0; i < work; ++i) {
    acc += static_cast<uint64_t>(i);
    asm volatile("" : "+r"(acc));
  }
  return acc;
}

// Level<N> calls Level<N-1>, Level<1> calls the leaf: Level<kDepth - 1> starts
// a chain of kDepth noinline functions. The "+ N" after each call is a use of
// the result, so no call is a tail call (the build also passes
// -fno-optimize-sibling-calls).
template <int N>
BENCH_NOINLINE uint64_t Level(int work) {
  if constexpr (N == 1) {
    return Leaf(work) + 1;
  } else {
    return Level<N - 1>(work) + N;
  }
}

// Not instrumented: the top-level call itself records nothing.
BENCH_NO_INSTRUMENT uint64_t Chain(int work) { return Level<kDepth - 1>(work); }

BENCH_NO_INSTRUMENT uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

BENCH_NO_INSTRUMENT long ParseCount(const char* s, const char* what) {
  char* end = nullptr;
  const long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0) {
    fprintf(stderr, "listing1: bad %s '%s'\n", what, s);
    exit(2);
  }
  return v;
}

}  // namespace

BENCH_NO_INSTRUMENT int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s WORK CALLS WARMUP\n", argv[0]);
    return 2;
  }
  const int work = static_cast<int>(ParseCount(argv[1], "work"));
  const long calls = ParseCount(argv[2], "calls");
  const long warmup = ParseCount(argv[3], "warmup");

#if defined(LISTING1_XRAY)
  bench_xray::Start();
#endif
  uint64_t sink = 0;
  for (long i = 0; i < warmup; ++i) sink += Chain(work);
  const uint64_t t0 = NowNs();
  for (long i = 0; i < calls; ++i) sink += Chain(work);
  const uint64_t t1 = NowNs();

  const long long floor_records = lb_floor_records ? static_cast<long long>(lb_floor_records()) : -1;
  printf("listing1 work=%d calls=%ld warmup=%ld elapsed_ns=%llu floor_records=%lld sink=%llu\n", work, calls,
         warmup, static_cast<unsigned long long>(t1 - t0), floor_records, static_cast<unsigned long long>(sink));
#if defined(LISTING1_XRAY)
  fflush(stdout);
  bench_xray::Stop();
#endif
  return 0;
}
