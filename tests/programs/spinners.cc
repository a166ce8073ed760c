// N threads call traced functions in a tight loop until told to stop: the
// load under which `lookback dump PID` must still be fast (bench/dump_latency)
// and answer every request (integration/control_test.cc).
//   spinners N [CALLS_BEFORE_READY] [SECONDS]
// Prints "ready PID" once every thread has made CALLS_BEFORE_READY calls
// (default 2,000,000: two records each, so 8 MiB rings have wrapped), then
// spins until a file named "stop" appears in the working directory or
// SECONDS (default 600) have passed. The main thread is not traced.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ground_truth.h"
#include "lookback/lookback.h"

#define NOINLINE LB_TEST_NOINLINE

std::atomic<bool> g_stop{false};
thread_local volatile int g_sink;  // per thread: no data race between traced threads

extern "C" {
NOINLINE void spin_leaf() { g_sink = g_sink + 1; }
NOINLINE void spin_step() { spin_leaf(); }
}

struct alignas(64) Counter {
  std::atomic<uint64_t> calls{0};
};

LOOKBACK_NO_INSTRUMENT static void Spin(int i, Counter* c) {
  const std::string name = "spin-" + std::to_string(i);
  pthread_setname_np(pthread_self(), name.c_str());
  uint64_t n = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    for (int k = 0; k < 1024; ++k) spin_step();  // 2 calls, 4 records
    n += 2048;
    c->calls.store(n, std::memory_order_relaxed);
  }
}

LOOKBACK_NO_INSTRUMENT int main(int argc, char** argv) {
  lb_thread_disable();
  const int threads = argc > 1 ? atoi(argv[1]) : 1;
  const uint64_t ready_calls = argc > 2 ? strtoull(argv[2], nullptr, 10) : 2000000;
  const int seconds = argc > 3 ? atoi(argv[3]) : 600;
  if (threads < 1 || threads > 1024) {
    fprintf(stderr, "usage: spinners N [CALLS_BEFORE_READY] [SECONDS]\n");
    return 2;
  }
  std::vector<Counter> counters(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int i = 0; i < threads; ++i) ts.emplace_back(Spin, i, &counters[static_cast<size_t>(i)]);
  for (;;) {
    bool all = true;
    for (const Counter& c : counters) all = all && c.calls.load(std::memory_order_relaxed) >= ready_calls;
    if (all) break;
    usleep(10000);
  }
  printf("ready %d\n", getpid());
  fflush(stdout);
  for (int i = 0; i < seconds * 100 && access("stop", F_OK) != 0; ++i) usleep(10000);
  g_stop = true;
  for (auto& t : ts) t.join();
  return 0;
}
