// The registry of pass-built modules' guard tables (pass_guards.h).
//
// Registration is one append under a lock: a program of thousands of object
// files runs as many constructors, and each would otherwise pay for sorting
// everything registered before it. The sorted index that SetPassGuard
// searches is rebuilt, on the control thread, only when a table came or went
// since the last search.
#include "runtime/pass_guards.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "lookback/lookback.h"
#include "runtime/hot_path.h"

namespace lookback::rt {
// lookback.h's lb_guard_entry is the same table entry, for front-ends other than the pass.
static_assert(sizeof(lb_guard_entry) == sizeof(PassGuardEntry) && offsetof(lb_guard_entry, key) == offsetof(PassGuardEntry, fn) &&
                  offsetof(lb_guard_entry, guard) == offsetof(PassGuardEntry, guard),
              "lb_guard_entry and PassGuardEntry are one ABI");
namespace {

struct Table {
  const PassGuardEntry* begin;
  const PassGuardEntry* end;
};

struct Registry {
  std::vector<Table> tables;          // loaded modules' tables, in registration order
  std::vector<PassGuardEntry> index;  // every entry of `tables`, sorted by fn; stale while dirty
  bool dirty = false;
  size_t count = 0;  // entries of `tables`
};

// Constant-initialised, so usable from constructors that run before this
// file's dynamic initialisation; the registry is allocated on first use and
// never freed (module destructors may run after the runtime's own).
std::mutex g_mutex;
Registry* g_registry = nullptr;            // under g_mutex
bool (*g_shed_query)(uint64_t) = nullptr;  // under g_mutex
std::atomic<uint64_t> g_unregistrations{0};  // tables taken back (PassGuardUnregistrations)

// What the registry allocates is not the calling thread's to trace (as in
// lb_set_note): the program's operator new may itself be instrumented.
class Untraced {
 public:
  __attribute__((no_instrument_function)) Untraced() : saved_(lb_tls_ring) { lb_tls_ring = nullptr; }
  __attribute__((no_instrument_function)) ~Untraced() { lb_tls_ring = saved_; }
  Untraced(const Untraced&) = delete;
  Untraced& operator=(const Untraced&) = delete;

 private:
  Ring* saved_;
};

__attribute__((no_instrument_function)) Registry& Locked() {
  if (g_registry == nullptr) g_registry = new Registry;
  return *g_registry;
}

__attribute__((no_instrument_function)) Table ToTable(const void* begin, const void* end) {
  auto* b = static_cast<const PassGuardEntry*>(begin);
  auto* e = static_cast<const PassGuardEntry*>(end);
  if (b == nullptr || e == nullptr || e < b) return {b, b};
  return {b, e};
}

__attribute__((no_instrument_function)) void StoreGuard(uint8_t* guard, bool shed) {
  __atomic_store_n(guard, static_cast<uint8_t>(shed ? 1 : 0), __ATOMIC_RELAXED);
}

}  // namespace

// The first index entry of `fn` (or the end), the index rebuilt if modules
// came or went. Caller holds g_mutex.
std::vector<PassGuardEntry>::iterator FindLocked(Registry& reg, uint64_t fn) {
  if (reg.dirty) {
    reg.index.clear();
    reg.index.reserve(reg.count);
    for (const Table& t : reg.tables) reg.index.insert(reg.index.end(), t.begin, t.end);
    std::sort(reg.index.begin(), reg.index.end(),
              [](const PassGuardEntry& a, const PassGuardEntry& b) { return a.fn < b.fn; });
    reg.dirty = false;
  }
  return std::lower_bound(reg.index.begin(), reg.index.end(), fn,
                          [](const PassGuardEntry& e, uint64_t k) { return e.fn < k; });
}

bool SetPassGuard(uint64_t fn, bool shed) {
  Untraced untraced;
  std::lock_guard<std::mutex> lock(g_mutex);
  Registry& reg = Locked();
  bool found = false;
  for (auto it = FindLocked(reg, fn); it != reg.index.end() && it->fn == fn; ++it) {
    StoreGuard(it->guard, shed);
    found = true;
  }
  return found;
}

bool PassGuardRegistered(uint64_t fn) {
  Untraced untraced;
  std::lock_guard<std::mutex> lock(g_mutex);
  Registry& reg = Locked();
  const auto it = FindLocked(reg, fn);
  return it != reg.index.end() && it->fn == fn;
}

uint64_t PassGuardUnregistrations() { return g_unregistrations.load(std::memory_order_acquire); }

size_t PassGuardCount() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_registry == nullptr ? 0 : g_registry->count;
}

void SetShedQuery(bool (*is_shed)(uint64_t fn)) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_shed_query = is_shed;
}

}  // namespace lookback::rt

using lookback::rt::Registry;

extern "C" {

void lb_pass_register_guards(const void* begin, const void* end) {
  using namespace lookback::rt;
  const Table t = ToTable(begin, end);
  if (t.begin == t.end) return;
  Untraced untraced;
  std::lock_guard<std::mutex> lock(g_mutex);
  Registry& reg = Locked();
  // Under the lock, so that a shed decision the control thread makes while
  // this module registers reaches it either here or through SetPassGuard.
  if (g_shed_query != nullptr) {
    for (const PassGuardEntry* e = t.begin; e != t.end; ++e) StoreGuard(e->guard, g_shed_query(e->fn));
  }
  reg.tables.push_back(t);
  reg.count += static_cast<size_t>(t.end - t.begin);
  reg.dirty = true;
}

void lb_pass_unregister_guards(const void* begin, const void* end) {
  using namespace lookback::rt;
  const Table t = ToTable(begin, end);
  if (t.begin == t.end) return;
  Untraced untraced;
  std::lock_guard<std::mutex> lock(g_mutex);
  Registry& reg = Locked();
  // Destructors run in the reverse order of constructors: search from the back.
  for (size_t i = reg.tables.size(); i-- > 0;) {
    if (reg.tables[i].begin != t.begin) continue;
    reg.count -= static_cast<size_t>(reg.tables[i].end - reg.tables[i].begin);
    reg.tables.erase(reg.tables.begin() + static_cast<ptrdiff_t>(i));
    reg.dirty = true;
    g_unregistrations.fetch_add(1, std::memory_order_release);
    break;
  }
}

int lb_debug_shed(uint64_t fn, int shed) { return lookback::rt::SetPassGuard(fn, shed != 0) ? 1 : 0; }

}  // extern "C"
