#include "runtime/sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <x86intrin.h>

#include <cstring>
#include <string>

#include "runtime/alloc_counter.h"
#include "runtime/clock.h"
#include "runtime/runtime.h"

// Defined by liblookback-alloc.so when it is loaded (weak: null otherwise).
extern "C" void lb_alloc_read(LbAllocCounters* out) __attribute__((weak));

namespace lookback::rt {
namespace {

// The calling thread's buffer while its timer may fire; null otherwise.
__thread SampleBuffer* tls_samples __attribute__((tls_model("initial-exec"))) = nullptr;

bool g_on = false;
int g_signal = 0;
uint64_t g_interval_ns = 0;
uint64_t g_state_interval_ns = 0;
bool g_wall = false;
// 0 untried, 1 perf_event_open works, 2 it does not (POSIX timers from then on).
int g_perf_state = 0;
// Process RSS in bytes, refreshed by the control thread, copied into samples.
uint64_t g_rss_bytes = 0;
uint64_t g_next_rss_ns = 0;
long g_page_size = 4096;

constexpr uint64_t kRssRefreshNs = 10'000'000;

void Store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

// Written by the owner thread only (its signal handler, or itself with the timer disarmed).
void TakeSample(SampleBuffer* s) {
  uint64_t v[format::kSampleFields] = {};
  v[format::kSampleTsc] = __rdtsc();
  // Not getrusage's user + system time: for a running thread the kernel
  // brings that up to date only at ticks and context switches (4 ms steps at
  // HZ=250), while CLOCK_THREAD_CPUTIME_ID is exact now.
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
    v[format::kSampleCpuNs] = static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
  rusage ru{};
  if (getrusage(RUSAGE_THREAD, &ru) == 0) {
    v[format::kSampleMinorFaults] = static_cast<uint64_t>(ru.ru_minflt);
    v[format::kSampleMajorFaults] = static_cast<uint64_t>(ru.ru_majflt);
    v[format::kSampleVoluntarySwitches] = static_cast<uint64_t>(ru.ru_nvcsw);
    v[format::kSampleInvoluntarySwitches] = static_cast<uint64_t>(ru.ru_nivcsw);
  }
  v[format::kSampleRssBytes] = __atomic_load_n(&g_rss_bytes, __ATOMIC_RELAXED);
  if (lb_alloc_read != nullptr) {
    LbAllocCounters c{};
    lb_alloc_read(&c);
    v[format::kSampleHeapBytes] = c.heap_bytes;
    v[format::kSampleHeapObjects] = c.heap_objects;
    v[format::kSampleAllocBytes] = c.thread_alloc_bytes;
    v[format::kSampleFreedBytes] = c.thread_freed_bytes;
  }
  const uint64_t pos = __atomic_load_n(&s->pos, __ATOMIC_RELAXED);
  uint64_t* slot = s->samples[pos & (kSampleCapacity - 1)];
  std::atomic_thread_fence(std::memory_order_release);
  for (uint32_t f = 0; f < format::kSampleFields; ++f) Store(&slot[f], v[f]);
  __atomic_store_n(&s->pos, pos + 1, __ATOMIC_RELEASE);
}

void OnSampleSignal(int, siginfo_t*, void*) {
  const int saved = errno;
  if (SampleBuffer* s = tls_samples) TakeSample(s);
  errno = saved;
}

// The thread's task clock, through perf_event_open: an hrtimer that runs
// only while the thread does, so samples are spaced by CPU time to within
// microseconds and a blocked thread is never woken by them.
int OpenPerfTimer(uint32_t tid) {
  perf_event_attr a{};
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;
  a.sample_period = g_interval_ns;
  a.disabled = 1;
  a.wakeup_events = 1;
  int fd = -1;
  for (int exclude_kernel : {0, 1}) {  // perf_event_paranoid 2 allows user-only counting
    a.exclude_kernel = static_cast<uint64_t>(exclude_kernel);
    a.exclude_hv = 1;
    fd = static_cast<int>(syscall(SYS_perf_event_open, &a, static_cast<pid_t>(tid), -1, -1, PERF_FLAG_FD_CLOEXEC));
    if (fd >= 0 || (errno != EACCES && errno != EPERM)) break;
  }
  if (fd < 0) return -1;
  f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(tid)};
  if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, g_signal) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool ArmPosixTimer(SampleBuffer* s, uint32_t tid) {
  sigevent ev{};
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = g_signal;
  ev._sigev_un._tid = static_cast<pid_t>(tid);
  if (timer_create(g_wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID, &ev, &s->timer) != 0) return false;
  itimerspec its{};
  its.it_interval.tv_sec = static_cast<time_t>(g_interval_ns / 1000000000ull);
  its.it_interval.tv_nsec = static_cast<long>(g_interval_ns % 1000000000ull);
  its.it_value = its.it_interval;
  if (timer_settime(s->timer, 0, &its, nullptr) != 0) {
    timer_delete(s->timer);
    return false;
  }
  s->has_timer = true;
  return true;
}

// "S (sleeping)": the letter after the last ')' of /proc/.../stat.
char ParseState(const char* buf, size_t n) {
  for (size_t i = n; i-- > 0;) {
    if (buf[i] == ')') return i + 2 < n ? buf[i + 2] : 0;
  }
  return 0;
}

// pread of a kept-open /proc file: a quarter of open/read/close. The fd is
// checked against the tid it was opened for, in case the program closed it
// and the number now names something else.
char ReadState(SampleBuffer* s, uint32_t tid) {
  char prefix[16];
  const int plen = snprintf(prefix, sizeof prefix, "%u (", tid);
  char buf[512];
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (s->stat_fd < 0) {
      char path[64];
      snprintf(path, sizeof path, "/proc/self/task/%u/stat", tid);
      s->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
      if (s->stat_fd < 0) return 0;
    }
    const ssize_t n = pread(s->stat_fd, buf, sizeof buf - 1, 0);
    if (n > plen && memcmp(buf, prefix, static_cast<size_t>(plen)) == 0) return ParseState(buf, static_cast<size_t>(n));
    if (n >= 0 || errno == EBADF) s->stat_fd = -1;  // not ours any more: reopen (never close a number we no longer own)
    else return 0;
  }
  return 0;
}

void RefreshRss() {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[128];
  const ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return;
  buf[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (sscanf(buf, "%llu %llu", &size, &resident) == 2)
    __atomic_store_n(&g_rss_bytes, resident * static_cast<uint64_t>(g_page_size), __ATOMIC_RELAXED);
}

}  // namespace

void InitSampling() {
  const Config& c = R().config;
  if (c.sample_mode == 0) return;
  g_wall = c.sample_mode == 2;
  g_interval_ns = c.sample_interval_ns;
  g_state_interval_ns = c.state_interval_ns;
  g_signal = c.sample_signal;
  g_page_size = sysconf(_SC_PAGESIZE);
  struct sigaction old{};
  if (sigaction(g_signal, nullptr, &old) != 0 ||
      ((old.sa_flags & SA_SIGINFO) ? old.sa_sigaction != nullptr
                                   : old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
    Say(std::string("sampling is off: the program already handles ") + strsignal(g_signal) +
        " (choose another with LOOKBACK_SAMPLE_SIGNAL)");
    return;
  }
  struct sigaction sa{};
  sa.sa_sigaction = OnSampleSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  if (sigaction(g_signal, &sa, nullptr) != 0) {
    Say(std::string("sampling is off: cannot install the handler for ") + strsignal(g_signal));
    return;
  }
  RefreshRss();
  g_on = true;
}

bool SamplingOn() { return g_on; }

void StartThreadSampling(Ring* r) {
  if (!g_on || r->samples != nullptr) return;
  const uint64_t bytes = (sizeof(SampleBuffer) + 4095) & ~uint64_t{4095};
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    SayOnce("sampling: no memory for a thread's sample buffer; that thread is not sampled");
    return;
  }
  SampleBuffer* s = new (mem) SampleBuffer;
  s->map_bytes = bytes;
  s->flags = 0;
  if (g_wall) s->flags |= format::kSampleWall;
  if (lb_alloc_read != nullptr) s->flags |= format::kSampleAlloc;
  if (g_state_interval_ns != 0) s->flags |= format::kSampleStates;
  TakeSample(s);  // the first one, before the timer can fire
  bool armed = false;
  if (!g_wall && __atomic_load_n(&g_perf_state, __ATOMIC_RELAXED) != 2) {
    s->perf_fd = OpenPerfTimer(r->tid);
    if (s->perf_fd >= 0) {
      __atomic_store_n(&g_perf_state, 1, __ATOMIC_RELAXED);
      s->flags |= format::kSamplePerf;
      armed = true;
    } else {
      const int err = errno;
      __atomic_store_n(&g_perf_state, 2, __ATOMIC_RELAXED);
      SayOnce(std::string("sampling: perf_event_open is not available (") + strerror(err) +
              "; see /proc/sys/kernel/perf_event_paranoid): using a thread CPU-time POSIX timer, "
              "whose samples are only as regular as the scheduler tick");
    }
  }
  if (!armed) armed = ArmPosixTimer(s, r->tid);
  if (!armed) SayOnce(std::string("sampling: cannot create a timer (") + strerror(errno) + "): threads keep only their first and last samples");
  R().reserved_bytes.fetch_add(bytes, std::memory_order_relaxed);
  r->samples = s;  // published to dumpers with the ring (the registry's release), or here for a re-enabled thread
  tls_samples = s;
}

void StopThreadSampling(Ring* r) {
  SampleBuffer* s = r != nullptr ? r->samples : nullptr;
  if (s == nullptr) return;
  if (s->perf_fd >= 0) {
    ioctl(s->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
    close(s->perf_fd);
    s->perf_fd = -1;
  }
  if (s->has_timer) {
    timer_delete(s->timer);
    s->has_timer = false;
  }
  // A signal already pending is handled before this line or never (tls_samples is this thread's).
  tls_samples = nullptr;
  TakeSample(s);  // the last one
}

void SampleThisThreadNow() {
  SampleBuffer* s = tls_samples;
  if (s == nullptr) return;
  // The timer's handler must not publish into the same buffer while we do
  // (one writer at a time): a signal arriving now finds no buffer and skips.
  tls_samples = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  TakeSample(s);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  tls_samples = s;
}

void SamplingAfterForkChild() { tls_samples = nullptr; }

void FreeSampleBuffer(Ring* r) {
  SampleBuffer* s = r->samples;
  if (s == nullptr) return;
  r->samples = nullptr;
  if (s->stat_fd >= 0) close(s->stat_fd);
  if (s->perf_fd >= 0) close(s->perf_fd);  // a forked child's copy of the parent's event
  R().reserved_bytes.fetch_sub(s->map_bytes, std::memory_order_relaxed);
  munmap(s, s->map_bytes);
}

uint64_t PollThreadStates(uint64_t now_ns) {
  if (!g_on) return 0;
  if (now_ns >= g_next_rss_ns) {
    RefreshRss();
    g_next_rss_ns = now_ns + kRssRefreshNs;
  }
  if (g_state_interval_ns == 0) return g_next_rss_ns;
  Runtime& rt = R();
  std::lock_guard<std::mutex> lock(ControlMutex());  // rings are only unmapped under it
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr || r->samples == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
    SampleBuffer* s = r->samples;
    const char st = ReadState(s, r->tid);
    if (st == 0 || st == s->last_state) continue;
    s->last_state = st;
    const uint64_t pos = s->state_pos;
    uint64_t* e = s->states[pos & (kStateCapacity - 1)];
    std::atomic_thread_fence(std::memory_order_release);
    Store(&e[0], __rdtsc());
    Store(&e[1], static_cast<uint64_t>(static_cast<unsigned char>(st)));
    __atomic_store_n(&s->state_pos, pos + 1, __ATOMIC_RELEASE);
  }
  const uint64_t next = now_ns + g_state_interval_ns;
  return next < g_next_rss_ns ? next : g_next_rss_ns;
}

uint64_t SnapshotSamples(const SampleBuffer& s, std::vector<uint64_t>* samples, std::vector<uint64_t>* states) {
  bool overrun = false;  // one-entry publications: a single try always keeps all but one slot
  CopyPublished(&s.state_pos, &s.states[0][0], kStateCapacity, 2, 1, states, &overrun);
  return CopyPublished(&s.pos, &s.samples[0][0], kSampleCapacity, format::kSampleFields, 1, samples, &overrun);
}

}  // namespace lookback::rt
