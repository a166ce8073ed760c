// Torn-record stress: 8 threads run a fixed call cycle at full speed while
// the main thread (not traced) takes dumps back to back with lb_dump_sync.
//   hammer DUMPS
// Every dump's window of every thread must be a contiguous piece of the
// cycle p0{ p1{} p2{ p3{} } } with non-decreasing timestamps.
#include <pthread.h>

#include "ground_truth.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "lookback/lookback.h"

#define NOINLINE LB_TEST_NOINLINE

std::atomic<bool> g_stop{false};
std::atomic<int> g_started{0};
thread_local volatile int g_sink;  // per thread: no data race between traced threads

extern "C" {
NOINLINE void p3() { g_sink = g_sink + 3; }
NOINLINE void p1() { g_sink = g_sink + 1; }
NOINLINE void p2() { p3(); g_sink = g_sink + 2; }
NOINLINE void p0() { p1(); p2(); }
}

LOOKBACK_NO_INSTRUMENT static void Run(int i) {
  std::string name = "hammer-" + std::to_string(i);
  pthread_setname_np(pthread_self(), name.c_str());
  p0();
  g_started.fetch_add(1);
  while (!g_stop.load(std::memory_order_relaxed)) p0();
}

LOOKBACK_NO_INSTRUMENT int main(int argc, char** argv) {
  lb_thread_disable();
  const int dumps = argc > 1 ? atoi(argv[1]) : 20;
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; ++i) ts.emplace_back(Run, i);
  while (g_started.load() < 8) std::this_thread::yield();
  for (int k = 0; k < dumps; ++k) {
    char path[4096];
    if (lb_dump_sync("hammer", path, sizeof path) != 0) {
      fprintf(stderr, "dump failed: %s\n", path);
      return 1;
    }
    printf("%s\n", path);
  }
  g_stop = true;
  for (auto& t : ts) t.join();
  printf("p0=%p p1=%p p2=%p p3=%p\n", (void*)&p0, (void*)&p1, (void*)&p2, (void*)&p3);
  return 0;
}
