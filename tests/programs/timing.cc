// A program with a known timing structure, for the analyses (report, chains,
// match, diff, sql). All durations are spun or slept for, in ms:
//
//   main
//     handle_request x3          inclusive ~ 30 + 5*2 + 10 = 50 ms
//       render                   self ~10 ms (sleeps in libc, which is not traced)
//         slow_parse x1          self 30 ms (spins)
//         fast_parse x5          self 2 ms each (6 ms each with `slower`)
//     on_click x2
//       binder_call
//         wait_reply             self 20 ms (sleeps): the planted "sleep after binder call" chain
//     idle_tick x50              ~0 ms each
//
//   timing [slower]
#include <string.h>
#include <time.h>

#include "ground_truth.h"

#define NOINLINE LB_TEST_NOINLINE

static int g_fast_ms = 2;
thread_local volatile unsigned g_sink;

GT_NOINST static long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}
GT_NOINST static void Spin(int ms) {
  const long end = NowNs() + ms * 1000000L;
  while (NowNs() < end) g_sink = g_sink + 1;
}
GT_NOINST static void Sleep(int ms) {
  timespec ts{0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

extern "C" {
NOINLINE void slow_parse() { Spin(30); }
NOINLINE void fast_parse() { Spin(g_fast_ms); }
NOINLINE void render() {
  slow_parse();
  for (int i = 0; i < 5; ++i) fast_parse();
  Sleep(10);
}
NOINLINE void handle_request() { render(); }
NOINLINE void wait_reply() { Sleep(20); }
NOINLINE void binder_call() { wait_reply(); }
NOINLINE void on_click() { binder_call(); }
NOINLINE void idle_tick() { g_sink = g_sink + 1; }
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "slower") == 0) g_fast_ms = 6;
  for (int i = 0; i < 3; ++i) handle_request();
  for (int i = 0; i < 2; ++i) on_click();
  for (int i = 0; i < 50; ++i) idle_tick();
  return 0;
}
