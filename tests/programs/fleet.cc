// The fleet corpus's program (tests/fleet/fleet_test.cc, docs/fleet.md): one
// program built twice, the second build with a planted regression
// (-DFLEET_REGRESSION: checksum_frame sleeps 10 ms instead of a few
// microseconds of arithmetic), run as many "hosts" (LOOKBACK_HOST).
//
//   main                         thread "fleet"
//     on_click x2
//       binder_call              with `binder`: the signature's chain
//         wait_reply             sleeps 3 ms
//       local_update             without `binder`
//   render thread                thread "render"
//     serve_request x30
//       parse_request            ~µs
//       draw
//         compute_layout         computes for 2 ms of CPU time
//         checksum_frame         ~µs; 10 ms with FLEET_REGRESSION
//       flush_io                 sleeps 2 ms
//     wait_for_lock              with `stall`: sleeps 60 ms, once (a stall)
//
// Durations that tests compare are sleeps, which only get longer on a loaded
// machine, so the planted regression stays the largest whatever the load.
// compute_layout computes for a fixed CPU time, not a fixed count of
// iterations, so that the render thread is on CPU a seventh of its traced
// time or more on any machine (over half in build 1): with microseconds of
// work per sleep a fast machine classed it as a thread that only waited
// (under 2 % on CPU, model/waiting.h), and the fleet's cpu-by-function query
// came back empty.
//
//   fleet [binder] [stall]
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <cstdint>
#include <thread>

#include "ground_truth.h"

#define NOINLINE LB_TEST_NOINLINE

static volatile unsigned g_sink;

GT_NOINST static void Work(int n) {
  for (int i = 0; i < n; ++i) g_sink = g_sink + static_cast<unsigned>(i);
}
GT_NOINST static int64_t ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
GT_NOINST static void WorkFor(int64_t cpu_ns) {
  const int64_t until = ThreadCpuNs() + cpu_ns;
  while (ThreadCpuNs() < until) Work(1000);
}
GT_NOINST static void Sleep(int ms) {
  timespec ts{0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

extern "C" {
NOINLINE void parse_request() { Work(200); }
NOINLINE void compute_layout() { WorkFor(2000000); }
NOINLINE void checksum_frame() {
#ifdef FLEET_REGRESSION
  Sleep(10);
#else
  Work(100);
#endif
}
NOINLINE void draw() {
  compute_layout();
  checksum_frame();
}
NOINLINE void flush_io() { Sleep(2); }
NOINLINE void serve_request() {
  parse_request();
  draw();
  flush_io();
}
NOINLINE void wait_for_lock() { Sleep(60); }
NOINLINE void wait_reply() { Sleep(3); }
NOINLINE void binder_call() { wait_reply(); }
NOINLINE void local_update() { Work(50); }
NOINLINE void on_click(bool binder) {
  if (binder) binder_call(); else local_update();
}
NOINLINE void render_loop(bool stall) {
  for (int i = 0; i < 30; ++i) {
    serve_request();
    if (stall && i == 10) wait_for_lock();
  }
}
}

int main(int argc, char** argv) {
  bool binder = false, stall = false;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "binder") == 0) binder = true;
    if (strcmp(argv[i], "stall") == 0) stall = true;
  }
  std::thread render([stall] {
    pthread_setname_np(pthread_self(), "render");
    render_loop(stall);
  });
  for (int i = 0; i < 2; ++i) on_click(binder);
  render.join();
  return 0;
}
