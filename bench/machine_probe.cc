// Facts about this machine that docs/performance.md quotes next to the
// Listing 1 figures: what a timestamp costs, whether the TSC frequency is
// exposed, and what faulting in an 8 MiB ring costs (the first lap of a
// thread's ring), with the alternatives a recorder could use.
//
//   machine_probe        (about one second)
#include <cpuid.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// ns per operation, median of 5 timed batches.
template <typename F>
double NsPerOp(long n, F f) {
  std::vector<double> r;
  for (int rep = 0; rep < 5; ++rep) {
    const uint64_t t0 = NowNs();
    for (long i = 0; i < n; ++i) f();
    r.push_back(static_cast<double>(NowNs() - t0) / static_cast<double>(n));
  }
  return Median(r);
}

constexpr size_t kRingBytes = size_t{8} << 20;
constexpr size_t kPage = 4096;
constexpr size_t kHuge = size_t{2} << 20;

void* Map(size_t bytes, int extra_flags) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags,
                 -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void Touch(char* p, size_t bytes) {
  for (size_t i = 0; i < bytes; i += kPage) static_cast<volatile char*>(p)[i] = 1;
}

}  // namespace

int main() {
  // ---- CPU and TSC ----------------------------------------------------------
  unsigned a = 0, b = 0, c = 0, d = 0;
  const unsigned max_leaf = __get_cpuid_max(0, nullptr);
  printf("cpuid: max basic leaf 0x%x", max_leaf);
  if (max_leaf >= 0x15) {
    __cpuid(0x15, a, b, c, d);
    printf("; leaf 0x15 (TSC/crystal): eax=%u ebx=%u ecx=%u Hz", a, b, c);
  } else {
    printf(" (no leaf 0x15: the TSC frequency is not enumerated)");
  }
  __cpuid(0x80000007, a, b, c, d);
  printf("; invariant TSC: %s\n", (d >> 8) & 1 ? "yes" : "no");
  const char* const khz_path = "/sys/devices/system/cpu/cpu0/tsc_freq_khz";
  printf("%s: %s\n", khz_path, access(khz_path, R_OK) == 0 ? "present" : "absent");

  uint64_t sink = 0;
  unsigned aux = 0;
  const long n = 2000000;
  printf("rdtsc back to back:         %6.2f ns\n", NsPerOp(n, [&] { sink += __rdtsc(); }));
  printf("rdtscp back to back:        %6.2f ns\n", NsPerOp(n, [&] { sink += __rdtscp(&aux); }));
  printf("clock_gettime(MONOTONIC):   %6.2f ns\n", NsPerOp(n / 2, [&] { sink += NowNs(); }));
  {
    const uint64_t c0 = __rdtsc(), m0 = NowNs();
    timespec nap = {0, 200000000};
    nanosleep(&nap, nullptr);
    const uint64_t c1 = __rdtsc(), m1 = NowNs();
    printf("TSC rate against CLOCK_MONOTONIC over 200 ms: %.1f MHz\n",
           static_cast<double>(c1 - c0) * 1e3 / static_cast<double>(m1 - m0));
  }

  // ---- first lap of an 8 MiB ring ---------------------------------------------
  // Medians of 5; each on a fresh mapping.
  std::vector<double> fault, populate, populated_touch, huge;
  for (int rep = 0; rep < 5; ++rep) {
    uint64_t t0 = NowNs();
    char* p = static_cast<char*>(Map(kRingBytes, 0));
    if (p == nullptr) return 1;
    Touch(p, kRingBytes);
    fault.push_back(static_cast<double>(NowNs() - t0));
    munmap(p, kRingBytes);

    t0 = NowNs();
    p = static_cast<char*>(Map(kRingBytes, MAP_POPULATE));
    if (p == nullptr) return 1;
    const uint64_t t1 = NowNs();
    Touch(p, kRingBytes);
    populate.push_back(static_cast<double>(t1 - t0));
    populated_touch.push_back(static_cast<double>(NowNs() - t1));
    munmap(p, kRingBytes);

    t0 = NowNs();
    char* raw = static_cast<char*>(Map(kRingBytes + kHuge, 0));
    if (raw == nullptr) return 1;
    char* q = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + kHuge - 1) & ~(kHuge - 1));
    const int rc = madvise(q, kRingBytes, MADV_HUGEPAGE);
    Touch(q, kRingBytes);
    huge.push_back(rc == 0 ? static_cast<double>(NowNs() - t0) : -1.0);
    munmap(raw, kRingBytes + kHuge);
  }
  const double pages = static_cast<double>(kRingBytes / kPage);
  printf("8 MiB ring, 4 KiB pages faulted on first touch: %7.2f ms (%.1f us per page)\n", Median(fault) / 1e6,
         Median(fault) / 1e3 / pages);
  printf("8 MiB ring, MAP_POPULATE:                       %7.2f ms, then first touch %.2f ms\n",
         Median(populate) / 1e6, Median(populated_touch) / 1e6);
  if (Median(huge) < 0) {
    printf("8 MiB ring, MADV_HUGEPAGE:                      madvise failed\n");
  } else {
    printf("8 MiB ring, MADV_HUGEPAGE (2 MiB aligned):      %7.2f ms\n", Median(huge) / 1e6);
  }
  printf("(sink %llu)\n", static_cast<unsigned long long>(sink & 1));
  return 0;
}
