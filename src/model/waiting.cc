#include "model/waiting.h"

#include <algorithm>

#include "symbolize/names.h"
#include "symbolize/symbolizer.h"

namespace lookback::model {
namespace {

// Matched by NameMatches: the whole name, without parameters, or the last
// component. JVM methods are "java.lang.Object.wait" once their return type
// and parameters are gone.
constexpr const char* kBuiltIn[] = {
    // JVM
    "java.lang.Object.wait*",
    "java.lang.Thread.sleep*",
    "java.lang.Thread.join",
    "java.lang.Thread.onSpinWait",
    "java.lang.ref.ReferenceQueue.remove*",
    "java.lang.ref.ReferenceQueue.await",
    "java.lang.ref.Reference.waitForReferencePendingList",
    "java.util.concurrent.locks.LockSupport.park*",
    "jdk.internal.misc.Unsafe.park",
    "sun.misc.Unsafe.park",
    "java.net.SocketInputStream.socketRead*",
    "java.net.Socket*.read",
    "java.net.ServerSocket.accept",
    "sun.nio.ch.Net.poll",
    "sun.nio.ch.EPoll.wait",
    "sun.nio.ch.*.implAccept",
    "java.io.FileInputStream.read*",
    "java.lang.ProcessImpl.waitFor*",
    "java.lang.ProcessHandleImpl.waitForProcessExit0",
    // C library (traced when built into the program or wrapped)
    "poll",
    "ppoll",
    "select",
    "pselect",
    "epoll_wait",
    "epoll_pwait",
    "nanosleep",
    "clock_nanosleep",
    "usleep",
    "sleep",
    "pause",
    "sigwait*",
    "futex_wait*",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_join",
    "sem_wait",
    "sem_timedwait",
    "accept",
    "accept4",
    "recv",
    "recvfrom",
    "recvmsg",
    "waitpid",
    "wait4",
};

constexpr const char* kHousekeeping[] = {
    "Reference Handler", "Finalizer",        "Signal Dispatcher", "Common-Cleaner",  "Notification Thread",
    "Attach Listener",   "Service Thread",   "Monitor Deflation Thread", "Sweeper thread", "process reaper",
    "C1 CompilerThread*", "C2 CompilerThread*", "GC Thread*",      "G1 *",            "VM Thread",
    "VM Periodic Task Thread", "JFR *",      "lookback-*",        "Reference Handl",  "Signal Dispatch",
    "Common-Cleaner",    "Notification Thr", "C1 CompilerThre",   "C2 CompilerThre",
};

}  // namespace

WaitFunctions::WaitFunctions(const format::Dump& dump, const std::vector<std::string>& extra_globs) {
  for (const char* g : kBuiltIn) globs_.emplace_back(g);
  if (auto it = dump.metadata.find(format::metadata::kStallIdle); it != dump.metadata.end()) {
    std::string_view s = it->second;
    while (!s.empty()) {
      const size_t comma = s.find(',');
      std::string part(s.substr(0, comma));
      if (!part.empty()) globs_.push_back(std::move(part));
      if (comma == std::string_view::npos) break;
      s.remove_prefix(comma + 1);
    }
  }
  for (const std::string& g : extra_globs) globs_.push_back(g);
}

bool WaitFunctions::IsWait(std::string_view name) const {
  for (const std::string& g : globs_) {
    if (symbolize::NameMatches(g, name)) return true;
  }
  return false;
}

bool WaitFunctions::IsWaitKey(uint64_t key, symbolize::Symbolizer* symbols) {
  if (symbols == nullptr) return false;
  auto [it, added] = by_key_.try_emplace(key, false);
  if (added) it->second = IsWait(symbols->Lookup(key).name);
  return it->second;
}

bool IsJvmDump(const format::Dump& dump) {
  auto it = dump.metadata.lower_bound("note.jvm");
  return it != dump.metadata.end() && it->first.rfind("note.jvm", 0) == 0;
}

bool IsHousekeepingThread(std::string_view name) {
  for (const char* g : kHousekeeping) {
    if (symbolize::GlobMatch(g, name)) return true;
  }
  return false;
}

std::vector<bool> StillOnlyWaited(const std::vector<ThreadWork>& threads) {
  auto cpu = [&](size_t i) { return std::max<int64_t>(0, threads[i].cpu_ns); };
  int64_t total = 0;
  std::vector<size_t> waited;
  for (size_t i = 0; i < threads.size(); ++i) {
    if (threads[i].housekeeping) continue;
    total += cpu(i);
    if (threads[i].waited) waited.push_back(i);
  }
  std::stable_sort(waited.begin(), waited.end(), [&](size_t a, size_t b) { return cpu(a) < cpu(b); });
  std::vector<bool> out(threads.size(), false);
  int64_t aside = 0;
  for (size_t i : waited) {
    aside += cpu(i);
    if (aside * kWaitingShareDivisor > total) break;
    out[i] = true;
  }
  return out;
}

}  // namespace lookback::model
