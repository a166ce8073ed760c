// Working or waiting: which functions block (their time is waiting whatever
// the CPU readings say), which threads are JVM housekeeping, and which
// threads only waited. Shared by report, chains, diff, sql and the fleet
// export so that they all tell the work from the wait alike
// (docs/analyses.md, "Working and waiting").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "format/reader.h"

namespace lookback::symbolize {
class Symbolizer;
}

namespace lookback::model {

// The functions whose whole time is waiting: the JVM's blocking methods
// (Object.wait, LockSupport.park, Thread.sleep, ReferenceQueue.remove, socket
// reads, ...), the C library's blocking calls when traced (poll, epoll_wait,
// nanosleep, futex waits, ...), the dump's --stall-idle globs (METADATA
// stall.idle) and the caller's own globs (--wait).
class WaitFunctions {
 public:
  WaitFunctions() = default;
  WaitFunctions(const format::Dump& dump, const std::vector<std::string>& extra_globs);
  // `name` is a demangled C++ name or a JVM method in the PrettyMethod style.
  bool IsWait(std::string_view name) const;
  // Memoised by key (a dump's keys name one function each); `symbols` names
  // a key the first time it is seen (nullptr: never a waiting function).
  bool IsWaitKey(uint64_t key, symbolize::Symbolizer* symbols);

 private:
  std::vector<std::string> globs_;
  std::unordered_map<uint64_t, bool> by_key_;
};

// HotSpot's own threads (Reference Handler, Finalizer, Signal Dispatcher,
// Common-Cleaner, compiler and GC threads, ...) and lookback's agent threads:
// never the program's work. Only in a JVM dump (a JVM agent's note).
bool IsJvmDump(const format::Dump& dump);
bool IsHousekeepingThread(std::string_view name);

// A thread "only waited" when it was on CPU for less than this share of its
// traced time (1/kWaitingShareDivisor, 2 %).
inline constexpr int64_t kWaitingShareDivisor = 50;
inline bool OnlyWaited(int64_t cpu_ns, int64_t span_ns) { return span_ns > 0 && cpu_ns * kWaitingShareDivisor < span_ns; }

// A dump's threads as report, chains, sql and the fleet export see them:
// time on CPU, whether OnlyWaited says so, whether housekeeping.
struct ThreadWork {
  int64_t cpu_ns = 0;
  bool waited = false;
  bool housekeeping = false;
};
// Per thread, whether it is set aside as "only waited" once the others are
// counted: of the threads that waited, the least busy, as long as together
// they stay under 2 % of all the non-housekeeping threads' CPU time. So ten
// sleepers that each woke for a microsecond are set aside, and a pool worker
// that computed for 7 ms of a 190 ms program's run before it parked until
// the end is not, nor are fifty workers at 1 % each.
std::vector<bool> StillOnlyWaited(const std::vector<ThreadWork>& threads);

}  // namespace lookback::model
