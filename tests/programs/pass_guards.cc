// Shedding a function of a pass-built program (pass_test.cc, PassGuards.*):
// `victim` is shed and recorded again while invocations of it are on the
// stack, recursively, from its own thread and from another one. The test
// knows the exact sequence of calls the dump must hold (no timing involved:
// every flip happens at a fixed point of the recursion, and the other
// thread waits for the flip on a condition variable).
//
// Linked with liblookback, lb_debug_shed sets the guard (runtime/pass_guards.h).
// Run without the runtime (the weak reference is null), the same calls run,
// nothing is shed, and the program exits 0 all the same.
#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <thread>

extern "C" int lb_debug_shed(uint64_t fn, int shed) __attribute__((weak));

namespace {
int g_shed_at = -1;    // victim(n) sheds victim when n == g_shed_at
int g_unshed_at = -1;  // and records it again when n == g_unshed_at
thread_local bool t_worker = false;
int g_wait_at = -1;  // the worker stops in victim(g_wait_at) until main has shed victim
std::mutex g_mu;
std::condition_variable g_cv;
bool g_inside = false, g_go = false;
int g_failures = 0;
}  // namespace

extern "C" {
volatile int g_sink;

__attribute__((noinline)) void marker() { g_sink = g_sink + 1; }
__attribute__((noinline)) void leaf() { g_sink = g_sink + 1; }
__attribute__((noinline)) int victim(int n);

__attribute__((noinline)) void shed_victim(int shed) {
  if (lb_debug_shed == nullptr) return;
  if (lb_debug_shed(reinterpret_cast<uint64_t>(&victim), shed) != 1) {
    fprintf(stderr, "pass_guards: no guard registered for victim\n");
    ++g_failures;
  }
}

__attribute__((noinline)) int victim(int n) {
  if (n == g_shed_at) {
    shed_victim(1);
    marker();
  }
  if (n == g_unshed_at) {
    shed_victim(0);
    marker();
  }
  if (t_worker && n == g_wait_at) {
    std::unique_lock<std::mutex> lock(g_mu);
    g_inside = true;
    g_cv.notify_all();
    g_cv.wait(lock, [] { return g_go; });
  }
  const int r = n > 0 ? victim(n - 1) : (leaf(), 0);
  g_sink = r;  // after the call: the recursion stays a recursion (no tail call, no accumulator loop)
  return r + 1;
}
}  // extern "C"

int main() {
  // 1. Recorded: victim x3 with leaf inside.
  victim(2);
  // 2. Shed inside victim(1) of victim(3): victim(3), (2), (1) were entered
  //    recorded and exit recorded; victim(0) is not recorded; leaf is.
  g_shed_at = 1;
  victim(3);
  g_shed_at = -1;
  // 3. Shed: only leaf.
  victim(2);
  // 4. Recorded again inside victim(1) of victim(3): only victim(0) (and the
  //    marker, leaf) is recorded; the three unrecorded invocations record no exit.
  g_unshed_at = 1;
  victim(3);
  g_unshed_at = -1;
  // 5. Recorded: victim x2.
  victim(1);
  // 6. Another thread is inside victim(1) of victim(3) when main sheds victim:
  //    its three recorded invocations exit recorded, victim(0) is not recorded.
  g_wait_at = 1;
  std::thread worker([] {
    pthread_setname_np(pthread_self(), "guard-worker");
    t_worker = true;
    victim(3);
  });
  {
    std::unique_lock<std::mutex> lock(g_mu);
    g_cv.wait(lock, [] { return g_inside; });
  }
  shed_victim(1);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_go = true;
  }
  g_cv.notify_all();
  worker.join();
  printf("pass_guards: %s, %d failures\n", lb_debug_shed == nullptr ? "no runtime" : "linked", g_failures);
  return g_failures == 0 ? 0 : 1;
}
