// Working and waiting (work_wait_test.cc): an event loop that waits for
// events most of the time and does a little work on each, beside two threads
// that only sleep. The report must rank the loop's work, not its waiting,
// and set the sleepers aside.
//
//   event_loop [WORK_MS] [SLEEP_MS]
//
// The loop thread runs rounds of wait_for_event() (poll() with a 20 ms
// timeout on a pipe nobody writes: waiting) and handle_event() (a spin of
// about 2 ms of CPU: working) until it has done WORK_MS (default 200) of
// handling by its own CPU clock. Two sleeper threads each sit in
// sleep_for_a_while() for SLEEP_MS (default 2000) of nanosleep. main joins.
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "ground_truth.h"

static volatile unsigned long g_sink;
static long g_work_ms = 200, g_sleep_ms = 2000;
static int g_pipe[2];

GT_NOINST static long CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

extern "C" {
LB_TEST_NOINLINE void wait_for_event() {
  pollfd p{g_pipe[0], POLLIN, 0};
  poll(&p, 1, 20);
}
LB_TEST_NOINLINE unsigned long crunch(unsigned long x) {
  for (int i = 0; i < 2000; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}
LB_TEST_NOINLINE void handle_event() {
  const long until = CpuNs() + 2000000;
  unsigned long x = g_sink;
  while (CpuNs() < until) x = crunch(x);
  g_sink = x;
}
LB_TEST_NOINLINE void* event_loop(void*) {
  const long start = CpuNs();
  while (CpuNs() - start < g_work_ms * 1000000L) {
    wait_for_event();
    handle_event();
  }
  return nullptr;
}
LB_TEST_NOINLINE void sleep_for_a_while() {
  timespec ts{g_sleep_ms / 1000, (g_sleep_ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}
LB_TEST_NOINLINE void* sleeper(void*) {
  sleep_for_a_while();
  return nullptr;
}
}

int main(int argc, char** argv) {
  if (argc > 1) g_work_ms = atol(argv[1]);
  if (argc > 2) g_sleep_ms = atol(argv[2]);
  if (pipe(g_pipe) != 0) return 1;
  pthread_t loop, s1, s2;
  pthread_create(&s1, nullptr, sleeper, nullptr);
  pthread_create(&s2, nullptr, sleeper, nullptr);
  pthread_create(&loop, nullptr, event_loop, nullptr);
  pthread_join(loop, nullptr);
  pthread_join(s1, nullptr);
  pthread_join(s2, nullptr);
  printf("done %lu\n", g_sink & 1);
  return 0;
}
