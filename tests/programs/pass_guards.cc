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
#include <dlfcn.h>
#include <pthread.h>

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

extern "C" int lb_debug_shed(uint64_t fn, int shed) __attribute__((weak));
extern "C" void lb_thread_disable(void) __attribute__((weak));
extern "C" void lb_thread_enable(void) __attribute__((weak));

namespace {
int g_shed_at = -1;    // victim(n) sheds victim when n == g_shed_at
int g_unshed_at = -1;  // and records it again when n == g_unshed_at
int g_enable_at = -1;  // victim(n) turns tracing back on for its thread when n == g_enable_at
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
  if (n == g_enable_at && lb_thread_enable != nullptr) lb_thread_enable();
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

// `pass_guards dlopen LIB`: LIB's plugin_work has its own guard while LIB
// is loaded, and none once it is unloaded (the runtime must never write to
// an unmapped guard). Prints plugin_work's key for the test.
int ShedInALibrary(const char* path) {
  void* lib = dlopen(path, RTLD_NOW);
  if (lib == nullptr) {
    fprintf(stderr, "pass_guards: %s\n", dlerror());
    return 2;
  }
  auto* work = reinterpret_cast<int (*)(int)>(dlsym(lib, "plugin_work"));
  if (work == nullptr) return 2;
  const uint64_t key = reinterpret_cast<uint64_t>(work);
  work(1);
  work(2);
  const int shed = lb_debug_shed(key, 1);
  work(3);
  work(4);
  dlclose(lib);
  const int after_unload = lb_debug_shed(key, 0);
  printf("pass_guards: plugin_work=%#llx shed=%d after_unload=%d\n", static_cast<unsigned long long>(key), shed,
         after_unload);
  return shed == 1 && after_unload == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "dlopen" && lb_debug_shed != nullptr) return ShedInALibrary(argv[2]);
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
  // 7. Shed, entered with tracing off and left with it on again (turned on
  //    inside victim(1) of victim(2)): the guard decides first, so no
  //    invocation of victim is recorded, not even its exits; leaf is.
  if (lb_thread_disable != nullptr) lb_thread_disable();
  g_enable_at = 1;
  victim(2);
  g_enable_at = -1;
  printf("pass_guards: %s, %d failures\n", lb_debug_shed == nullptr ? "no runtime" : "linked", g_failures);
  return g_failures == 0 ? 0 : 1;
}
