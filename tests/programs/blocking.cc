// Fast clock, blocking (fast_clock_test.cc): a thread that blocks inside a
// call whose entry was written without a TSC reading of its own must still
// show the call's true duration.
//
//   blocking OUT_FILE [SLEEP_MS]
//
// Runs a dense stretch of tiny calls (so a fast-clock ring reads the TSC once
// per group of records), then 0..15 more tiny calls so that the entry of
// `sleeper` lands at every position of a group, then `sleeper`, which
// sleeps SLEEP_MS (default 100) and measures its own duration with
// CLOCK_MONOTONIC. Writes "sleeper <ns> <cpu_ns>" per call to OUT_FILE, in
// order: cpu_ns is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over the
// whole round, the tiny calls and sleeper. The recorder's off-CPU accounting
// trusts that clock; on a virtual machine whose host takes the CPU while the
// thread is current (steal time), the clock counts that time as the thread's
// own, and the test allows for what it counted.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ground_truth.h"

static volatile unsigned g_sink;
static long g_sleep_ms = 100;

GT_NOINST static long NowNs(clockid_t clock = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

extern "C" {
LB_TEST_NOINLINE void tiny() { g_sink = g_sink + 1; }
LB_TEST_NOINLINE long sleeper() {
  const long t0 = NowNs();
  timespec ts{g_sleep_ms / 1000, (g_sleep_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
  return NowNs() - t0;
}
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (argc > 2) g_sleep_ms = atol(argv[2]);
  FILE* out = fopen(argv[1], "w");
  if (out == nullptr) return 3;
  for (int align = 0; align < 16; ++align) {
    const long cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < 2000; ++i) tiny();
    for (int i = 0; i < align; ++i) tiny();
    const long ns = sleeper();
    fprintf(out, "sleeper %ld %ld\n", ns, NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu0);
  }
  fclose(out);
  return 0;
}
