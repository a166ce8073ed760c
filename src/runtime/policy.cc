// The policy every dump request goes through (docs/triggers.md, "Policy").
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>

#include "runtime/runtime.h"
#include "runtime/triggers.h"

namespace lookback::rt {
namespace {

constexpr size_t kMaxPendingDumps = 16;
constexpr uint64_t kHourNs = 3600ull * 1000000000ull;

struct Pending {
  Trigger trigger;
  uint64_t due_ns;
};

struct Policy {
  std::mutex m;
  std::deque<uint64_t> accepted[kDetectorCount];  // times of dumps in the last hour (rate limit)
  uint64_t last_ns[kDetectorCount] = {};           // last accepted (cooldown)
  uint64_t suppressed = 0;                         // refused or merged since the last dump
  std::deque<Pending> pending;
  uint32_t writing = 0;          // taken by the control thread and not yet written
  std::condition_variable done;  // writing went down
};

Policy*& PolicyPtr() {
  static Policy* p = new Policy;  // never destroyed: used by exit handlers and the control thread
  return p;
}

Policy& P() { return *PolicyPtr(); }

// Caller holds P().m.
bool AdmitLocked(Policy& p, Detector kind, uint64_t now, std::string* why) {
  const size_t k = static_cast<size_t>(kind);
  const Config& c = R().config;
  auto& times = p.accepted[k];
  while (!times.empty() && now - times.front() >= kHourNs) times.pop_front();
  if (c.rate_limit[k] != 0 && times.size() >= c.rate_limit[k]) {
    *why = std::string("rate limit: ") + std::to_string(c.rate_limit[k]) + " " + kDetectorNames[k] + " dumps per hour";
    return false;
  }
  if (c.cooldown_ns[k] != 0 && p.last_ns[k] != 0 && now - p.last_ns[k] < c.cooldown_ns[k]) {
    *why = std::string("cooldown: the previous ") + kDetectorNames[k] + " dump was " +
           std::to_string((now - p.last_ns[k]) / 1000000) + " ms ago";
    return false;
  }
  times.push_back(now);
  p.last_ns[k] = now;
  return true;
}

// a < b, with runs of digits compared by value ("x-9" < "x-10").
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (isdigit(static_cast<unsigned char>(a[i])) && isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ei = i, ej = j;
      while (ei < a.size() && isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
      while (ej < b.size() && isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
      size_t zi = i, zj = j;  // leading zeros do not count
      while (zi + 1 < ei && a[zi] == '0') ++zi;
      while (zj + 1 < ej && b[zj] == '0') ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      const int c = a.compare(zi, ei - zi, b, zj, ej - zj);
      if (c != 0) return c < 0;
      i = ei;
      j = ej;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i, ++j;
  }
  return a.size() - i < b.size() - j;
}

}  // namespace

Trigger ExplicitTrigger(const std::string& reason) {
  Trigger t;
  t.kind = Detector::kExplicit;
  t.detector = kDetectorNames[static_cast<size_t>(Detector::kExplicit)];
  t.tsc = __rdtsc();
  t.received_ns = MonotonicNs();
  t.subject = reason;
  t.reason = reason;
  return t;
}

Trigger EndTrigger(const char* what) {
  Trigger t = ExplicitTrigger(what);
  t.detector = what;
  return t;
}

bool Admit(Trigger* t, std::string* why) {
  Policy& p = P();
  std::lock_guard<std::mutex> lock(p.m);
  if (!AdmitLocked(p, t->kind, MonotonicNs(), why)) {
    ++p.suppressed;
    return false;
  }
  t->suppressed = p.suppressed;
  p.suppressed = 0;
  return true;
}

bool Fire(Trigger t) {
  Policy& p = P();
  const uint64_t now = MonotonicNs();
  const uint64_t delay = R().config.post_trigger_ns;
  {
    std::lock_guard<std::mutex> lock(p.m);
    // With a post-trigger delay, a trigger that arrives while a dump is
    // waiting is already covered by that dump: merge it.
    if (delay != 0 && !p.pending.empty()) {
      ++p.pending.back().trigger.suppressed;
      return true;
    }
    std::string why;
    if (p.pending.size() >= kMaxPendingDumps || !AdmitLocked(p, t.kind, now, &why)) {
      ++p.suppressed;
      return false;
    }
    t.suppressed = p.suppressed;
    p.suppressed = 0;
    p.pending.push_back({std::move(t), now + delay});
  }
  WakeControlThread();
  return true;
}

std::vector<Trigger> TakeAllPendingDumps() {
  Policy& p = P();
  std::unique_lock<std::mutex> lock(p.m);
  // The dump the control thread is writing goes first (it is older); the
  // wait is bounded, so that an exit never hangs on a dump that cannot end.
  p.done.wait_for(lock, std::chrono::seconds(30), [&p] { return p.writing == 0; });
  std::vector<Trigger> all;
  for (Pending& d : p.pending) all.push_back(std::move(d.trigger));
  p.pending.clear();
  return all;
}

void ResetPolicyAfterFork() {
  // A fresh one: the parent's requests are the parent's, and another of its
  // threads may have held the copied mutex at the fork (the copy is left
  // as it is, never touched again).
  PolicyPtr() = new Policy;
}

std::optional<Trigger> TakeDueDump(uint64_t now_ns, uint64_t* next_ns) {
  Policy& p = P();
  std::lock_guard<std::mutex> lock(p.m);
  std::optional<Trigger> due;
  if (!p.pending.empty() && p.pending.front().due_ns <= now_ns) {
    due = std::move(p.pending.front().trigger);
    p.pending.pop_front();
    ++p.writing;
  }
  *next_ns = p.pending.empty() ? 0 : p.pending.front().due_ns;
  return due;
}

void DueDumpWritten() {
  Policy& p = P();
  {
    std::lock_guard<std::mutex> lock(p.m);
    if (p.writing > 0) --p.writing;
  }
  p.done.notify_all();
}

void EnforceRetention(const std::string& dir, const std::string& keep) {
  const Config& c = R().config;
  if (c.max_dumps == 0 && c.max_dump_bytes == 0) return;
  struct File {
    int64_t mtime_ns;
    std::string path;
    uint64_t bytes;
  };
  std::vector<File> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() <= 4 || n[0] == '.' || n.compare(n.size() - 4, 4, ".lbk") != 0) continue;
    const std::string path = dir + "/" + n;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    files.push_back({int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec, path, static_cast<uint64_t>(st.st_size)});
  }
  closedir(d);
  // Newest first; names break ties (the file system's timestamps are coarse,
  // ~4 ms here, and a small dump takes less), numbers in them compared as
  // numbers so that <name>-<pid>-10 is newer than <name>-<pid>-9.
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns > b.mtime_ns : NaturalLess(b.path, a.path);
  });
  std::stable_partition(files.begin(), files.end(), [&](const File& f) { return f.path == keep; });
  uint64_t count = 0, bytes = 0;
  for (const File& f : files) {
    ++count;
    bytes += f.bytes;
    const bool over = (c.max_dumps != 0 && count > c.max_dumps) || (c.max_dump_bytes != 0 && bytes > c.max_dump_bytes);
    if (over && f.path != keep && unlink(f.path.c_str()) == 0) {
      --count;
      bytes -= f.bytes;
    }
  }
}

}  // namespace lookback::rt
