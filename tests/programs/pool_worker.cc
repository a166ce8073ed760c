// A thread pool as programs use one (work_wait_test.cc): workers that do a
// burst of work as soon as they start, then park on a condition variable
// until the end, beside a main thread that works longer and a thread that
// only sleeps. The workers' bursts are the program's work: the report must
// rank them, with their time on CPU, although each worker spent under 2 %
// of its span on CPU; the sleeper is set aside.
//
//   pool_worker [BURST_MS] [MAIN_MS] [PARK_MS]
//
// Each of the 2 workers runs burst() for BURST_MS (default 5) of its own CPU
// time, then waits untraced on a condition variable. main runs main_work()
// for MAIN_MS (default 100) of CPU, sleeps PARK_MS (default 1000), wakes the
// workers and joins them. The sleeper sits in sleep_for_a_while() meanwhile.
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "ground_truth.h"

static volatile unsigned long g_sink;
static long g_burst_ms = 5, g_main_ms = 100, g_park_ms = 1000;
static std::mutex g_mutex;
static std::condition_variable g_wake;
static bool g_done = false;

GT_NOINST static long CpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

GT_NOINST static void Park() {
  std::unique_lock<std::mutex> lock(g_mutex);
  g_wake.wait(lock, [] { return g_done; });
}

GT_NOINST static void Sleep(long ms) {
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

extern "C" {
LB_TEST_NOINLINE unsigned long step(unsigned long x) {
  for (int i = 0; i < 500; ++i) x = x * 6364136223846793005ul + 1442695040888963407ul;
  return x;
}
LB_TEST_NOINLINE void burst() {
  const long until = CpuNs() + g_burst_ms * 1000000L;
  unsigned long x = 1;
  while (CpuNs() < until) x = step(x);
  g_sink = x;
}
LB_TEST_NOINLINE void main_work() {
  const long until = CpuNs() + g_main_ms * 1000000L;
  unsigned long x = 2;
  while (CpuNs() < until) x = step(x);
  g_sink = x;
}
LB_TEST_NOINLINE void worker_main() {
  burst();
  Park();
}
LB_TEST_NOINLINE void sleep_for_a_while() { Sleep(g_main_ms + g_park_ms); }
}

GT_NOINST int main(int argc, char** argv) {
  if (argc > 1) g_burst_ms = atol(argv[1]);
  if (argc > 2) g_main_ms = atol(argv[2]);
  if (argc > 3) g_park_ms = atol(argv[3]);
  std::thread sleeper([] {
    pthread_setname_np(pthread_self(), "sleeper");
    sleep_for_a_while();
  });
  std::thread workers[2];
  for (auto& w : workers) {
    w = std::thread([] {
      pthread_setname_np(pthread_self(), "worker");
      worker_main();
    });
  }
  main_work();
  Sleep(g_park_ms);
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_done = true;
  }
  g_wake.notify_all();
  for (auto& w : workers) w.join();
  sleeper.join();
  return 0;
}
