// Per-thread recorder state: thread setup on the first trace point, the slow
// path of a record, thread exit, retention, fork, and the public C API.
#include "runtime/runtime.h"
#include "runtime/budget.h"
#include "runtime/exclude.h"
#include "runtime/triggers.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lookback/lookback.h"
#include "runtime/on_cpu.h"
#include "runtime/sampler.h"

using lookback::rt::Ring;

// The ABI objects (hot_path.h).
__thread Ring* lb_tls_ring __attribute__((tls_model("initial-exec"))) = &lb_sentinel_ring;
Ring lb_sentinel_ring;  // pos == next_sync == 0: every use takes the slow path

// The compiler hooks (cyg_hooks.cc), which MeasureTracePoint times.
extern "C" void __cyg_profile_func_enter(void* fn, void* call_site);
extern "C" void __cyg_profile_func_exit(void* fn, void* call_site);

namespace lookback::rt {
namespace {

// OFFCPU accounting (lb_ring_slow): the monotonic clock must be read within
// this many ticks of the TSC (about 50 us at 2-4 GHz) to be trusted, and the
// time off CPU written is what was measured less this slack, which covers
// the gap between the two readings and the CPU clock's accounting.
constexpr uint64_t kOffCpuReadWindowTicks = 1u << 17;
constexpr uint64_t kOffCpuSlackNs = 10000;
// Fast clock: records further apart than this on average (about 1-2 us at
// 2-4 GHz) are sparse, and a reading each costs under 1 % of their time.
constexpr uint32_t kSparseTicksPerRecord = 4096;

// Why the calling thread has no ring (only read when lb_tls_ring is not a ring).
enum ThreadStatus : uint8_t {
  kStatusNew = 0,      // never set up
  kStatusTracing,      // has a ring
  kStatusNotSelected,  // LOOKBACK_THREADS did not match its name
  kStatusNoMemory,     // memory or thread cap
  kStatusDisabled,     // lb_thread_disable / LOOKBACK_ENABLED=0
  kStatusExited,       // past its exit hook
  kStatusControl,      // lookback's own thread
  kStatusForeignAbi,   // the process runs inlined trace points of another ring ABI
};

__thread uint8_t tls_status __attribute__((tls_model("initial-exec"))) = kStatusNew;
__thread Ring* tls_own_ring __attribute__((tls_model("initial-exec"))) = nullptr;  // even while disabled
// DumpOnThisThread: the ring this thread stopped recording into, and when (PausedAt).
__thread Ring* tls_paused_ring __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint64_t tls_paused_tsc __attribute__((tls_model("initial-exec"))) = 0;
// Set by a non-local exit (caught exception, longjmp); the next entry records its call site.
__thread bool tls_unwind_pending __attribute__((tls_model("initial-exec"))) = false;
// lb_thread_enable() was called: trace this thread even with LOOKBACK_ENABLED=0.
__thread bool tls_enabled_by_api __attribute__((tls_model("initial-exec"))) = false;
// lb_thread_set_name before the thread's ring exists (a JVM names a thread
// before it runs Java code): used for selection and copied into the ring.
__thread char tls_given_name[sizeof(Ring::given_name)] __attribute__((tls_model("initial-exec")));

alignas(Runtime) unsigned char g_runtime_storage[sizeof(Runtime)];
std::atomic<uint32_t> g_foreign_abi{0};  // the ring ABI of foreign inlined code seen (0: none)
std::atomic<int> g_init_state{0};  // 0 none, 1 running, 2 done
pthread_key_t g_exit_key;
alignas(std::mutex) unsigned char g_mutex_storage[sizeof(std::mutex)];

const char* GetEnv(const char* name) { return getenv(name); }

bool NameSelected(const Config& c, const char* name) {
  if (c.thread_patterns.empty()) return true;
  for (const auto& p : c.thread_patterns) {
    if (fnmatch(p.c_str(), name, 0) == 0) return true;
  }
  return false;
}

void OnThreadExit(void* arg);

uint64_t ClockNs(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Arms the thread's on-CPU word and notes the clocks its next OFFCPU record
// is measured from. Arming comes first: a deschedule between the two then
// only makes the measured time off CPU smaller, never larger.
void ArmAndNote(Ring* r) {
  ArmOnCpu(r->on_cpu);
  r->armed_mono_ns = ClockNs(CLOCK_MONOTONIC);
  r->armed_cpu_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
}

// The next record of any writer takes the slow path: next_sync 0 for the
// exact path (the hooks' and a front-end's that writes timed records itself,
// which keeps the ring past this: lb_thread_ring), and, since a dense
// fast ring's untimed records do not look at next_sync, the on-CPU word
// cleared (as the kernel would). The owner's slow path sets both again.
void ForceSlowPath(Ring* r) {
  __atomic_store_n(&r->next_sync, 0, __ATOMIC_RELAXED);
  if (r->fast_mask != 0) __atomic_store_n(const_cast<uint64_t*>(r->on_cpu), 0, __ATOMIC_RELAXED);
}

// Fast clock for this thread's ring, if the kernel can tell us when the
// thread leaves the CPU (on_cpu.h); without that a thread blocked in an
// untimed stretch would smear its records over the block, so it stays exact.
//
// The ring starts sparse (a reading per record) and turns dense after a
// group of records came faster than kSparseTicksPerRecord each.
void StartFastClock(Ring* r, uint32_t group) {
  const OnCpuWatch w = ThisThreadOnCpuWatch();
  if (w.word == nullptr) {
    SayOnce("LOOKBACK_CLOCK=fast needs the kernel's rseq area (glibc 2.35+, rseq not disabled): tracing with the exact clock");
    return;
  }
  r->on_cpu = w.word;
  r->fast_mask = group - 1;
  r->sparse_ticks = group * kSparseTicksPerRecord;
  r->clock_mask = 0;
}

// Fast rings, on every slow path (which has a fresh reading at `tsc` and
// has written records up to `pos`): dense -> sparse when the time since the
// last reading says the records are far apart; sparse -> dense when the last
// group came quickly. While sparse, next_sync brings the slow path back
// after a group to look again.
void AdaptClock(Ring* r, uint64_t pos, uint64_t tsc, uint32_t since_reading) {
  const uint64_t group = uint64_t{r->fast_mask} + 1;
  if (r->clock_mask != 0) {
    if (since_reading <= r->sparse_ticks) return;
    r->clock_mask = 0;
  } else if (pos - r->adapt_pos >= group) {
    if (tsc - r->adapt_tsc < (pos - r->adapt_pos) * kSparseTicksPerRecord / 2) {  // hysteresis: twice as dense
      r->clock_mask = r->fast_mask;
      ArmAndNote(r);  // off-CPU time while sparse needs no accounting
      return;
    }
  } else {
    r->next_sync = std::min(r->next_sync, r->adapt_pos + group);
    return;
  }
  r->adapt_pos = pos;
  r->adapt_tsc = tsc;
  r->next_sync = std::min(r->next_sync, pos + group);
}

// Maps header + slots so that the slots start on a 2 MiB boundary and asks
// for transparent huge pages past the first 2 MiB of slots: a fresh ring's
// first lap otherwise takes one page fault per 4 KiB (1.5 to 10 us each in
// these VMs, 6 to 20 ms per 8 MiB ring, paid by the traced thread). The first
// 2 MiB keep small pages: most threads of a real program record little (a
// pool's idle workers, a JVM's service threads), and a huge page would give
// each of them 2 MiB of memory at its first record, and cost it 0.25 to
// 2.4 ms of clearing and compaction; a busy thread pays 512 small faults once
// instead (docs/performance.md, "The first lap of a ring"). Memory is
// committed only as it is used; where THP is off this is an ordinary mapping.
Ring* SetUpRing(void* mem, uint64_t header, uint64_t capacity, uint64_t bytes);

void* MapRingMemory(uint64_t bytes, uint64_t header) {
  constexpr uint64_t kHuge = 2ull << 20;
  const bool huge = bytes - header >= kHuge;
  const uint64_t span = huge ? bytes + kHuge : bytes;
  char* raw = static_cast<char*>(
      mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  if (raw == MAP_FAILED) return nullptr;
  if (!huge) return raw;
  // Slots at the first 2 MiB boundary at least `header` bytes in; give back the rest.
  const uint64_t slots = (reinterpret_cast<uint64_t>(raw) + header + kHuge - 1) & ~(kHuge - 1);
  char* mem = reinterpret_cast<char*>(slots - header);
  if (mem > raw) munmap(raw, static_cast<size_t>(mem - raw));
  char* end = mem + bytes;
  if (raw + span > end) munmap(end, static_cast<size_t>(raw + span - end));
  // (Explicit for the first 2 MiB, where THP is "always".)
  madvise(reinterpret_cast<void*>(slots), kHuge, MADV_NOHUGEPAGE);
  if (bytes - header > kHuge) madvise(reinterpret_cast<void*>(slots + kHuge), bytes - header - kHuge, MADV_HUGEPAGE);
  return mem;
}

Ring* AllocateRing(Runtime& rt) {
  const uint64_t capacity = rt.config.buffer_bytes / 8;
  const uint64_t header = 4096;
  const uint64_t bytes = header + capacity * 8;
  uint64_t reserved = rt.reserved_bytes.load(std::memory_order_relaxed);
  do {
    if (reserved + bytes > rt.config.max_memory) return nullptr;
  } while (!rt.reserved_bytes.compare_exchange_weak(reserved, reserved + bytes, std::memory_order_relaxed));
  void* mem = MapRingMemory(bytes, header);
  if (mem == nullptr) {
    rt.reserved_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    return nullptr;
  }
  return SetUpRing(mem, header, capacity, bytes);
}

// A ring's header in `mem` (header bytes, then capacity slots), empty.
Ring* SetUpRing(void* mem, uint64_t header, uint64_t capacity, uint64_t bytes) {
  Ring* r = new (mem) Ring;
  r->pos = 0;
  r->next_sync = 0;  // the first record is a sync: EPOCH and FN_BASE
  r->sync_at = 0;
  r->epoch_tsc = ~uint64_t{0};
  for (uint32_t& b : r->base) b = kNoBase;
  SetHotSlot(r, format::kBaseSlots);
  r->victim = 0;
  r->abi = kRingAbi;
  r->clock_mask = 0;
  r->last_tsc = 0;
  r->on_cpu = &kAlwaysOnCpu;
  r->mask = capacity - 1;
  r->slots = reinterpret_cast<uint64_t*>(static_cast<char*>(mem) + header);
  r->capacity = capacity;
  r->map_bytes = bytes;
  return r;
}

bool Register(Runtime& rt, Ring* r) {
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* expected = nullptr;
    if (rt.registry[i].load(std::memory_order_relaxed) == nullptr &&
        rt.registry[i].compare_exchange_strong(expected, r, std::memory_order_release)) {
      return true;
    }
  }
  return false;
}

void NoteTracedForRecord();

// Sets up the calling thread. lb_tls_ring is nullptr throughout, so trace
// points reached from here (an instrumented malloc, say) record nothing.
Ring* ThreadInit() {
  lb_tls_ring = nullptr;
  if (g_foreign_abi.load(std::memory_order_relaxed) != 0) {
    tls_status = kStatusForeignAbi;
    return nullptr;
  }
  if (!EnsureInitialised()) return nullptr;
  Runtime& rt = R();
  if (!rt.config.enabled && !tls_enabled_by_api) {
    tls_status = kStatusDisabled;
    return nullptr;
  }
  char name[sizeof(Ring::given_name)] = {};
  // Renamed by another thread before its first trace point.
  TakeQueuedName(static_cast<uint32_t>(syscall(SYS_gettid)), tls_given_name, sizeof tls_given_name);
  if (tls_given_name[0] != '\0') {
    memcpy(name, tls_given_name, sizeof name);
  } else {
    prctl(PR_GET_NAME, name, 0, 0, 0);
  }
  if (!NameSelected(rt.config, name)) {
    rt.stats.untraced_pattern.fetch_add(1, std::memory_order_relaxed);
    tls_status = kStatusNotSelected;
    return nullptr;
  }
  Ring* r = AllocateRing(rt);
  if (r != nullptr) {  // everything a dumper reads is set before Register publishes the ring
    r->tid = static_cast<uint32_t>(syscall(SYS_gettid));
    memcpy(r->given_name, tls_given_name, sizeof r->given_name);
    r->start_cpu_ns = ClockNs(CLOCK_THREAD_CPUTIME_ID);
    r->start_tsc = __rdtsc();
    if (rt.config.clock_group > 1) StartFastClock(r, rt.config.clock_group);
    r->state.store(kRingLive, std::memory_order_relaxed);
    StartThreadSampling(r);  // before Register publishes r->samples
  }
  if (r != nullptr && !Register(rt, r)) {
    StopThreadSampling(r);
    FreeRing(r);
    r = nullptr;
  }
  if (r == nullptr) {
    rt.stats.untraced_memory.fetch_add(1, std::memory_order_relaxed);
    tls_status = kStatusNoMemory;
    WakeControlThread();  // retention may free room for the next thread
    SayOnce("ring memory cap reached (LOOKBACK_MAX_MEMORY / LOOKBACK_MAX_THREADS): further threads are not traced");
    return nullptr;
  }
  pthread_setspecific(g_exit_key, r);
  if (rt.config.crash) InstallAltStack();
  rt.any_traced.store(true, std::memory_order_relaxed);
  tls_status = kStatusTracing;
  tls_own_ring = r;
  NoteTracedForRecord();
  EnsureControlThread();
  lb_tls_ring = r;
  return r;
}

void OnThreadExit(void* arg) {
  Ring* r = static_cast<Ring*>(arg);
  lb_tls_ring = nullptr;
  tls_status = kStatusExited;
  tls_own_ring = nullptr;
  if (r == nullptr) return;
  RemoveAltStack();
  StopThreadSampling(r);
  if (r->given_name[0] != '\0') {
    memcpy(r->exit_name, r->given_name, sizeof r->exit_name - 1);  // RingName prefers given_name anyway
  } else {
    prctl(PR_GET_NAME, r->exit_name, 0, 0, 0);
  }
  r->exit_order = R().exit_counter.fetch_add(1, std::memory_order_relaxed) + 1;
  r->exit_tsc.store(__rdtsc(), std::memory_order_relaxed);
  r->state.store(kRingExited, std::memory_order_release);
  WakeControlThread();
}

void AtForkChild() {
  // Only the forking thread exists now. Every ring (ours included) is a
  // private copy of the parent's: drop them all; this thread starts afresh.
  Runtime& rt = R();
  new (g_mutex_storage) std::mutex;
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].exchange(nullptr, std::memory_order_relaxed);
    if (r != nullptr) FreeRing(r);  // also closes the parent's perf events and /proc files inherited here
  }
  rt.reserved_bytes.store(0, std::memory_order_relaxed);
  SamplingAfterForkChild();
  rt.exit_counter.store(0, std::memory_order_relaxed);
  rt.any_traced.store(false, std::memory_order_relaxed);
  rt.dump_seq.store(0, std::memory_order_relaxed);
  rt.pid = static_cast<uint32_t>(getpid());
  rt.start_clock = ReadClockPair();
  const bool was_tracing = tls_status == kStatusTracing || tls_own_ring != nullptr;
  tls_own_ring = nullptr;
  if (was_tracing || tls_status == kStatusNew) {
    tls_status = kStatusNew;
    lb_tls_ring = &lb_sentinel_ring;
  }
  ForgetDumpMemoryAfterFork();
  ResetControlAfterFork();
  ResetPolicyAfterFork();
}

// Writes a dump on the calling thread, which records nothing meanwhile (its
// own allocations must not land in its ring while it is being copied).
DumpOutcome DumpOnThisThread(const Trigger& trigger) {
  Ring* saved = lb_tls_ring;
  lb_tls_ring = nullptr;
  tls_paused_ring = saved;
  tls_paused_tsc = __rdtsc();
  DumpOutcome out = WriteDump(trigger);
  tls_paused_ring = nullptr;
  lb_tls_ring = saved;
  return out;
}

// The process is about to end (exit) or lose its rings (exec).
void DumpAtProcessEnd(const char* reason) {
  if (g_init_state.load(std::memory_order_acquire) != 2) return;
  // A vfork() (or clone(CLONE_VM)) child shares our memory until it execs or
  // exits: a dump from it would be the parent's rings under the child's pid,
  // written while the parent's other threads keep recording.
  if (InSharedMemoryChild()) return;
  // Dumps asked for and not yet written (lb_dump, a detector, a post-trigger
  // delay still running): the control thread will not get to them once the
  // process is gone, so they are written now, on this thread. A program that
  // calls lb_dump() and returns from main gets its dump.
  for (const Trigger& t : TakeAllPendingDumps()) DumpOnThisThread(t);
  Runtime& rt = R();
  if (rt.config.dump_at_exit && rt.any_traced.load(std::memory_order_relaxed)) {
    SampleThisThreadNow();
    DumpOnThisThread(EndTrigger(reason));
  }
}

// One line "KIND PID EXE" in record's events file (NoteAtExit says which).
void NoteForRecord(const char* events, const char* kind) {
  char exe[4096] = "?";
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 1] = '\0';
  const int fd = open(events, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  char text[4200];
  const int len = snprintf(text, sizeof text, "%s %d %s\n", kind, static_cast<int>(getpid()), exe);
  if (len > 0 && write(fd, text, std::min<size_t>(static_cast<size_t>(len), sizeof text - 1)) < 0) {
    // nothing to do: record then only misses the explanation
  }
  close(fd);
}

// The first traced thread of this process image (and of each forked child):
// record then knows that a process without a dump was traced, and blames what
// ended it rather than the compiler flags.
void NoteTracedForRecord() {
  static std::atomic<int> noted_pid{0};
  const int pid = static_cast<int>(getpid());
  if (noted_pid.exchange(pid, std::memory_order_relaxed) == pid || InSharedMemoryChild()) return;
  const char* events = getenv("LOOKBACK_RECORD_EVENTS");
  if (events != nullptr && events[0] != '\0') NoteForRecord(events, "traced");
}

// Under `lookback record` (LOOKBACK_RECORD_EVENTS names a file it reads when
// the command has ended), a JVM says at exit what record cannot see for
// itself, so that it can tell the user which JVM went untraced and why,
// instead of blaming the compiler flags or a crash:
//   jvm-untraced  it ran without lookback's agent;
//   jvm-empty     it had the agent but no thread ever recorded a call (a
//                 --jvm-include that matches nothing, --threads that selects
//                 no thread), so it writes no exit dump;
//   unselected    any process, instrumented (its threads reached the
//                 runtime) but none selected by --threads: no exit dump, and
//                 the compiler flags are not to blame;
//   traced        (NoteTracedForRecord, at its first traced thread) any
//                 process: a missing dump is not the compiler flags' fault.
// A JVM is a process that mapped libjvm.so; the agent is liblookback-jvm.so.
void NoteAtExit() {
  const char* events = getenv("LOOKBACK_RECORD_EVENTS");
  if (events == nullptr || events[0] == '\0' || InSharedMemoryChild()) return;
  bool jvm = false, agent = false;
  if (FILE* maps = fopen("/proc/self/maps", "re")) {
    char line[4096];
    while (fgets(line, sizeof line, maps) != nullptr) {
      jvm = jvm || strstr(line, "/libjvm.so") != nullptr;
      agent = agent || strstr(line, "/liblookback-jvm.so") != nullptr;
    }
    fclose(maps);
  }
  const bool nothing_recorded = g_init_state.load(std::memory_order_acquire) == 2 && R().config.dump_at_exit &&
                                !R().any_traced.load(std::memory_order_relaxed);
  const char* kind = nullptr;
  if (jvm && !agent) {
    kind = "jvm-untraced";
  } else if (nothing_recorded && R().stats.untraced_pattern.load(std::memory_order_relaxed) > 0) {
    kind = "unselected";
  } else if (jvm && nothing_recorded) {
    kind = "jvm-empty";
  }
  if (kind != nullptr) NoteForRecord(events, kind);
}

void AtExit() {
  NoteAtExit();
  DumpAtProcessEnd("exit");
}

void Initialise() {
  Runtime* rt = new (g_runtime_storage) Runtime;
  new (g_mutex_storage) std::mutex;
  std::vector<ConfigProblem> problems;
  rt->config = ParseConfig(GetEnv, &problems);
  for (const auto& p : problems) Say(p.message);
  if (rt->config.dir[0] != '/') {  // the program may chdir before it dumps
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) rt->config.dir = std::string(cwd) + "/" + rt->config.dir;
  }
  rt->pid = static_cast<uint32_t>(getpid());
  rt->start_clock = ReadClockPair();
  // The process's name: its first thread's (/proc/self is the thread group),
  // not the loading thread's, which is another one when lookback is loaded
  // into a running process (a JVM's "Attach Listener").
  char comm[17] = {};
  if (FILE* f = fopen("/proc/self/comm", "re")) {
    if (fgets(comm, sizeof comm, f) == nullptr) comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
  }
  if (comm[0] == '\0') prctl(PR_GET_NAME, comm, 0, 0, 0);
  rt->process_name = comm[0] ? comm : "process";
  if (rt->config.host.empty()) {  // read once: a dump must not make system calls it can avoid
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) rt->config.host = host;
  }
  rt->registry_size = rt->config.max_threads;
  void* reg = mmap(nullptr, sizeof(std::atomic<Ring*>) * rt->registry_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reg == MAP_FAILED) {
    rt->registry_size = 0;
  } else {
    rt->registry = static_cast<std::atomic<Ring*>*>(reg);  // zero pages == nullptr atomics
  }
  pthread_key_create(&g_exit_key, OnThreadExit);
  pthread_atfork(nullptr, nullptr, AtForkChild);
  atexit(AtExit);
  InstallDumpSignal();
  if (rt->config.crash) InstallCrashHandlers(rt->config.attached);
  InitSampling();
  RefreshExcludes();  // before this thread's first record: excluded calls are never recorded
}

}  // namespace

uint64_t PausedAt(const Ring* r) { return r != nullptr && r == tls_paused_ring ? tls_paused_tsc : 0; }

Runtime& R() { return *std::launder(reinterpret_cast<Runtime*>(g_runtime_storage)); }
std::mutex& ControlMutex() { return *std::launder(reinterpret_cast<std::mutex*>(g_mutex_storage)); }

bool EnsureInitialised() {
  int s = g_init_state.load(std::memory_order_acquire);
  if (s == 2) return true;
  if (s == 0 && g_init_state.compare_exchange_strong(s, 1, std::memory_order_acq_rel)) {
    const int saved_errno = errno;
    Initialise();
    errno = saved_errno;
    g_init_state.store(2, std::memory_order_release);
    return true;
  }
  // Another thread is initialising; this trace point is simply not recorded.
  return g_init_state.load(std::memory_order_acquire) == 2;
}

bool InSharedMemoryChild() {
  // getpid() as a system call: glibc may cache the pid, and a vfork child
  // runs no atfork handler that would tell us.
  return static_cast<uint32_t>(syscall(SYS_getpid)) != R().pid;
}

void FreeRing(Ring* r) {
  FreeSampleBuffer(r);
  R().reserved_bytes.fetch_sub(r->map_bytes, std::memory_order_relaxed);
  munmap(r, r->map_bytes);
}

void ReclaimExitedRings() {
  Runtime& rt = R();
  std::vector<std::pair<uint64_t, uint32_t>> exited;  // (exit order, registry index)
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r != nullptr && r->state.load(std::memory_order_acquire) == kRingExited) exited.emplace_back(r->exit_order, i);
  }
  if (exited.size() <= rt.config.keep_exited) return;
  std::sort(exited.begin(), exited.end());
  const size_t drop = exited.size() - rt.config.keep_exited;
  for (size_t k = 0; k < drop; ++k) {
    Ring* r = rt.registry[exited[k].second].exchange(nullptr, std::memory_order_acq_rel);
    if (r != nullptr) {
      FreeRing(r);
      rt.stats.reclaimed.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void Say(const std::string& line) {
  if (g_init_state.load(std::memory_order_acquire) == 2 && R().config.quiet) return;
  std::string s = "lookback: " + line + "\n";
  const int saved = errno;
  ssize_t ignored = write(2, s.data(), s.size());
  (void)ignored;
  errno = saved;
}

void ForeignAbi(uint32_t abi) {
  if (g_foreign_abi.load(std::memory_order_relaxed) != 0) return;  // said already
  if (g_foreign_abi.exchange(abi, std::memory_order_relaxed) == 0) {
    Say("this program's inlined trace points were built for lookback ring ABI " + std::to_string(abi) +
        ", this runtime has ABI " + std::to_string(kRingAbi) +
        ": tracing is off for the whole process (rebuild it with this lookback's pass plugin)");
  }
}

void SayOnce(const std::string& line) {
  static std::mutex m;
  static std::vector<std::string>* seen = new std::vector<std::string>;
  std::lock_guard<std::mutex> lock(m);
  if (std::find(seen->begin(), seen->end(), line) != seen->end()) return;
  seen->push_back(line);
  Say(line);
}

void ResumeTracing() {
  Ring* r = tls_own_ring;
  if (r == nullptr) {  // never had a ring: set up on the next trace point
    tls_status = kStatusNew;
    lb_tls_ring = &lb_sentinel_ring;
    return;
  }
  // Tell decoders that calls before the gap do not pair with calls after it.
  uint64_t pos = LoadRelaxed(&r->pos);
  std::atomic_thread_fence(std::memory_order_release);
  __atomic_store_n(&r->slots[pos++ & r->mask], format::MakeControl(format::ControlKind::kResume, 0), __ATOMIC_RELAXED);
  // Keep the periodic sync reachable; a fast-clock ring also takes a reading
  // at once (its last one is from before the gap).
  if (pos >= r->next_sync || r->fast_mask != 0) r->next_sync = pos;
  ForceSlowPath(r);
  __atomic_store_n(&r->pos, pos, __ATOMIC_RELEASE);
  tls_status = kStatusTracing;
  lb_tls_ring = r;
}

namespace {
std::mutex g_names_mutex;
std::vector<std::pair<uint64_t, std::string>>* g_names = nullptr;  // never freed: used at exit
}  // namespace

std::mutex g_notes_mutex;
std::vector<std::pair<std::string, std::string>>* g_notes = nullptr;  // never freed: used at exit

std::vector<std::pair<std::string, std::string>> Notes() {
  std::lock_guard<std::mutex> lock(g_notes_mutex);
  return g_notes ? *g_notes : std::vector<std::pair<std::string, std::string>>{};
}

size_t KeyNameCount() {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  return g_names ? g_names->size() : 0;
}

std::vector<std::pair<uint64_t, std::string>> KeyNames() {
  std::lock_guard<std::mutex> lock(g_names_mutex);
  return g_names ? *g_names : std::vector<std::pair<uint64_t, std::string>>{};
}

void NoteNonLocalExit() {
  Ring* r = lb_tls_ring;
  if (r == nullptr || IsSentinel(r)) return;
  tls_unwind_pending = true;
  r->next_sync = LoadRelaxed(&r->pos);  // the next trace point takes the slow path
  ForceSlowPath(r);
}

void ReselectByName(const char* name) {
  if (g_init_state.load(std::memory_order_acquire) != 2) return;
  const Config& c = R().config;
  if (c.thread_patterns.empty()) return;
  const bool selected = NameSelected(c, name);
  if (selected && tls_status == kStatusNotSelected) {
    ResumeTracing();
  } else if (!selected && tls_status == kStatusTracing) {
    tls_status = kStatusNotSelected;
    if (lb_tls_ring != nullptr && !IsSentinel(lb_tls_ring)) ForceSlowPath(lb_tls_ring);  // see lb_thread_fast_ring
    lb_tls_ring = nullptr;
  }
}

void WriteGivenName(Ring* r, const char* name) {
  // A seqlock whose writers exclude each other: the owner renaming itself and
  // another thread renaming it (lb_thread_set_name_of) may write at once.
  uint32_t gen = r->given_name_gen.load(std::memory_order_relaxed);
  for (;;) {
    if ((gen & 1) == 0 &&
        r->given_name_gen.compare_exchange_weak(gen, gen + 1, std::memory_order_acquire, std::memory_order_relaxed)) {
      break;
    }
    gen = r->given_name_gen.load(std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  const size_t n = strnlen(name, sizeof r->given_name - 1);
  for (size_t i = 0; i < sizeof r->given_name; ++i) {
    __atomic_store_n(&r->given_name[i], i < n ? name[i] : '\0', __ATOMIC_RELAXED);
  }
  r->given_name_gen.store(gen + 2, std::memory_order_release);
}

namespace {
// Names given to other threads (lb_thread_set_name_of) that could not be
// applied at once: the thread has no ring yet (ThreadInit takes its name from
// here) or the control thread held the rings' mutex. Small and bounded; the
// oldest entry gives way.
struct QueuedName {
  uint32_t tid = 0;
  char name[sizeof(Ring::given_name)] = {};
};
std::mutex g_queued_names_mutex;
QueuedName g_queued_names[32];
uint32_t g_queued_next = 0;
std::atomic<uint32_t> g_queued_count{0};  // entries with tid != 0
}  // namespace

void QueueNameFor(uint32_t tid, const char* name) {
  std::lock_guard<std::mutex> lock(g_queued_names_mutex);
  QueuedName* slot = nullptr;
  for (QueuedName& q : g_queued_names) {
    if (q.tid == tid) slot = &q;
  }
  if (slot == nullptr) {
    slot = &g_queued_names[g_queued_next++ % (sizeof g_queued_names / sizeof g_queued_names[0])];
    if (slot->tid == 0) g_queued_count.fetch_add(1, std::memory_order_relaxed);
  }
  slot->tid = tid;
  const size_t n = strnlen(name, sizeof slot->name - 1);
  memcpy(slot->name, name, n);
  slot->name[n] = '\0';
}

bool TakeQueuedName(uint32_t tid, char* out, size_t out_size) {
  if (g_queued_count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(g_queued_names_mutex);
  for (QueuedName& q : g_queued_names) {
    if (q.tid != tid) continue;
    snprintf(out, out_size, "%s", q.name);
    q.tid = 0;
    g_queued_count.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void ApplyQueuedNames() {
  if (g_queued_count.load(std::memory_order_relaxed) == 0) return;
  Runtime& rt = R();
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
    char name[sizeof(Ring::given_name)];
    if (TakeQueuedName(r->tid, name, sizeof name)) WriteGivenName(r, name);
  }
}

std::string RingName(const Ring& r) {
  // A name given with lb_thread_set_name (at set-up, or since: the owner may
  // be renaming, so copy, check the generation did not move, retry a few
  // times), else the kernel's.
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint32_t gen = r.given_name_gen.load(std::memory_order_acquire);
    if (gen & 1) continue;
    char copy[sizeof r.given_name];
    for (size_t i = 0; i < sizeof copy; ++i) copy[i] = __atomic_load_n(&r.given_name[i], __ATOMIC_RELAXED);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (r.given_name_gen.load(std::memory_order_relaxed) != gen) continue;
    if (copy[0] != '\0') return std::string(copy, strnlen(copy, sizeof copy));
    break;
  }
  if (r.state.load(std::memory_order_acquire) == kRingExited) return std::string(r.exit_name, strnlen(r.exit_name, sizeof r.exit_name));
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%u/comm", r.tid);
  std::string s;
  if (FILE* f = fopen(path, "re")) {
    char buf[32] = {};
    s.assign(buf, fread(buf, 1, sizeof buf - 1, f));
    fclose(f);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

void MarkControlThread() {
  lb_tls_ring = nullptr;
  tls_status = kStatusControl;
}


// A shed function's trace points in code built with the clang pass, as
// inline_hooks.cc's guarded check shape has them once inlined: the guard's
// load and test at entry, the kept bit's test at the exit; and the same
// function without them. MeasureTracePoint times one against the other.
namespace {
__attribute__((noinline, no_instrument_function)) uint64_t PassShedCall(const uint8_t* guard, uint64_t x) {
  bool recorded = __atomic_load_n(guard, __ATOMIC_RELAXED) == 0;
  if (__builtin_expect(recorded, 1)) {
    Ring* r = lb_tls_ring;
    if (__builtin_expect(r != nullptr, 0)) x += __atomic_load_n(&r->pos, __ATOMIC_RELAXED);
  }
  x = x * 3 + 1;
  __asm__ volatile("" : "+r"(recorded));
  if (__builtin_expect(recorded, 1)) {
    Ring* r = lb_tls_ring;
    if (__builtin_expect(r != nullptr, 0)) x += __atomic_load_n(&r->pos, __ATOMIC_RELAXED);
  }
  return x;
}

__attribute__((noinline, no_instrument_function)) uint64_t PlainCall(const uint8_t*, uint64_t x) {
  __asm__ volatile("");
  return x * 3 + 1;
}
}  // namespace

// Times the trace point a front-end runs, into a scratch ring set up like a
// traced thread's (same clock mode, not registered, never dumped) that this
// thread's thread-local points to meanwhile: the control thread, never
// traced otherwise. Pairs of entry and exit of one function, best of a few
// rounds (the machine is shared: the least disturbed round is the cost).
// A filtered call is timed with the key in the filter table; a shed
// function's trace points in pass-built code as the difference their guard
// path makes to a call.
TracePointCost MeasureTracePoint(bool managed) {
  constexpr uint64_t kCapacity = 1u << 14, kHeader = 4096, kPairs = 4096;
  const uint64_t bytes = kHeader + kCapacity * 8;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return {};
  Ring* r = SetUpRing(mem, kHeader, kCapacity, bytes);
  if (R().config.clock_group > 1) StartFastClock(r, R().config.clock_group);
  // Through volatile pointers: the compiler must call what a program calls.
  void (*volatile hook_enter)(void*, void*) = __cyg_profile_func_enter;
  void (*volatile hook_exit)(void*, void*) = __cyg_profile_func_exit;
  void (*volatile api_enter)(uint64_t) = lb_enter;
  void (*volatile api_exit)(uint64_t) = lb_exit;
  void* fn = reinterpret_cast<void*>(&MeasureTracePoint);
  // Keys no program traces: this function is never instrumented, and method ids are counted up from 1.
  const uint64_t key = managed ? format::kKeyMethodTag | 0xffffffffu : reinterpret_cast<uint64_t>(fn);
  auto pairs_ns = [&] {
    uint64_t best = ~uint64_t{0};
    for (int round = 0; round < 7; ++round) {
      const uint64_t t0 = ClockNs(CLOCK_MONOTONIC);
      for (uint64_t i = 0; i < kPairs; ++i) {
        if (managed) {
          api_enter(key);
          api_exit(key);
        } else {
          hook_enter(fn, nullptr);
          hook_exit(fn, nullptr);
        }
      }
      best = std::min(best, ClockNs(CLOCK_MONOTONIC) - t0);
    }
    return static_cast<double>(best) / (2 * kPairs);
  };
  Ring* saved = lb_tls_ring;
  lb_tls_ring = r;
  TracePointCost cost;
  cost.recorded_ns = pairs_ns();
  // A filtered call: the same hooks, with this key in the table.
  SetCalibrationKey(key);
  cost.filtered_ns = pairs_ns();
  SetCalibrationKey(0);
  // A shed function's call in pass-built code, over the same call without
  // trace points: independent calls (what the difference shows in a chain of
  // dependent ones is nothing), interleaved rounds, best of each. Within
  // the noise of a shared machine it may come out at nothing, then 0.
  {
    static uint8_t guard = 1;
    uint64_t (*volatile shed_call)(const uint8_t*, uint64_t) = PassShedCall;
    uint64_t (*volatile plain_call)(const uint8_t*, uint64_t) = PlainCall;
    constexpr uint64_t kCalls = 1u << 15;
    uint64_t best_shed = ~uint64_t{0}, best_plain = ~uint64_t{0}, sink = 0;
    for (int round = 0; round < 9; ++round) {
      for (int which = 0; which < 2; ++which) {
        uint64_t (*call)(const uint8_t*, uint64_t) = which == 0 ? shed_call : plain_call;
        const uint64_t t0 = ClockNs(CLOCK_MONOTONIC);
        for (uint64_t i = 0; i < kCalls; ++i) sink += call(&guard, i);
        const uint64_t t = ClockNs(CLOCK_MONOTONIC) - t0;
        uint64_t& best = which == 0 ? best_shed : best_plain;
        best = std::min(best, t);
      }
    }
    __asm__ volatile("" : : "r"(sink));
    cost.pass_shed_ns =
        best_shed > best_plain ? static_cast<double>(best_shed - best_plain) / (2 * kCalls) : 0.0;
  }
  lb_tls_ring = saved;
  munmap(mem, bytes);
  return cost;
}

}  // namespace lookback::rt

using namespace lookback;
using namespace lookback::rt;

extern "C" {

}  // extern "C"

namespace {

// lb_ring_slow's parts, in the order it runs them. Nothing here may trace
// (see lb_ring_slow); all run on the owner thread with its thread-local off.

// The caller's ring, or nullptr: a sentinel means this thread has no ring yet
// (made now, or refused), or that the caller's thread-local is not ours.
__attribute__((no_instrument_function, always_inline)) inline Ring* ResolveRing(Ring* r) {
  if (!IsSentinel(r)) return r;
  if (r != lb_tls_ring) {
    // The caller read a thread-local that is not ours: a program built with
    // the clang pass whose lb_tls_ring is not exported, so the preloaded
    // runtime could not bind to it. Record correctly, but every trace point
    // comes through here.
    static bool said = false;  // __atomic, not std::atomic: see exclude.h
    if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED)) {
      SayOnce("this program's inlined trace points cannot see lookback's thread state, so every trace point "
              "takes the slow path; link it with -Wl,--export-dynamic-symbol='lb_tls_ring*' (docs/pass.md)");
    }
    r = lb_tls_ring;
  }
  if (IsSentinel(r)) r = ThreadInit();
  return r;
}

// Fast clock: a thread that left the CPU since its last reading says for
// how long (OFFCPU), measured from when on_cpu was armed: all of that time
// came after every record since the last reading, so the decoder can bound
// them tightly (FORMAT.md, "Fast clock"). The reading is retaken after
// arming so the clocks and the TSC are read together (*tsc moves). Returns
// whether to write an OFFCPU record of *off_cpu_ns.
__attribute__((no_instrument_function, always_inline)) inline bool MeasureOffCpu(Ring* r, uint64_t* tsc,
                                                                                 uint64_t* off_cpu_ns) {
  if (r->clock_mask == 0 || *r->on_cpu != 0) return false;
  const uint64_t mono0 = r->armed_mono_ns, cpu0 = r->armed_cpu_ns;
  ArmOnCpu(r->on_cpu);
  *tsc = __rdtsc();
  const uint64_t mono = ClockNs(CLOCK_MONOTONIC);
  const uint64_t tsc_after = __rdtsc();
  const uint64_t cpu = ClockNs(CLOCK_THREAD_CPUTIME_ID);
  r->armed_mono_ns = mono;
  r->armed_cpu_ns = cpu;
  // Never armed with the clocks noted, or descheduled between the TSC and
  // the monotonic reading (the time measured would include time after this
  // record): claim nothing.
  if (mono0 == 0 || tsc_after - *tsc >= kOffCpuReadWindowTicks || mono <= mono0 || cpu < cpu0) return false;
  const uint64_t wall = mono - mono0, on = cpu - cpu0;
  if (wall <= on + kOffCpuSlackNs) return false;
  *off_cpu_ns = wall - on - kOffCpuSlackNs;
  return true;
}

// The announcements this record needs before it, written at *pos: the
// epoch when it changed (or at a sync), the base slot of `base` when no slot
// holds it (round robin), and at a sync every base slot in use again.
// Returns the slot that holds `base`.
__attribute__((no_instrument_function, always_inline)) inline unsigned Announce(Ring* r, uint64_t* pos, uint64_t tsc,
                                                                               uint32_t base, bool sync) {
  auto put = [&](uint64_t rec) { __atomic_store_n(&r->slots[(*pos)++ & r->mask], rec, __ATOMIC_RELAXED); };
  const uint64_t epoch = tsc >> format::kTscLowBits;
  const bool none = r->epoch_tsc == ~uint64_t{0};
  const uint64_t announced = r->epoch_tsc >> format::kTscLowBits;
  if (sync || none || epoch != announced) {
    // Epochs since the previous announcement; a TSC that stepped back
    // (migration between unsynchronised cores) saturates: "unknown".
    const uint64_t delta = none ? 0 : (epoch >= announced ? epoch - announced : format::kEpochDeltaMax);
    put(format::MakeEpoch(epoch, delta));
    r->epoch_tsc = epoch << format::kTscLowBits;
  }
  unsigned slot = format::kBaseSlots;
  unsigned in_use = 0;
  for (unsigned i = 0; i < format::kBaseSlots; ++i) {
    if (r->base[i] == base) slot = i;
    if (r->base[i] != kNoBase) in_use |= 1u << i;
  }
  if (slot == format::kBaseSlots) {
    // A new base replaces the slots round robin: up to four regions in turn
    // cost nothing; a fifth evicts the oldest.
    slot = r->victim++ % format::kBaseSlots;
    const uint32_t previous = r->base[slot];
    in_use |= 1u << slot;
    put(format::MakeFnBase(slot, base, previous, previous != kNoBase, in_use));
    r->base[slot] = base;
  }
  if (sync) {
    for (unsigned i = 0; i < format::kBaseSlots; ++i) {
      if (r->base[i] != kNoBase) put(format::MakeFnBase(i, r->base[i], r->base[i], true, in_use));
    }
  }
  return slot;
}

// The hot slot (Ring::hot_base) after the event at pos - 1, which used
// `slot`. At a sync (every few thousand records), the slot most of the latest
// events used: a thread that moved to another region gets its hot slot
// there. Between syncs the hot slot stays, unless a new base replaced it or
// there is none: then this event's slot takes it.
__attribute__((no_instrument_function, always_inline)) inline void ChooseHotSlot(Ring* r, uint64_t pos, unsigned slot,
                                                                                bool sync) {
  const unsigned hot = r->hot_tag[0] != 0 ? format::EventSlot(r->hot_tag[0]) : format::kBaseSlots;
  // Still its slot's base (a new base may have replaced it).
  const bool valid = hot < format::kBaseSlots && uint64_t{r->base[hot]} << 32 == r->hot_base;
  if (sync) {
    constexpr uint64_t kSample = 32;
    unsigned count[format::kBaseSlots] = {};
    const uint64_t n = std::min({kSample, pos, r->capacity});
    for (uint64_t i = pos - n; i < pos; ++i) {
      const uint64_t rec = __atomic_load_n(&r->slots[i & r->mask], __ATOMIC_RELAXED);
      if (format::IsEvent(rec)) ++count[format::EventSlot(rec)];
    }
    for (unsigned i = 0; i < format::kBaseSlots; ++i) {
      if (count[i] > count[slot] && r->base[i] != kNoBase) slot = i;
    }
  } else if (valid) {
    return;
  }
  SetHotSlot(r, slot);
}

// After the record at pos - 1: when the exact path must next come here (the
// sync schedule), and a fast ring's density.
__attribute__((no_instrument_function, always_inline)) inline void Reschedule(Ring* r, uint64_t pos, uint64_t tsc,
                                                                             uint32_t since_reading, bool sync) {
  if (sync) r->sync_at = pos + format::SyncInterval(r->capacity);
  r->next_sync = r->sync_at;
  if (r->fast_mask != 0) {
    AdaptClock(r, pos, tsc, since_reading);
    // Dense: only readings look for a sync, so it must fall on a reading
    // position (the sync then comes at most a group late); next_sync 0 sends
    // every record off the exact path (hot_path.h, RecordNow).
    if (r->clock_mask != 0) {
      r->dense_sync = (r->next_sync + r->clock_mask) & ~uint64_t{r->clock_mask};
      // The untimed path's lap (Ring::lap): valid up to the next lap's first
      // position, where a reading brings the ring back here.
      const uint64_t lap_start = pos & ~r->mask;
      r->dense_sync = std::min(r->dense_sync, lap_start + r->capacity);
      r->lap = reinterpret_cast<uintptr_t>(r->slots) - 8 * lap_start;
      r->next_sync = 0;
    }
  }
}

}  // namespace

extern "C" {

void lb_ring_slow(uint64_t key, uint64_t call_site, uint64_t tsc, Ring* r, bool exit) {
  const int saved_errno = errno;
  r = ResolveRing(r);
  if (r == nullptr) {
    errno = saved_errno;
    return;
  }
  if (key >= format::kKeyLimit) {
    R().stats.invalid_keys.fetch_add(1, std::memory_order_relaxed);
    errno = saved_errno;
    return;
  }
  // Nothing this path calls may trace into the ring it is writing: a program
  // may define (instrumented) a function called from here, such as
  // clock_gettime, or the copy of a header template (std::min) a Debug runtime
  // binds to. Its trace points would write at the position this publication
  // is about to fill, or take a later timestamp before this record's. Those
  // calls are lookback's, not the program's: with the thread-local off they
  // record nothing. (ThreadInit keeps it off the same way.)
  lb_tls_ring = nullptr;
  if (tsc == kReadTscInSlowPath) tsc = __rdtsc();
  uint64_t off_cpu_ns = 0;
  const bool off_cpu = MeasureOffCpu(r, &tsc, &off_cpu_ns);
  const uint32_t since_reading = static_cast<uint32_t>(tsc) - r->last_tsc;  // before last_tsc moves
  uint64_t pos = LoadRelaxed(&r->pos);
  // A sync re-announces the epoch and every base slot in use, so that any
  // window holding one decodes (FORMAT.md, "The bound"). It is due when the
  // schedule says so, or when this publication would step over it.
  const bool sync = pos + kMaxSlotsPerPublish >= r->sync_at;
  std::atomic_thread_fence(std::memory_order_release);
  const unsigned slot = Announce(r, &pos, tsc, static_cast<uint32_t>(key >> 32), sync);
  auto put = [&](uint64_t rec) { __atomic_store_n(&r->slots[pos++ & r->mask], rec, __ATOMIC_RELAXED); };
  if (tls_unwind_pending) {
    // An exit repairs itself (it names its function); an entry says where it was called from.
    if (!exit && call_site != 0) put(format::MakeControl(format::ControlKind::kUnwindTo, call_site));
    tls_unwind_pending = false;
  }
  if (off_cpu) put(format::MakeOffCpu(off_cpu_ns));
  r->last_tsc = static_cast<uint32_t>(tsc);
  put(format::MakeEvent(exit, slot, tsc, key));
  ChooseHotSlot(r, pos, slot, sync);
  Reschedule(r, pos, tsc, since_reading, sync);
  __atomic_store_n(&r->pos, pos, __ATOMIC_RELEASE);
  lb_tls_ring = r;
  errno = saved_errno;
}

// The entry for code built outside the runtime (the clang pass's stub): it
// checks that the caller reads Ring as this runtime lays it out before a ring
// is handed out. The foreign code cannot see our rings anyway (its
// thread-local has another symbol, ring_abi.h); on a mismatch no thread of the
// process gets a ring from then on, so a dump is never a trace with the
// foreign code's frames silently missing.
int lb_pass_record_slow(uint32_t abi, Ring* r, bool exit, uint64_t key, uint64_t tsc, uint64_t call_site) {
  if (__builtin_expect(abi != kRingAbi, 0)) {
    ForeignAbi(abi);
    return 0;
  }
  lb_ring_slow(key, call_site, tsc, r, exit);
  return 1;
}

// What programs built by a pass older than ring ABI 2 called (they pass no ABI,
// and read the version-1 layout): never give them a ring.
//
// They define their own `lb_tls_ring`, which this runtime no longer binds to;
// when the program exports it, dlsym gives this thread's instance and we set
// it to nullptr so that its trace points stop calling here.
__attribute__((visibility("default"), cold, noinline, no_instrument_function)) void lb_record_slow(
    Ring*, bool, uint64_t, uint64_t, uint64_t) {
  const int saved_errno = errno;
  ForeignAbi(1);
  static bool unexported = false;  // __atomic, not std::atomic: see exclude.h
  if (!__atomic_load_n(&unexported, __ATOMIC_RELAXED)) {
    if (void* legacy = dlsym(RTLD_DEFAULT, "lb_tls_ring")) {
      *static_cast<Ring**>(legacy) = nullptr;
    } else {
      __atomic_store_n(&unexported, true, __ATOMIC_RELAXED);
    }
  }
  errno = saved_errno;
}

// The hot path takes only keys below 2^56 (hot_path.h, SlotsHolding); a
// caller's own key is checked here, where it comes in.
__attribute__((no_instrument_function)) static void RecordCheckedKey(bool exit, uint64_t key) {
  if (__builtin_expect(key >= format::kKeyLimit, 0)) {
    if (lb_tls_ring != nullptr) R().stats.invalid_keys.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Ring* r = lb_tls_ring;
  if (__builtin_expect(r == nullptr, 0)) return;
  // Excluded and shed functions (exclude.h): a managed runtime's methods are
  // shed here, where its probes come in.
  const uint64_t* filtered = ExcludeTable();
  if (__builtin_expect(filtered != nullptr, 0) && Excluded(filtered, key)) {
    CountFiltered(r);
    return;
  }
  RecordNow(r, exit, key);
}
__attribute__((no_instrument_function)) void lb_enter(uint64_t key) { RecordCheckedKey(false, key); }
__attribute__((no_instrument_function)) void lb_exit(uint64_t key) { RecordCheckedKey(true, key); }

int lb_set_note(const char* key, const char* text) {
  if (key == nullptr || text == nullptr) return -1;
  Ring* saved = lb_tls_ring;
  lb_tls_ring = nullptr;  // what this allocates is not the program's to trace
  {
    std::lock_guard<std::mutex> lock(g_notes_mutex);
    if (g_notes == nullptr) g_notes = new std::vector<std::pair<std::string, std::string>>;
    auto it = std::find_if(g_notes->begin(), g_notes->end(), [&](const auto& n) { return n.first == key; });
    if (it != g_notes->end()) {
      it->second = text;
    } else {
      g_notes->emplace_back(key, text);
    }
  }
  lb_tls_ring = saved;
  return 0;
}

int lb_set_key_name(uint64_t key, const char* name) {
  if (name == nullptr || key >= format::kKeyLimit) return -1;
  Ring* saved = lb_tls_ring;
  lb_tls_ring = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_names_mutex);
    if (g_names == nullptr) g_names = new std::vector<std::pair<uint64_t, std::string>>;
    g_names->emplace_back(key, name);
  }
  lb_tls_ring = saved;
  return 0;
}

int lb_dump(const char* reason) {
  if (!EnsureInitialised()) return -1;
  return QueueDump(reason ? reason : "api");
}

int lb_dump_sync(const char* reason, char* path_out, size_t path_len) {
  if (!EnsureInitialised()) {
    if (path_out && path_len) snprintf(path_out, path_len, "lookback is not initialised");
    return -1;
  }
  Trigger t = ExplicitTrigger(reason ? reason : "api");
  std::string why;
  DumpOutcome out;
  if (!Admit(&t, &why)) {
    out.error = why;
  } else {
    out = DumpOnThisThread(t);
  }
  if (path_out && path_len) snprintf(path_out, path_len, "%s", out.ok ? out.path.c_str() : out.error.c_str());
  return out.ok ? 0 : -1;
}

void lb_thread_disable(void) {
  if (IsSentinel(lb_tls_ring)) {
    tls_status = kStatusDisabled;
  } else if (lb_tls_ring != nullptr) {
    tls_status = kStatusDisabled;
    ForceSlowPath(lb_tls_ring);  // a front-end writing untimed records itself looks there (lb_thread_fast_ring)
  }
  if (tls_status == kStatusDisabled) lb_tls_ring = nullptr;
}

uint32_t lb_ring_abi(void) { return kRingAbi; }

uint32_t lb_clock_group(void) { return EnsureInitialised() ? R().config.clock_group : 1; }

int lb_thread_fast_ring(void** ring) {
  Ring* r = lb_tls_ring;
  if (IsSentinel(r)) return 0;
  if (r == nullptr || r->fast_mask == 0 || ring == nullptr) return -1;
  *ring = r;
  return 1;
}

int lb_thread_ring(void** ring) {
  Ring* r = lb_tls_ring;
  if (IsSentinel(r)) return 0;
  if (r == nullptr || ring == nullptr) return -1;
  *ring = r;
  return 1;
}

const uint64_t* const* lb_filter_table(void) { return &g_exclude_table; }

void lb_thread_enable(void) {
  tls_enabled_by_api = true;
  if (tls_status == kStatusDisabled) ResumeTracing();
}

void lb_note_nonlocal_exit(void) { NoteNonLocalExit(); }

void lb_before_exec(void) { DumpAtProcessEnd("exec"); }

int lb_dump_dir(char* out, size_t len) {
  if (out == nullptr || len == 0 || !EnsureInitialised()) return -1;
  return snprintf(out, len, "%s", R().config.dir.c_str()) < static_cast<int>(len) ? 0 : -1;
}

int lb_thread_is_tracing(void) {
  Ring* r = lb_tls_ring;
  return r != nullptr && !IsSentinel(r);
}

// Threads usually name themselves after they start, so a LOOKBACK_THREADS
// pattern is checked again when a thread renames itself (a name given with
// lb_thread_set_name takes precedence over the kernel name).
__attribute__((visibility("default"))) int pthread_setname_np(pthread_t thread, const char* name) {
  using Fn = int (*)(pthread_t, const char*);
  static Fn real = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_setname_np"));
  if (real == nullptr) return ENOSYS;
  const int rc = real(thread, name);
  if (rc != 0 || !pthread_equal(thread, pthread_self()) || tls_given_name[0] != '\0') return rc;
  ReselectByName(name);
  return rc;
}

int lb_thread_set_name(const char* name) {
  if (name == nullptr) return -1;
  const size_t n = strnlen(name, sizeof tls_given_name - 1);
  memcpy(tls_given_name, name, n);
  tls_given_name[n] = '\0';
  if (Ring* r = tls_own_ring) WriteGivenName(r, tls_given_name);
  ReselectByName(tls_given_name);
  return 0;
}

int lb_thread_set_name_of(uint32_t tid, const char* name) {
  if (name == nullptr || tid == 0) return -1;
  if (tid == static_cast<uint32_t>(syscall(SYS_gettid))) return lb_thread_set_name(name);
  if (g_init_state.load(std::memory_order_acquire) != 2) return -1;
  QueueNameFor(tid, name);
  // Rings are unmapped only under the control mutex; the control thread may
  // hold it for a whole dump, and a rename must not wait for that: when it is
  // busy, the control thread applies the name when it is next free.
  std::unique_lock<std::mutex> lock(ControlMutex(), std::try_to_lock);
  if (lock.owns_lock()) {
    ApplyQueuedNames();
  } else {
    WakeControlThread();
  }
  return 0;
}

}  // extern "C"

// Loaded (preloaded or linked): read the configuration before main so that
// bad values are reported once, up front.
__attribute__((constructor)) static void LookbackConstructor() { lookback::rt::EnsureInitialised(); }
