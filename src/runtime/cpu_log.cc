#include "runtime/cpu_log.h"

#include <time.h>
#include <x86intrin.h>

#include <algorithm>
#include <mutex>

#include "runtime/runtime.h"

namespace lookback::rt {
namespace {

struct CpuLog {
  // Whose log this is: a registry slot is reused by later threads.
  std::atomic<const Ring*> ring{nullptr};
  std::atomic<uint64_t> start_tsc{0};
  std::atomic<uint64_t> pos{0};  // entries ever written; release-published
  // (tsc, cpu ns); relaxed atomics: a reader may copy one being rewritten,
  // which it then drops (or, for the flat case, reads either TSC: both true).
  std::atomic<uint64_t> entries[kCpuLogCapacity][2] = {};
};

// One log per registry slot, made when first needed, never freed (the
// registry's size bounds them; a dump may be reading one).
std::atomic<CpuLog*>* g_logs = nullptr;
uint32_t g_logs_size = 0;

CpuLog* LogAt(uint32_t i, bool create) {
  if (g_logs == nullptr || i >= g_logs_size) return nullptr;
  CpuLog* log = g_logs[i].load(std::memory_order_acquire);
  if (log == nullptr && create) {
    log = new (std::nothrow) CpuLog;
    if (log != nullptr) g_logs[i].store(log, std::memory_order_release);
  }
  return log;
}

void Append(CpuLog& log, uint64_t tsc, uint64_t cpu) {
  const uint64_t pos = log.pos.load(std::memory_order_relaxed);
  if (pos >= 2) {
    auto& last = log.entries[(pos - 1) & (kCpuLogCapacity - 1)];
    const auto& before = log.entries[(pos - 2) & (kCpuLogCapacity - 1)];
    if (last[1].load(std::memory_order_relaxed) == cpu && before[1].load(std::memory_order_relaxed) == cpu) {
      last[0].store(tsc, std::memory_order_relaxed);  // still flat: the flat stretch now ends here
      return;
    }
  }
  auto& e = log.entries[pos & (kCpuLogCapacity - 1)];
  e[0].store(tsc, std::memory_order_relaxed);
  e[1].store(cpu, std::memory_order_relaxed);
  log.pos.store(pos + 1, std::memory_order_release);
}

}  // namespace

uint64_t ThreadCpuNsOf(uint32_t tid, bool* ok) {
  // A thread's CPU clock by id, as pthread_getcpuclockid builds it for any
  // thread of this process (Linux: ~tid << 3 | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED).
  const clockid_t id = static_cast<clockid_t>((~static_cast<int64_t>(tid) << 3) | 6);
  timespec ts{};
  *ok = clock_gettime(id, &ts) == 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t CpuLogTick(uint64_t now_ns) {
  Runtime& rt = R();
  std::lock_guard<std::mutex> control(ControlMutex());  // rings stay mapped while we read them
  if (g_logs == nullptr && rt.registry_size != 0) {
    g_logs = new (std::nothrow) std::atomic<CpuLog*>[rt.registry_size]();
    if (g_logs != nullptr) g_logs_size = rt.registry_size;
  }
  uint64_t live = 0;
  for (uint32_t i = 0; i < g_logs_size; ++i) {
    const Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
    ++live;
    CpuLog* log = LogAt(i, true);
    if (log == nullptr) continue;
    if (log->ring.load(std::memory_order_relaxed) != r || log->start_tsc.load(std::memory_order_relaxed) != r->start_tsc) {
      // A new owner: readers that see the new identity see only its entries.
      log->ring.store(nullptr, std::memory_order_release);
      log->pos.store(0, std::memory_order_release);
      log->start_tsc.store(r->start_tsc, std::memory_order_relaxed);
      log->ring.store(r, std::memory_order_release);
      // Its first reading is the one taken when its ring was set up: a pool
      // worker that works for a few ms at its start and then waits until the
      // end would otherwise show its CPU time only from this tick on, and
      // its work as waiting (readings before the first are extrapolated at
      // the nearest interval's rate: here, flat).
      if (r->start_cpu_ns != 0) Append(*log, r->start_tsc, r->start_cpu_ns);
    }
    bool ok = false;
    const uint64_t cpu = ThreadCpuNsOf(r->tid, &ok);
    const uint64_t tsc = __rdtsc();
    if (ok) Append(*log, tsc, cpu);
  }
  // A read costs about 0.25 µs: with many threads, read less often, so the
  // control thread stays near 1 % of a core at most.
  return now_ns + std::max(kCpuLogTickNs, live * kCpuLogNsPerThread);
}

void CopyCpuLog(const Ring& r, bool live, std::vector<uint64_t>* out) {
  out->clear();
  Runtime& rt = R();
  for (uint32_t i = 0; i < rt.registry_size && i < g_logs_size; ++i) {
    if (rt.registry[i].load(std::memory_order_acquire) != &r) continue;
    CpuLog* log = LogAt(i, false);
    if (log == nullptr) break;
    if (log->ring.load(std::memory_order_acquire) != &r || log->start_tsc.load(std::memory_order_relaxed) != r.start_tsc)
      break;
    const uint64_t end = log->pos.load(std::memory_order_acquire);
    const uint64_t begin = end > kCpuLogCapacity ? end - kCpuLogCapacity : 0;
    // Straight into `out` (its caller reserved room: no allocation here, a
    // crash dump may be under way).
    for (uint64_t p = begin; p < end; ++p) {
      const auto& e = log->entries[p & (kCpuLogCapacity - 1)];
      out->push_back(e[0].load(std::memory_order_relaxed));
      out->push_back(e[1].load(std::memory_order_relaxed));
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    const uint64_t now_pos = log->pos.load(std::memory_order_relaxed);
    if (log->ring.load(std::memory_order_relaxed) != &r) {  // reused meanwhile (the ring was freed): nothing is its
      out->clear();
      break;
    }
    // Slots rewritten meanwhile: those below now_pos - capacity, plus the
    // one being written at now_pos (kept whole: see Append).
    const uint64_t valid_from = now_pos + 1 > kCpuLogCapacity ? now_pos + 1 - kCpuLogCapacity : 0;
    const uint64_t skip = valid_from > begin ? std::min(valid_from - begin, end - begin) : 0;
    out->erase(out->begin(), out->begin() + static_cast<std::ptrdiff_t>(skip * 2));
    break;
  }
  // Dumped before the control thread's first tick for this ring: its
  // reading at set-up is the first.
  if (out->empty() && r.start_cpu_ns != 0) {
    out->push_back(r.start_tsc);
    out->push_back(r.start_cpu_ns);
  }
  if (live) {
    bool ok = false;
    const uint64_t cpu = ThreadCpuNsOf(r.tid, &ok);
    const uint64_t tsc = __rdtsc();
    if (ok && (out->empty() || (tsc >= (*out)[out->size() - 2] && cpu >= out->back()))) {
      out->push_back(tsc);
      out->push_back(cpu);
    }
  }
  // Keep only what is ordered (a reader checks this too): a torn copy must not
  // make time or CPU run backwards.
  size_t w = 0;
  for (size_t i = 0; i + 1 < out->size(); i += 2) {
    if (w >= 2 && ((*out)[i] < (*out)[w - 2] || (*out)[i + 1] < (*out)[w - 1])) continue;
    (*out)[w++] = (*out)[i];
    (*out)[w++] = (*out)[i + 1];
  }
  out->resize(w);
}

}  // namespace lookback::rt
