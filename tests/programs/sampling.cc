// Workloads with known per-thread behaviour, for sampling (docs/sampling.md).
// Run under `lookback record --sample...`; each phase is a named thread
// created with pthread_create (no C++ runtime allocations around it):
//
//   sampling MS
//     "spinner" spins MS ms on the CPU while "sleeper" sleeps MS ms (in
//     50 ms naps, resumed when a signal cuts one short); then, one after
//     another:
//     "faulter"   touches every 4 KiB page of a fresh 32 MiB mapping (no huge pages)
//     "switcher"  sleeps 1 ms, 100 times
//     "allocator" mallocs 1000 blocks of 1000 bytes, then frees 500 of them
//   prints pages=N naps=N alloc_bytes=N freed_bytes=N (usable sizes, as
//   the interposer counts them) spinner_cpu_permille=N (the spinner's own
//   CPU time over its wall time, in thousandths)
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include <utility>

namespace {

int g_ms = 300;
volatile uint64_t g_sink = 0;
uint64_t g_spin_cpu_permille = 0;
size_t g_pages = 0, g_naps = 0, g_alloc_bytes = 0, g_freed_bytes = 0;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

__attribute__((noinline)) void spin_a_little() {
  for (int i = 0; i < 2000; ++i) g_sink = g_sink + static_cast<uint64_t>(i);
}

__attribute__((noinline)) void nap(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000ull), static_cast<long>(ns % 1000000000ull)};
  nanosleep(&ts, nullptr);  // a wall-clock sample may cut it short: callers loop on the clock
}

uint64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

void* spinner(void*) {
  const uint64_t start = NowNs(), cpu_start = ThreadCpuNs();
  const uint64_t end = start + static_cast<uint64_t>(g_ms) * 1000000ull;
  while (NowNs() < end) spin_a_little();
  // What the thread itself saw: under load (ctest -j2) it gets less than a core.
  g_spin_cpu_permille = (ThreadCpuNs() - cpu_start) * 1000 / (NowNs() - start);
  return nullptr;
}

void* sleeper(void*) {
  const uint64_t end = NowNs() + static_cast<uint64_t>(g_ms) * 1000000ull;
  for (uint64_t now = NowNs(); now < end; now = NowNs()) nap(end - now < 50000000 ? end - now : 50000000);
  return nullptr;
}

__attribute__((noinline)) void touch_pages(char* p, size_t pages) {
  for (size_t i = 0; i < pages; ++i) p[i * 4096] = 1;
}

void* faulter(void*) {
  const size_t bytes = 32u << 20;
  char* p = static_cast<char*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) return nullptr;
  madvise(p, bytes, MADV_NOHUGEPAGE);  // one minor fault per 4 KiB page
  touch_pages(p, bytes / 4096);
  g_pages = bytes / 4096;
  munmap(p, bytes);
  return nullptr;
}

void* switcher(void*) {
  for (int i = 0; i < 100; ++i) {
    const uint64_t end = NowNs() + 1000000;
    for (uint64_t now = NowNs(); now < end; now = NowNs()) nap(end - now);
    ++g_naps;
  }
  return nullptr;
}

__attribute__((noinline)) void allocate_pattern() {
  static void* blocks[1000];
  for (int i = 0; i < 1000; ++i) {
    blocks[i] = malloc(1000);
    static_cast<char*>(blocks[i])[0] = 1;
    g_alloc_bytes += malloc_usable_size(blocks[i]);
  }
  for (int i = 0; i < 1000; i += 2) {
    g_freed_bytes += malloc_usable_size(blocks[i]);
    free(blocks[i]);
  }
}

void* allocator(void*) {
  allocate_pattern();
  return nullptr;
}

// Each thread names itself before it runs its phase. Naming it from here,
// after pthread_create, raced with a short phase (the allocator's): a thread
// that had already passed its exit hook kept the program's name in the dump,
// and the test found no "allocator" (1 run in 4). lookback reads a thread's
// name when it exits; a rename that lands after that cannot reach the dump.
struct Phase {
  void* (*fn)(void*);
  const char* name;
};

void* Named(void* arg) {
  const Phase* p = static_cast<const Phase*>(arg);
  pthread_setname_np(pthread_self(), p->name);
  return p->fn(nullptr);
}

void Run(void* (*fn)(void*), const char* name, pthread_t* t) {
  static Phase phases[8];
  static int used = 0;
  phases[used] = {fn, name};
  pthread_create(t, nullptr, Named, &phases[used++]);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_ms = atoi(argv[1]);
  pthread_t a, b;
  Run(spinner, "spinner", &a);
  Run(sleeper, "sleeper", &b);
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  for (auto [fn, name] : {std::pair{faulter, "faulter"}, {switcher, "switcher"}, {allocator, "allocator"}}) {
    Run(fn, name, &a);
    pthread_join(a, nullptr);
  }
  printf("pages=%zu naps=%zu alloc_bytes=%zu freed_bytes=%zu spinner_cpu_permille=%llu\n", g_pages, g_naps,
         g_alloc_bytes, g_freed_bytes, static_cast<unsigned long long>(g_spin_cpu_permille));
  return 0;
}
