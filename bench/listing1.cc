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
//
// Regions (-DLISTING1_REGIONS=R, R = 2 or 3): the same chain spread over R
// code regions, as a C++ program's calls alternate between the executable
// (0x55...) and libstdc++'s copies of header functions (0x7f...), or a JIT's
// code and its runtime. Level<N> is compiled into region N % R (the leaf,
// level 0, and main into region 0, the executable; regions 1 and 2 are shared
// libraries), one build per region with -DLISTING1_SIDE=<region>. With R = 2
// every trace point changes region; with R = 3 they cycle through three.
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

#if defined(LISTING1_REGIONS)
// External linkage: the chain's functions call across shared objects.
#define LISTING1_NAMESPACE listing1_regions
#define LISTING1_EXPORT __attribute__((visibility("default")))
#else
#define LISTING1_NAMESPACE
#define LISTING1_EXPORT
#endif

namespace LISTING1_NAMESPACE {

[[maybe_unused]] constexpr int kDepth = 10;  // (unused in the region-1 and -2 builds)

// The leaf: `work` iterations of a trivial loop. The empty asm makes the
// accumulator opaque, so the loop can be neither deleted nor folded.
BENCH_NOINLINE LISTING1_EXPORT uint64_t Leaf(int work);
#if !defined(LISTING1_REGIONS) || LISTING1_SIDE == 0
BENCH_NOINLINE LISTING1_EXPORT uint64_t Leaf(int work) {
  uint64_t acc = static_cast<uint64_t>(work);
  for (int i = 0; i < work; ++i) {
    acc += static_cast<uint64_t>(i);
    asm volatile("" : "+r"(acc));
  }
  return acc;
}
#endif

// Level<N> calls Level<N-1>, Level<1> calls the leaf: Level<kDepth - 1> starts
// a chain of kDepth noinline functions. The "+ N" after each call is a use of
// the result, so no call is a tail call (the build also passes
// -fno-optimize-sibling-calls).
template <int N>
BENCH_NOINLINE LISTING1_EXPORT uint64_t Level(int work) {
  if constexpr (N == 1) {
    return Leaf(work) + 1;
  } else {
    return Level<N - 1>(work) + N;
  }
}

#if defined(LISTING1_REGIONS)
// Each level is instantiated in its region's build only; every other build
// calls it across the shared-object boundary.
#define LISTING1_PLACE(N) template uint64_t Level<N>(int)
#define LISTING1_ELSEWHERE(N) extern template uint64_t Level<N>(int)
#if 1 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(1);
#else
LISTING1_ELSEWHERE(1);
#endif
#if 2 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(2);
#else
LISTING1_ELSEWHERE(2);
#endif
#if 3 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(3);
#else
LISTING1_ELSEWHERE(3);
#endif
#if 4 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(4);
#else
LISTING1_ELSEWHERE(4);
#endif
#if 5 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(5);
#else
LISTING1_ELSEWHERE(5);
#endif
#if 6 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(6);
#else
LISTING1_ELSEWHERE(6);
#endif
#if 7 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(7);
#else
LISTING1_ELSEWHERE(7);
#endif
#if 8 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(8);
#else
LISTING1_ELSEWHERE(8);
#endif
#if 9 % LISTING1_REGIONS == LISTING1_SIDE
LISTING1_PLACE(9);
#else
LISTING1_ELSEWHERE(9);
#endif
#endif

// The rest (the timed loop, main) lives in region 0, the executable.
#if defined(LISTING1_REGIONS) && LISTING1_SIDE != 0
}  // namespace LISTING1_NAMESPACE
#else

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

}  // namespace LISTING1_NAMESPACE

#if defined(LISTING1_REGIONS)
using namespace LISTING1_NAMESPACE;
#endif

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
#endif  // region 0
