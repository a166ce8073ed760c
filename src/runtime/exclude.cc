// Run-time exclusion filter: building and publishing the table (exclude.h).
#include "runtime/exclude.h"

#include <mutex>
#include <vector>

#include "runtime/runtime.h"
#include "runtime/symbols.h"

namespace lookback::rt {

const uint64_t* g_exclude_table = nullptr;

namespace {

std::mutex g_refresh_mutex;  // guards everything below
uint64_t g_modules_gen = ~uint64_t{0};
uint64_t g_checked_ns = 0;
// Made on first use and never destroyed: the hooks may filter before this
// library's static initialisers ran (another library's constructor calls
// instrumented code), and the control thread may publish a shed set while
// the process runs its exit-time destructors (TSan saw a global vector freed
// at exit under a budget tick).
std::vector<uint64_t>& Excluded() {  // LOOKBACK_EXCLUDE's functions, as last resolved
  static auto* v = new std::vector<uint64_t>;
  return *v;
}
std::vector<uint64_t>& Shed() {  // the overhead budget's (budget.h)
  static auto* v = new std::vector<uint64_t>;
  return *v;
}

const uint64_t* BuildTable(const std::vector<uint64_t>& keys) {
  uint64_t slots = 16;
  while (slots < keys.size() * 2) slots <<= 1;  // load factor <= 1/2: short probes
  auto* table = new uint64_t[slots + 1]();
  table[0] = slots - 1;
  for (const uint64_t key : keys) {
    if (key == 0) continue;
    for (uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 40;; ++i) {
      uint64_t& k = table[1 + (i & table[0])];
      if (k == key) break;
      if (k == 0) {
        k = key;
        break;
      }
    }
  }
  return table;
}

// Publishes both sets in one table; none at all when both are empty, so a
// budget that brought every function back costs what no filter costs.
// Caller holds g_refresh_mutex.
uint64_t g_calibration_key = 0;  // MeasureTracePoint's, while it measures (0: none)

void PublishLocked() {
  std::vector<uint64_t> keys = Excluded();
  keys.insert(keys.end(), Shed().begin(), Shed().end());
  if (g_calibration_key != 0) keys.push_back(g_calibration_key);
  // A replaced table is never freed (a hook may still be reading it), and
  // stays reachable from here, so that leak checkers see memory kept on
  // purpose, not lost (LeakSanitizer reported MeasureTracePoint's
  // calibration table, replaced by none, as a leak at exit).
  static auto* retired = new std::vector<const uint64_t*>;
  if (const uint64_t* old = __atomic_load_n(&g_exclude_table, __ATOMIC_RELAXED)) retired->push_back(old);
  __atomic_store_n(&g_exclude_table, keys.empty() ? nullptr : BuildTable(keys), __ATOMIC_RELEASE);
}

}  // namespace

void RefreshExcludes() {
  const Config& c = R().config;
  if (c.exclude.empty()) return;
  std::lock_guard<std::mutex> lock(g_refresh_mutex);
  g_modules_gen = ModulesGeneration();
  const std::vector<FunctionMatch> fns = FindFunctions(c.exclude);
  static bool said = false;
  if (fns.empty()) {
    if (!said) Say("LOOKBACK_EXCLUDE: no function of the loaded modules matches; modules loaded later are checked");
    said = true;
    return;
  }
  Excluded().clear();
  for (const FunctionMatch& f : fns) Excluded().push_back(f.addr);
  PublishLocked();
}

void SetCalibrationKey(uint64_t key) {
  std::lock_guard<std::mutex> lock(g_refresh_mutex);
  g_calibration_key = key;
  PublishLocked();
}

void SetShedFilter(const std::vector<uint64_t>& keys) {
  std::lock_guard<std::mutex> lock(g_refresh_mutex);
  Shed() = keys;
  PublishLocked();
}

void RefreshExcludesIfModulesChanged(uint64_t now_ns, uint64_t min_interval_ns) {
  if (R().config.exclude.empty() || now_ns - g_checked_ns < min_interval_ns) return;
  g_checked_ns = now_ns;
  uint64_t seen;
  {
    std::lock_guard<std::mutex> lock(g_refresh_mutex);
    seen = g_modules_gen;
  }
  if (ModulesGeneration() != seen) RefreshExcludes();
}

}  // namespace lookback::rt
