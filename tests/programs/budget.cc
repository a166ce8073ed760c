// The overhead budget's test program (tests/integration/budget_test.cc): a
// hot call tree whose leaf is far too frequent to trace within any budget.
//
//   budget hot SECONDS TRUTH   runs outer -> 20 x mid -> 50 x leaf for SECONDS
//                              of its CPU time, logging its own newest calls
//                              (the ground truth) to TRUTH at the end
//                              (printing "hot-end NS", CLOCK_MONOTONIC, before it writes TRUTH)
//   budget phases SECONDS      the same for SECONDS, then a calm phase: a few
//                              calls of leaf every 10 ms for 6 s, long
//                              enough for the budget to bring shed functions back
//   budget flat SECONDS        a flat profile: spread -> each of kFlat functions
//                              in turn, none of them more than 1/kFlat of the
//                              calls, for SECONDS of its CPU time
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <utility>

#include "ground_truth.h"

namespace {

// The newest calls, in a ring of its own (the program makes far more than
// ground_truth.h keeps): written with code the compiler never instruments.
constexpr unsigned kTruth = 1u << 22;
uintptr_t* g_truth;
uint64_t g_truth_n;

GT_NOINST void Log(void* fn, int exit) { g_truth[g_truth_n++ & (kTruth - 1)] = (uintptr_t)fn | ((uintptr_t)exit << 63); }

GT_NOINST double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

volatile int g_sink;

}  // namespace

// Plain names for the tests to find.
extern "C" GT_NOINLINE int leaf(int x);
extern "C" GT_NOINLINE int mid(int x);
extern "C" GT_NOINLINE int outer(int x);

extern "C" GT_NOINLINE int leaf(int x) {
  Log((void*)&leaf, 0);
  const int r = x * 3 + 1;
  Log((void*)&leaf, 1);
  return r;
}

extern "C" GT_NOINLINE int mid(int x) {
  Log((void*)&mid, 0);
  int s = 0;
  for (int i = 0; i < 50; ++i) s += leaf(x + i);
  Log((void*)&mid, 1);
  return s;
}

extern "C" GT_NOINLINE int outer(int x) {
  Log((void*)&outer, 0);
  int s = 0;
  for (int i = 0; i < 20; ++i) s += mid(x + i);
  Log((void*)&outer, 1);
  return s;
}

// The flat profile: kFlat functions of the same small work, called in turn.
// Each costs the thread a share of its tracing far under a twentieth of a 3 %
// budget, so only shedding many of them brings the thread under it.
constexpr int kFlat = 512;

// Unsigned: the arithmetic wraps, which signed overflow must not (UBSan).
template <int N>
GT_NOINLINE unsigned flat(unsigned x) {
  unsigned s = x;
  // Some 40 ns of work: a few times a trace point, so that tracing costs
  // the thread about half its time and each function about 1/1000 of it.
  for (int i = 0; i < 40; ++i) s = s * 7u + (s >> 3) + N;
  return s;
}

// Calls flat<Base>, flat<Base + 1>, ... in turn (a fold: no table whose
// accessors the hooks would trace too; clang folds at most 256).
template <int Base, int... N>
GT_NOINLINE unsigned SpreadOver(unsigned x, std::integer_sequence<int, N...>) {
  unsigned s = 0;
  ((s += flat<Base + N>(x + N)), ...);
  return s;
}

extern "C" GT_NOINLINE int spread(int x);
extern "C" GT_NOINLINE int spread(int x) {
  static_assert(kFlat == 512, "two folds of 256");
  const unsigned s = SpreadOver<0>(static_cast<unsigned>(x), std::make_integer_sequence<int, 256>{}) +
                     SpreadOver<256>(static_cast<unsigned>(x), std::make_integer_sequence<int, 256>{});
  return static_cast<int>(s & 0x7fffffffu);
}

namespace {

GT_NOINST void WriteTruth(const char* path) {
  FILE* f = fopen(path, "w");
  if (f == nullptr) {
    perror(path);
    exit(3);
  }
  const long tid = syscall(SYS_gettid);
  const uint64_t n = g_truth_n < kTruth ? g_truth_n : kTruth;
  for (uint64_t i = g_truth_n - n; i < g_truth_n; ++i) {
    const uintptr_t e = g_truth[i & (kTruth - 1)];
    fprintf(f, "%ld %s 0x%lx\n", tid, (e >> 63) ? "EXIT" : "ENTER", (unsigned long)(e & ~((uintptr_t)1 << 63)));
  }
  fclose(f);
}

}  // namespace

GT_NOINST int main(int argc, char** argv) {
  if (argc < 3) return 2;
  g_truth = static_cast<uintptr_t*>(malloc(sizeof(uintptr_t) * kTruth));
  const double seconds = atof(argv[2]);
  const double until = CpuSeconds() + seconds;
  int n = 0;
  if (strcmp(argv[1], "flat") == 0) {
    while (CpuSeconds() < until) g_sink = spread(n++);
    return 0;
  }
  while (CpuSeconds() < until) g_sink = outer(n++);
  if (strcmp(argv[1], "hot") == 0 && argc > 3) {
    // When the hot phase ended (CLOCK_MONOTONIC, the budget's clock): the
    // log written next makes no call, and in a slow build (the sanitizers'
    // Debug build: seconds) the budget may call the program calm and bring
    // what it shed back before the exit dump (budget_test.cc).
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("hot-end %lld\n", static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
    fflush(stdout);
    WriteTruth(argv[3]);
  } else if (strcmp(argv[1], "phases") == 0) {
    for (int i = 0; i < 600; ++i) {
      for (int k = 0; k < 5; ++k) g_sink = leaf(k);
      const timespec ten_ms = {0, 10'000'000};
      nanosleep(&ten_ms, nullptr);
    }
  }
  return 0;
}
