// Workloads for the just-in-time triggers (docs/triggers.md). Linked with
// liblookback.so; configured by LOOKBACK_* variables set by the test.
//
//   triggers stall MS           main thread "ui": 30 steady frames (scope "frame"), an idle gap of MS ms
//                               outside any scope, one frame stuck MS ms in
//                               run_frame > render > fetch_over_ipc > stuck_in_here, 10 more frames
//   triggers steady MS_TOTAL    steady scoped frames for MS_TOTAL ms (nothing slow, nothing stuck)
//   triggers stall-noscope MS   like stall without scopes; idle waits are in wait_for_vsync(), which
//                               also holds one idle gap of MS ms before the stuck frame
//   triggers slow-scope MS      steady frames, one frame that spins MS ms in slow_layout()
//   triggers slow-call MS       handle_request > (anonymous namespace)::parse_request(int) every
//                               ~2 ms: 100 fast ones, one that sleeps MS ms (none if MS is 0), then
//                               1 s of fast ones
//   triggers crash KIND         thread "crasher": crash_outer > crash_middle > crash_here, which
//                               crashes: segv | abort | fpe | ill | bus-or-segv
//   triggers own-handler HOW    main installs its own SIGSEGV handler (after lookback started), then
//                               thread "crasher" segfaults in crash_here; the handler prints
//                               "handler ran" and then HOW: abort | reraise (SIG_DFL + raise) |
//                               exit (_exit(3)) | recover (siglongjmp back, the program runs on and
//                               prints "recovered") | query (prints "query ok" if sigaction(NULL)
//                               gives back its own handler, then _exit(0) without crashing)
//   triggers stack-overflow     thread "crasher" recurses in recurse_forever() until its stack ends
//   triggers storm N            N scopes "frame" of 30 ms each (sleeping in storm_work), 1 ms apart;
//                               prints elapsed_ms=
//   triggers explicit-storm N   N times: ~20 ms of pulses (~2000 records), then lb_dump("explicit-storm")
//                               (the last one lb_dump_sync); prints queued= failed=
//   triggers queue-and-exit N   ~20 ms of pulses, then N lb_dump("queued") calls at once and a return
//                               from main right after; prints queued= failed=
//   triggers busy MS_TOTAL [DUMP_EVERY_MS]
//                               thread "busy" calls busy_tick() in a tight loop for MS_TOTAL ms after a
//                               200 ms warm-up and measures the gaps between consecutive calls; with
//                               DUMP_EVERY_MS the (untraced) main thread takes a dump that often.
//                               prints max_gap_ns= p9999_gap_ns= calls= dumps=
//
// Every frame function is noinline, noclone and C++ (demangled names carry
// their parameter lists), so name globs are matched as users would write them.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "ground_truth.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "lookback/lookback.h"
#include "lookback/lookback.hpp"

#define NOINLINE LB_TEST_NOINLINE
#define NOINST __attribute__((no_instrument_function))

thread_local volatile unsigned g_sink;  // per thread: no data race between traced threads
thread_local volatile double g_acc = 1.0;

NOINST static int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

NOINST static void SleepMs(int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// ---- frames ----------------------------------------------------------------

NOINLINE void mix(int i) {
  double a = g_acc;
  for (int k = 0; k < 64; ++k) a = a * 1.0000001 + (i ^ k) * 0.5;
  g_acc = a;
}
NOINLINE void layout_pass() {
  for (int i = 0; i < 32; ++i) mix(i);
}
NOINLINE void draw_pass() {
  for (int i = 0; i < 32; ++i) mix(i + 1);
}
NOINLINE void update(int64_t us) {
  const int64_t end = NowNs() + us * 1000;
  do layout_pass();
  while (NowNs() < end);
}
NOINLINE void stuck_in_here(int ms) { SleepMs(ms); }  // no trace point for ms milliseconds
NOINLINE void fetch_over_ipc(int ms) {
  mix(7);
  stuck_in_here(ms);
  mix(8);
}
NOINLINE void render(int64_t us, int stuck_ms) {
  const int64_t end = NowNs() + us * 1000;
  do draw_pass();
  while (NowNs() < end);
  if (stuck_ms > 0) fetch_over_ipc(stuck_ms);
}
NOINLINE void slow_layout(int ms) {  // spins without a trace point
  const int64_t end = NowNs() + static_cast<int64_t>(ms) * 1000000;
  double a = g_acc;
  while (NowNs() < end) a = a * 1.0000001 + 1;
  g_acc = a;
}
// ~0.5 ms of math in nested calls, plus whatever goes wrong in this frame.
NOINLINE void run_frame(int stuck_ms, int slow_ms) {
  update(200);
  render(300, stuck_ms);
  if (slow_ms > 0) slow_layout(slow_ms);
}
NOINLINE void scoped_frame(int stuck_ms, int slow_ms) {
  LOOKBACK_SCOPE("frame");
  run_frame(stuck_ms, slow_ms);
}
NOINLINE void idle_between_frames(int ms) { SleepMs(ms); }  // outside any scope
NOINLINE void wait_for_vsync(int ms) { SleepMs(ms); }       // the idle function of scope-less threads

NOINST static void NameThisThread(const char* name) { pthread_setname_np(pthread_self(), name); }

NOINLINE void steady_scoped_frames(int n) {
  for (int i = 0; i < n; ++i) {
    scoped_frame(0, 0);
    idle_between_frames(4);
  }
}
NOINLINE void steady_unscoped_frames(int n) {
  for (int i = 0; i < n; ++i) {
    run_frame(0, 0);
    wait_for_vsync(4);
  }
}

// ---- requests --------------------------------------------------------------

namespace {
NOINLINE int parse_request(int delay_ms) {
  unsigned h = 2166136261u;
  for (int i = 0; i < 64; ++i) h = (h ^ static_cast<unsigned>(i + delay_ms)) * 16777619u;
  if (delay_ms > 0) SleepMs(delay_ms);
  g_sink = h;
  return static_cast<int>(h & 0xff);
}
}  // namespace
NOINLINE void handle_request(int delay_ms) {
  g_sink = g_sink + static_cast<unsigned>(parse_request(delay_ms));
}
NOINST static void Requests(int64_t total_ms) {
  const int64_t end = NowNs() + total_ms * 1000000;
  while (NowNs() < end) {
    handle_request(0);
    SleepMs(2);
  }
}

// ---- crashes ---------------------------------------------------------------

enum CrashKind { kSegv, kAbort, kFpe, kIll, kBus };
volatile int g_zero = 0;
int* volatile g_null = nullptr;

NOINLINE void crash_here(int kind) {
  mix(1);
  switch (kind) {
    case kSegv: {
      // A real store to address 0, in asm so that UBSan does not stop it first.
      int* p = g_null;
      asm volatile("movl $1, (%0)" : : "r"(p) : "memory");
      break;
    }
    case kAbort: abort();
    case kFpe: {
      // A real #DE fault; a C division by zero would be caught by UBSan first.
      unsigned a = 100, divisor = static_cast<unsigned>(g_zero);
      asm volatile("xorl %%edx, %%edx\n\tdivl %1" : "+a"(a) : "r"(divisor) : "rdx", "cc");
      g_sink = a;
      break;
    }
    case kIll: __builtin_trap();
    case kBus: {
      // Reading a page of a mapping past the end of its (empty) file: SIGBUS.
      char path[] = "/tmp/lookback-triggers-bus-XXXXXX";
      const int fd = mkstemp(path);
      if (fd >= 0) unlink(path);
      void* p = fd >= 0 ? mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
      const volatile char* c = p == MAP_FAILED ? reinterpret_cast<const volatile char*>(g_null) : static_cast<char*>(p);
      g_sink = static_cast<unsigned>(*c);
      break;
    }
  }
}
NOINLINE void crash_middle(int kind) {
  mix(2);
  crash_here(kind);
  g_sink = g_sink + 1;
}
NOINLINE void crash_outer(int kind) {
  mix(3);
  crash_middle(kind);
  g_sink = g_sink + 1;
}

// ---- the program's own crash handler, stack overflow --------------------------

const char* g_how = "";
sigjmp_buf g_recover;

NOINST void OwnSegvHandler(int sig, siginfo_t*, void*) {
  const char msg[] = "handler ran\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
  if (strcmp(g_how, "abort") == 0) abort();
  if (strcmp(g_how, "reraise") == 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  if (strcmp(g_how, "recover") == 0) siglongjmp(g_recover, 1);
  _exit(3);
}

NOINLINE int recurse_forever(int depth) {
  volatile char pad[256];
  pad[0] = static_cast<char>(depth);
  return recurse_forever(depth + 1) + pad[0];
}

// ---- storms ----------------------------------------------------------------

NOINLINE void storm_work(int ms) { SleepMs(ms); }
NOINLINE void storm_scope(int ms) {
  LOOKBACK_SCOPE("frame");
  storm_work(ms);
}
NOINLINE void pulse_leaf() { g_sink = g_sink + 1; }
NOINLINE void pulse() {
  for (int i = 0; i < 50; ++i) pulse_leaf();
}

// ---- gap benchmark ---------------------------------------------------------

NOINLINE void busy_tick() { g_sink = g_sink + 1; }

NOINST static inline uint64_t Ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(NowNs());
#endif
}

// Log-linear histogram of gaps in ticks: exact below 64, then 64 buckets per
// power of two (1.6% resolution).
constexpr int kBuckets = 64 + 58 * 64;
static uint64_t g_hist[kBuckets];
NOINST static inline int BucketOf(uint64_t v) {
  if (v < 64) return static_cast<int>(v);
  const int e = 63 - __builtin_clzll(v);  // >= 6
  return 64 + (e - 6) * 64 + static_cast<int>((v >> (e - 6)) - 64);
}
NOINST static uint64_t BucketLow(int b) {
  if (b < 64) return static_cast<uint64_t>(b);
  const int e = (b - 64) / 64 + 6, sub = (b - 64) % 64;
  return static_cast<uint64_t>(64 + sub) << (e - 6);
}

struct BusyResult {
  uint64_t max_gap_ticks = 0, calls = 0;
  double ns_per_tick = 1;
};
std::atomic<int> g_busy_phase{0};  // 1: warmed up, 2: done

NOINST static void BusyThread(int64_t total_ms, BusyResult* r) {
  NameThisThread("busy");
  // Warm up: the ring is allocated and every page of it faulted in.
  const int64_t warm_end = NowNs() + 200 * 1000000;
  for (uint64_t i = 0;; ++i) {
    busy_tick();
    if ((i & 4095) == 0 && NowNs() >= warm_end) break;
  }
  g_busy_phase.store(1);
  const int64_t mono0 = NowNs(), end = mono0 + total_ms * 1000000;
  const uint64_t tsc0 = Ticks();
  uint64_t prev = tsc0, max_gap = 0, calls = 0;
  for (;;) {
    busy_tick();
    const uint64_t now = Ticks();
    const uint64_t gap = now - prev;
    prev = now;
    ++g_hist[BucketOf(gap)];
    if (gap > max_gap) max_gap = gap;
    if ((++calls & 4095) == 0 && NowNs() >= end) break;
  }
  const int64_t mono1 = NowNs();
  const uint64_t tsc1 = Ticks();
  g_busy_phase.store(2);
  r->max_gap_ticks = max_gap;
  r->calls = calls;
  r->ns_per_tick = tsc1 > tsc0 ? static_cast<double>(mono1 - mono0) / static_cast<double>(tsc1 - tsc0) : 1.0;
}

NOINST static int Busy(int64_t total_ms, int64_t dump_every_ms) {
  lb_thread_disable();  // only the busy thread is traced
  BusyResult r;
  std::thread t(BusyThread, total_ms, &r);
  while (g_busy_phase.load() < 1) SleepMs(1);
  int dumps = 0, failed = 0;
  char path[4096] = "";
  if (dump_every_ms > 0) {
    while (g_busy_phase.load() < 2) {
      SleepMs(dump_every_ms);
      if (g_busy_phase.load() >= 2) break;
      if (lb_dump_sync("gap benchmark", path, sizeof path) == 0) {
        ++dumps;
      } else {
        ++failed;
        fprintf(stderr, "dump failed: %s\n", path);
      }
    }
  }
  t.join();
  uint64_t total = 0;
  for (uint64_t n : g_hist) total += n;
  const uint64_t want = total - total / 10000;  // 99.99% of the gaps are at or below the answer
  uint64_t seen = 0, p9999 = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += g_hist[b];
    if (seen >= want) {
      p9999 = BucketLow(b + 1 < kBuckets ? b + 1 : b);  // the bucket's upper edge
      break;
    }
  }
  printf("max_gap_ns=%llu p9999_gap_ns=%llu calls=%llu dumps=%d failed=%d last_dump=%s\n",
         static_cast<unsigned long long>(static_cast<double>(r.max_gap_ticks) * r.ns_per_tick),
         static_cast<unsigned long long>(static_cast<double>(p9999) * r.ns_per_tick),
         static_cast<unsigned long long>(r.calls), dumps, failed, path);
  return failed == 0 ? 0 : 1;
}

// ---- main ------------------------------------------------------------------

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: triggers MODE [ARG...]\n");
    return 2;
  }
  // No std::string here: clang 14 with libstdc++ 12 fails to link its
  // instrumented inline members.
  const char* m = argv[1];
  auto mode_is = [m](const char* x) { return strcmp(m, x) == 0; };
  const char* sarg = argc > 2 ? argv[2] : "";
  const int arg = atoi(sarg);
  setvbuf(stdout, nullptr, _IOLBF, 0);

  if (mode_is("stall")) {
    NameThisThread("ui");
    steady_scoped_frames(30);
    idle_between_frames(arg);  // idle: outside every scope
    scoped_frame(arg, 0);      // stuck inside the scope
    steady_scoped_frames(10);
  } else if (mode_is("steady")) {
    NameThisThread("ui");
    const int64_t end = NowNs() + static_cast<int64_t>(arg) * 1000000;
    while (NowNs() < end) steady_scoped_frames(1);
  } else if (mode_is("stall-noscope")) {
    NameThisThread("ui");
    steady_unscoped_frames(30);
    wait_for_vsync(arg);  // idle, if wait_for_vsync is an idle function
    run_frame(arg, 0);    // stuck
    wait_for_vsync(4);
    steady_unscoped_frames(10);
  } else if (mode_is("slow-scope")) {
    NameThisThread("ui");
    steady_scoped_frames(30);
    scoped_frame(0, arg);
    idle_between_frames(4);
    steady_scoped_frames(10);
  } else if (mode_is("slow-call")) {
    for (int i = 0; i < 100; ++i) {
      handle_request(0);
      SleepMs(2);
    }
    if (arg > 0) handle_request(arg);
    Requests(1000);
  } else if (mode_is("crash")) {
    // No core files from a hundred crashes (the signal and exit status are unchanged).
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int kind = -1;
    if (strcmp(sarg, "segv") == 0) kind = kSegv;
    if (strcmp(sarg, "abort") == 0) kind = kAbort;
    if (strcmp(sarg, "fpe") == 0) kind = kFpe;
    if (strcmp(sarg, "ill") == 0) kind = kIll;
    if (strcmp(sarg, "bus-or-segv") == 0) kind = kBus;
    if (kind < 0) {
      fprintf(stderr, "unknown crash kind '%s'\n", sarg);
      return 2;
    }
    steady_unscoped_frames(2);
    std::thread t([kind] {
      NameThisThread("crasher");
      run_frame(0, 0);
      crash_outer(kind);
    });
    t.join();
    fprintf(stderr, "crash %s did not crash\n", sarg);
    return 3;
  } else if (mode_is("own-handler")) {
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    g_how = sarg;
    struct sigaction sa {};
    sa.sa_sigaction = OwnSegvHandler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    if (strcmp(sarg, "query") == 0) {
      struct sigaction back {};
      sigaction(SIGSEGV, nullptr, &back);
      if ((back.sa_flags & SA_SIGINFO) && back.sa_sigaction == OwnSegvHandler) printf("query ok\n");
      return 0;
    }
    steady_unscoped_frames(2);
    std::thread t([] {
      NameThisThread("crasher");
      run_frame(0, 0);
      if (sigsetjmp(g_recover, 1) == 0) crash_outer(kSegv);
      run_frame(0, 0);  // recovered: traced calls go on
      printf("recovered\n");
    });
    t.join();
    return 0;
  } else if (mode_is("stack-overflow")) {
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    std::thread t([] {
      NameThisThread("crasher");
      run_frame(0, 0);
      g_sink = static_cast<unsigned>(recurse_forever(0));
    });
    t.join();
    return 3;
  } else if (mode_is("storm")) {
    const int64_t start = NowNs();
    for (int i = 0; i < arg; ++i) {
      storm_scope(30);
      SleepMs(1);
    }
    printf("elapsed_ms=%lld\n", static_cast<long long>((NowNs() - start) / 1000000));
  } else if (mode_is("explicit-storm")) {
    int queued = 0, failed = 0;
    for (int i = 0; i < arg; ++i) {
      for (int k = 0; k < 20; ++k) {
        pulse();
        SleepMs(1);
      }
      if (i + 1 < arg) {
        (lb_dump("explicit-storm") == 0 ? queued : failed)++;
      } else {
        // The last one waits: the requests before it are written by then.
        char path[4096];
        if (lb_dump_sync("explicit-storm", path, sizeof path) == 0) {
          ++queued;
          printf("last=%s\n", path);
        } else {
          ++failed;
          fprintf(stderr, "dump failed: %s\n", path);
        }
      }
    }
    printf("queued=%d failed=%d\n", queued, failed);
  } else if (mode_is("queue-and-exit")) {
    for (int k = 0; k < 20; ++k) {
      pulse();
      SleepMs(1);
    }
    int queued = 0, failed = 0;
    for (int i = 0; i < arg; ++i) (lb_dump("queued") == 0 ? queued : failed)++;
    printf("queued=%d failed=%d\n", queued, failed);
  } else if (mode_is("busy")) {
    return Busy(arg, argc > 3 ? atoi(argv[3]) : 0);
  } else {
    fprintf(stderr, "unknown mode %s\n", m);
    return 2;
  }
  return 0;
}
