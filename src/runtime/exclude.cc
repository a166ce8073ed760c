// Run-time exclusion filter: building and publishing the table (exclude.h).
#include "runtime/exclude.h"

#include <mutex>
#include <vector>

#include "runtime/runtime.h"
#include "runtime/symbols.h"

namespace lookback::rt {

const uint64_t* g_exclude_table = nullptr;

namespace {

std::mutex g_refresh_mutex;
uint64_t g_modules_gen = ~uint64_t{0};
uint64_t g_checked_ns = 0;

const uint64_t* BuildTable(const std::vector<FunctionMatch>& fns) {
  uint64_t slots = 16;
  while (slots < fns.size() * 2) slots <<= 1;  // load factor <= 1/2: short probes
  auto* table = new uint64_t[slots + 1]();
  table[0] = slots - 1;
  for (const FunctionMatch& f : fns) {
    if (f.addr == 0) continue;
    for (uint64_t i = (f.addr * 0x9E3779B97F4A7C15ull) >> 40;; ++i) {
      uint64_t& k = table[1 + (i & table[0])];
      if (k == f.addr) break;
      if (k == 0) {
        k = f.addr;
        break;
      }
    }
  }
  return table;
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
  __atomic_store_n(&g_exclude_table, BuildTable(fns), __ATOMIC_RELEASE);  // the previous table is left to readers
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
