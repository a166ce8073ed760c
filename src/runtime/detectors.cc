// The detectors (docs/triggers.md) and the scope API they watch.
//
// Everything here but lb_scope_begin/end runs on the control thread, every
// tick (a fifth of the smallest threshold, 1 to 20 ms). It reads traced
// threads' rings and scope state with the snapshot protocol's rules
// (hot_path.h) and never writes to them, so the traced threads pay nothing
// for the stall and slow-call detectors; scopes cost two trace points.
#include <fnmatch.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "format/record_state.h"
#include "lookback/lookback.h"
#include "runtime/runtime.h"
#include "runtime/symbols.h"
#include "runtime/triggers.h"

namespace lookback::rt {
namespace {

// ---------------------------------------------------------------------------
// Scopes: name -> small id -> key LB_SCOPE_KEY(id), named in the dump.
constexpr uint32_t kMaxScopes = 1024;
constexpr uint32_t kScopeCacheSize = 256;
constexpr uint64_t kScopeKeyTag = format::kKeyMethodTag | (uint64_t{1} << 54);

std::mutex g_scope_mutex;
std::vector<std::string>* g_scope_names = nullptr;  // index = id; 0 unused
std::atomic<uint64_t> g_scope_threshold_ns[kMaxScopes];
std::atomic<uint64_t> g_scope_threshold_ticks[kMaxScopes];  // kept by the control thread
std::atomic<uint32_t> g_scope_count{0};
std::atomic<const char*> g_cache_ptr[kScopeCacheSize];
std::atomic<uint32_t> g_cache_id[kScopeCacheSize];

uint64_t ScopeKey(uint32_t id) { return kScopeKeyTag | id; }

uint32_t RegisterScope(const char* name) {
  uint32_t id = 0;
  bool fresh = false;
  {
    std::lock_guard<std::mutex> lock(g_scope_mutex);
    if (g_scope_names == nullptr) g_scope_names = new std::vector<std::string>(1);
    for (uint32_t i = 1; i < g_scope_names->size(); ++i) {
      if ((*g_scope_names)[i] == name) id = i;
    }
    if (id == 0 && g_scope_names->size() < kMaxScopes) {
      id = static_cast<uint32_t>(g_scope_names->size());
      g_scope_names->push_back(name);
      for (const Watch& w : R().config.slow_scope) {
        if (fnmatch(w.pattern.c_str(), name, 0) == 0) {
          g_scope_threshold_ns[id].store(w.threshold_ns);
          break;
        }
      }
      g_scope_count.store(id + 1, std::memory_order_release);
      fresh = true;
    }
  }
  if (fresh) lb_set_key_name(ScopeKey(id), name);
  // Remember this pointer; a full cache only means the slower lookup next time.
  const uint64_t h = (reinterpret_cast<uint64_t>(name) >> 3) % kScopeCacheSize;
  for (uint64_t i = 0; i < 4 && id != 0; ++i) {
    const uint64_t slot = (h + i) % kScopeCacheSize;
    const char* expected = nullptr;
    if (g_cache_ptr[slot].load(std::memory_order_acquire) == nullptr) {
      g_cache_id[slot].store(id, std::memory_order_relaxed);
      if (g_cache_ptr[slot].compare_exchange_strong(expected, name, std::memory_order_release)) break;
    }
  }
  return id;
}

LOOKBACK_HOT uint32_t ScopeId(const char* name) {
  const uint64_t h = (reinterpret_cast<uint64_t>(name) >> 3) % kScopeCacheSize;
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t slot = (h + i) % kScopeCacheSize;
    const char* p = g_cache_ptr[slot].load(std::memory_order_acquire);
    if (p == name) return g_cache_id[slot].load(std::memory_order_relaxed);
    if (p == nullptr) break;
  }
  return RegisterScope(name);
}

// ---------------------------------------------------------------------------
// Control-thread state.
struct OpenCall {
  uint64_t key, tsc;
  bool fired;
};

struct ThreadState {
  uint32_t tid = 0;
  uint64_t start_tsc = 0;  // with tid, tells a ring from a new one at the same address
  std::string name;
  uint64_t name_read_at = 0;  // stall_pos + 1 when `name` was read (0: never)
  int stall_watch = -1;
  uint64_t stall_pos = ~uint64_t{0};
  bool stall_seen = false;  // this quiet period was judged already
  // Calls the filter dropped (shed or excluded functions, Ring::filtered):
  // a thread making them is not stalled, though it writes no trace point.
  // (A shed function's calls in pass-built code are not counted: a thread
  // busy only in those looks quiet, docs/triggers.md.)
  uint64_t stall_filtered = 0;
  uint64_t filtered_seen_tsc = 0;  // when stall_filtered last moved
  uint64_t fired_scope[kMaxWatchedScopes] = {};
  // slow-call scanner
  bool scanning = false;
  uint64_t scan_pos = 0;
  format::RecordState state;
  uint64_t reading = 0;  // the latest EVENT's TSC seen by the scanner (0: none yet)
  std::vector<OpenCall> open;
};

struct CallWatch {
  uint64_t threshold_ns;
  uint64_t size;
  std::string name;
};

struct Detectors {
  std::unordered_map<Ring*, ThreadState> threads;
  std::unordered_map<uint64_t, CallWatch> calls;  // key -> watch
  std::vector<uint64_t> call_filter = std::vector<uint64_t>(1024);  // 65536-bit filter on low key bits
  std::unordered_set<uint64_t> idle;
  uint64_t modules_gen = ~uint64_t{0};
  size_t key_names_seen = 0;  // lb_set_key_name entries already matched (they only grow)
  uint64_t modules_checked_ns = 0;
  double ticks_per_ns = 0;
};

Detectors& D() {
  static Detectors* d = new Detectors;
  return *d;
}

uint32_t FilterBit(uint64_t low) { return static_cast<uint32_t>((low * 0x9E3779B97F4A7C15ull) >> 48); }

// A glob over a key named by a front-end (JVM methods: "void
// com.example.Foo.parse(int)"): it matches the qualified name without return
// type and parameters ("com.example.*.parse*"), or the whole name.
bool KeyNameMatches(const std::string& pattern, const std::string& name) {
  const size_t space = name.find(' '), open = name.find('(');
  const std::string qualified =
      space != std::string::npos && open != std::string::npos && open > space ? name.substr(space + 1, open - space - 1)
                                                                             : name;
  return fnmatch(pattern.c_str(), qualified.c_str(), 0) == 0 || fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// Keys named by a front-end since the last look, for every detector that
// takes function globs (slow-call, stall-idle). Names only grow, so only the
// new ones are matched.
void MatchKeyNames(Detectors& d) {
  const Config& c = R().config;
  if (c.slow_call.empty() && c.stall_idle.empty()) return;
  const std::vector<std::pair<uint64_t, std::string>> names = KeyNames();
  for (size_t i = d.key_names_seen; i < names.size(); ++i) {
    const auto& [key, name] = names[i];
    for (const Watch& w : c.slow_call) {
      if (KeyNameMatches(w.pattern, name)) {
        d.calls[key] = {w.threshold_ns, 1, name};
        const uint32_t b = FilterBit(key & format::kKeyLowMask);
        d.call_filter[b >> 6] |= uint64_t{1} << (b & 63);
        break;
      }
    }
    for (const std::string& glob : c.stall_idle) {
      if (KeyNameMatches(glob, name)) {
        d.idle.insert(key);
        break;
      }
    }
  }
  d.key_names_seen = names.size();
}

void ResolveFunctions(Detectors& d) {
  const Config& c = R().config;
  std::vector<std::string> globs;
  for (const Watch& w : c.slow_call) globs.push_back(w.pattern);
  d.calls.clear();
  std::fill(d.call_filter.begin(), d.call_filter.end(), 0);
  for (const FunctionMatch& f : FindFunctions(globs)) {
    d.calls[f.addr] = {c.slow_call[f.pattern].threshold_ns, f.size, f.name};
    const uint32_t b = FilterBit(f.addr & format::kKeyLowMask);
    d.call_filter[b >> 6] |= uint64_t{1} << (b & 63);
  }
  d.idle.clear();
  for (const FunctionMatch& f : FindFunctions(c.stall_idle)) d.idle.insert(f.addr);
  d.key_names_seen = 0;
  MatchKeyNames(d);
  static bool said = false;
  if (!said && !c.slow_call.empty() && d.calls.empty()) {
    said = true;
    Say("LOOKBACK_SLOW_CALL: no function of the loaded modules matches yet; the detector waits for modules loaded "
        "and methods named later");
  }
}

uint64_t ToNs(const Detectors& d, uint64_t ticks) {
  return d.ticks_per_ns > 0 ? static_cast<uint64_t>(static_cast<double>(ticks) / d.ticks_per_ns) : 0;
}

std::string Ms(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

// Innermost open function at `pos` (0: unknown), walking back at most 64 Ki
// records. The key bases are the ring's current ones, stepped back through
// each FN_BASE passed on the way (it names what its slot held before).
uint64_t InnermostOpen(const Ring& r, uint64_t pos) {
  uint64_t base[format::kBaseSlots];
  for (unsigned s = 0; s < format::kBaseSlots; ++s) base[s] = __atomic_load_n(&r.base[s], __ATOMIC_RELAXED);
  const uint64_t lowest = pos > r.capacity ? pos - r.capacity + 2 * kMaxSlotsPerPublish : 0;
  int depth = 0;
  for (uint64_t i = pos; i > lowest && pos - i < 65536;) {
    const uint64_t rec = __atomic_load_n(&r.slots[--i & r.mask], __ATOMIC_RELAXED);
    if (format::IsUntimed(rec)) {  // fast clock: the key is whole
      if (format::IsUntimedExit(rec)) {
        ++depth;
      } else if (depth == 0) {
        return format::ControlPayload(rec);
      } else {
        --depth;
      }
      continue;
    }
    if (!format::IsEvent(rec)) {
      if (format::ControlKindOf(rec) == static_cast<uint8_t>(format::ControlKind::kFnBase)) {
        if (!format::FnBasePreviousKnown(rec)) return 0;
        base[format::FnBaseSlot(rec)] = format::FnBasePrevious(rec);  // in effect before this record
      }
      if (format::ControlKindOf(rec) == static_cast<uint8_t>(format::ControlKind::kResume)) return 0;
      continue;
    }
    if (format::IsExit(rec)) {
      ++depth;
    } else if (depth == 0) {
      const uint64_t b = base[format::EventSlot(rec)];
      return b == kNoBase ? 0 : (b << 32) | format::EventKeyLow(rec);
    } else {
      --depth;
    }
  }
  return 0;
}

void CheckStall(Detectors& d, Ring& r, ThreadState& st, uint64_t now_tsc) {
  const Config& c = R().config;
  const uint64_t pos = __atomic_load_n(&r.pos, __ATOMIC_ACQUIRE);
  if (pos != st.stall_pos) {
    st.stall_pos = pos;
    st.stall_seen = false;
  }
  if (const uint64_t filtered = __atomic_load_n(&r.filtered, __ATOMIC_RELAXED); filtered != st.stall_filtered) {
    st.stall_filtered = filtered;
    st.filtered_seen_tsc = now_tsc;
    st.stall_seen = false;
  }
  if (st.stall_seen || pos == 0) return;
  // The last event's time: its low TSC bits with the ring's current epoch,
  // or the one an EPOCH between it and the end replaced.
  uint64_t last = 0;
  const uint64_t epoch_tsc = __atomic_load_n(&r.epoch_tsc, __ATOMIC_RELAXED);
  if (epoch_tsc == ~uint64_t{0}) return;  // nothing announced yet
  uint64_t epoch = epoch_tsc >> format::kTscLowBits;
  for (uint64_t i = pos; i > 0 && pos - i < 16;) {
    const uint64_t rec = __atomic_load_n(&r.slots[--i & r.mask], __ATOMIC_RELAXED);
    if (format::IsEvent(rec)) {
      last = (epoch << format::kTscLowBits) | format::EventTscLow(rec);
      break;
    }
    if (format::ControlKindOf(rec) == static_cast<uint8_t>(format::ControlKind::kEpoch)) {
      const uint64_t delta = format::EpochDelta(rec);
      if (delta == format::kEpochDeltaMax || delta > format::EpochValue(rec)) return;
      epoch = format::EpochValue(rec) - delta;
    }
  }
  last = std::max(last, st.filtered_seen_tsc);
  if (last == 0 || last > now_tsc) return;
  const uint64_t quiet_ns = ToNs(d, now_tsc - last);
  uint64_t smallest = ~uint64_t{0};
  for (const Watch& w : c.stall) smallest = std::min(smallest, w.threshold_ns);
  if (quiet_ns < smallest) return;
  // Threads name themselves when they like: look at the name once per quiet period.
  if (st.name_read_at != st.stall_pos + 1) {
    st.name_read_at = st.stall_pos + 1;
    st.name = RingName(r);
    st.stall_watch = -1;
    for (size_t w = 0; w < c.stall.size() && st.stall_watch < 0; ++w) {
      if (fnmatch(c.stall[w].pattern.c_str(), st.name.c_str(), 0) == 0) st.stall_watch = static_cast<int>(w);
    }
  }
  if (st.stall_watch < 0) {
    st.stall_seen = true;
    return;
  }
  const Watch& w = c.stall[static_cast<size_t>(st.stall_watch)];
  if (quiet_ns < w.threshold_ns) return;
  if (__atomic_load_n(&r.pos, __ATOMIC_ACQUIRE) != pos) return;  // it moved meanwhile
  st.stall_seen = true;  // one verdict per quiet period
  bool busy;
  if (r.scopes_used.load(std::memory_order_relaxed) != 0) {
    busy = r.scope_depth.load(std::memory_order_acquire) > 0;  // outside every scope = idle
  } else {
    busy = d.idle.empty() || d.idle.count(InnermostOpen(r, pos)) == 0;
  }
  if (!busy) return;
  Trigger t = ExplicitTrigger("");
  t.kind = Detector::kStall;
  t.detector = kDetectorNames[static_cast<size_t>(Detector::kStall)];
  t.tid = r.tid;
  t.tsc = now_tsc;
  t.measured_ns = quiet_ns;
  t.threshold_ns = w.threshold_ns;
  t.subject = st.name;
  t.reason = "stall: thread " + st.name + " (" + std::to_string(r.tid) + ") has written no trace point for " +
             Ms(quiet_ns) + " (threshold " + Ms(w.threshold_ns) + ")";
  Fire(std::move(t));
}

void FireScope(Detectors& d, Ring& r, uint32_t id, uint64_t start, uint64_t measured_ticks, bool open,
               uint64_t now_tsc) {
  std::string name;
  {
    std::lock_guard<std::mutex> lock(g_scope_mutex);
    if (g_scope_names && id < g_scope_names->size()) name = (*g_scope_names)[id];
  }
  Trigger t = ExplicitTrigger("");
  t.kind = Detector::kSlowScope;
  t.detector = kDetectorNames[static_cast<size_t>(Detector::kSlowScope)];
  t.tid = r.tid;
  t.tsc = open ? now_tsc : start + measured_ticks;
  t.measured_ns = ToNs(d, measured_ticks);
  t.threshold_ns = g_scope_threshold_ns[id].load();
  t.subject = name;
  t.reason = "slow scope: '" + name + "' on thread " + std::to_string(r.tid) + (open ? " has run for " : " took ") +
             Ms(t.measured_ns) + " (threshold " + Ms(t.threshold_ns) + ")";
  Fire(std::move(t));
}

void CheckScopes(Detectors& d, Ring& r, ThreadState& st, uint64_t now_tsc) {
  const uint32_t depth = std::min(r.scope_depth.load(std::memory_order_acquire), kMaxWatchedScopes);
  for (uint32_t i = 0; i < depth; ++i) {
    const uint32_t id = r.scope_id[i].load(std::memory_order_relaxed);
    const uint64_t start = r.scope_start[i].load(std::memory_order_relaxed);
    if (id >= kMaxScopes || start == 0 || start == st.fired_scope[i] || start > now_tsc) continue;
    const uint64_t thr = g_scope_threshold_ns[id].load(std::memory_order_relaxed);
    if (thr == 0 || ToNs(d, now_tsc - start) < thr) continue;
    if (r.scope_start[i].load(std::memory_order_acquire) != start) continue;  // replaced meanwhile
    st.fired_scope[i] = start;
    FireScope(d, r, id, start, now_tsc - start, true, now_tsc);
  }
  const uint64_t late_start = r.late_scope_start.exchange(0, std::memory_order_acquire);
  if (late_start != 0) {
    bool seen = false;
    for (uint64_t f : st.fired_scope) seen = seen || f == late_start;
    const uint64_t end = r.late_scope_end.load(std::memory_order_relaxed);
    if (!seen && end > late_start) FireScope(d, r, r.late_scope_id.load(std::memory_order_relaxed), late_start, end - late_start, false, now_tsc);
  }
}

void FireCall(Detectors& d, Ring& r, const OpenCall& c, uint64_t ticks, bool open) {
  const CallWatch& w = d.calls[c.key];
  Trigger t = ExplicitTrigger("");
  t.kind = Detector::kSlowCall;
  t.detector = kDetectorNames[static_cast<size_t>(Detector::kSlowCall)];
  t.tid = r.tid;
  t.tsc = c.tsc + ticks;
  t.measured_ns = ToNs(d, ticks);
  t.threshold_ns = w.threshold_ns;
  t.subject = w.name;
  t.reason = "slow call: " + w.name + " on thread " + std::to_string(r.tid) + (open ? " has run for " : " took ") +
             Ms(t.measured_ns) + " (threshold " + Ms(w.threshold_ns) + ")";
  Fire(std::move(t));
}

// Follows the ring from where the last tick stopped, keeping a stack of the
// watched functions' open calls only.
void ScanCalls(Detectors& d, Ring& r, ThreadState& st, uint64_t now_tsc) {
  using namespace format;
  const uint64_t pos = __atomic_load_n(&r.pos, __ATOMIC_ACQUIRE);
  const uint64_t margin = 2 * kMaxSlotsPerPublish;
  const uint64_t oldest = pos > r.capacity - margin ? pos - (r.capacity - margin) : 0;
  if (!st.scanning || st.scan_pos < oldest) {  // first look, or the writer lapped us: start over
    st.scanning = true;
    st.scan_pos = oldest;
    st.state = format::RecordState();
    st.reading = 0;
    st.state.Prime(pos - oldest, [&](uint64_t i) { return __atomic_load_n(&r.slots[(oldest + i) & r.mask], __ATOMIC_RELAXED); });
    st.open.clear();
  }
  const uint64_t from = st.scan_pos;
  for (uint64_t i = from; i < pos; ++i) {
    const uint64_t rec = __atomic_load_n(&r.slots[i & r.mask], __ATOMIC_RELAXED);
    uint64_t tsc = 0, key = 0;
    bool exit = false;
    if (IsUntimed(rec)) {
      // Fast clock: timed by the reading before it (a lower bound, at most a
      // group of records early; thresholds are milliseconds).
      if (st.reading == 0) continue;
      key = ControlPayload(rec);
      tsc = st.reading;
      exit = IsUntimedExit(rec);
    } else if (!IsEvent(rec)) {
      switch (static_cast<ControlKind>(ControlKindOf(rec))) {
        case ControlKind::kEpoch:
        case ControlKind::kFnBase: st.state.Apply(rec); break;
        case ControlKind::kResume: st.open.clear(); break;
        case ControlKind::kUnwindTo: {
          // Frames above the innermost watched call containing the call site were left.
          const uint64_t site = ControlPayload(rec);
          size_t keep = 0;
          for (size_t k = st.open.size(); k-- > 0;) {
            const auto it = d.calls.find(st.open[k].key);
            if (it != d.calls.end() && site >= it->first && site < it->first + std::max<uint64_t>(it->second.size, 1)) {
              keep = k + 1;
              break;
            }
          }
          st.open.resize(keep);
          break;
        }
        default: break;
      }
      continue;
    } else {
      if (!st.state.Decode(rec, &tsc, &key)) continue;
      st.reading = tsc;
      exit = IsExit(rec);
    }
    const uint32_t b = FilterBit(key & kKeyLowMask);
    if ((d.call_filter[b >> 6] & (uint64_t{1} << (b & 63))) == 0) continue;
    const auto it = d.calls.find(key);
    if (it == d.calls.end()) continue;
    if (!exit) {
      if (st.open.size() < 64) st.open.push_back({key, tsc, false});
      continue;
    }
    for (size_t k = st.open.size(); k-- > 0;) {
      if (st.open[k].key != key) continue;
      const OpenCall c = st.open[k];
      st.open.resize(k);
      if (!c.fired && tsc > c.tsc && ToNs(d, tsc - c.tsc) >= it->second.threshold_ns) FireCall(d, r, c, tsc - c.tsc, false);
      break;
    }
  }
  // What we read is trustworthy only if the writer did not lap it meanwhile.
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t pos2 = __atomic_load_n(&r.pos, __ATOMIC_RELAXED);
  if (pos2 + margin > from + r.capacity) {
    st.scanning = false;
    return;
  }
  st.scan_pos = pos;
  for (OpenCall& c : st.open) {
    if (c.fired || now_tsc <= c.tsc || ToNs(d, now_tsc - c.tsc) < d.calls[c.key].threshold_ns) continue;
    c.fired = true;
    FireCall(d, r, c, now_tsc - c.tsc, true);
  }
}

}  // namespace

bool DetectorsConfigured() {
  const Config& c = R().config;
  return !c.stall.empty() || !c.slow_scope.empty() || !c.slow_call.empty();
}

uint64_t DetectorTick() {
  Detectors& d = D();
  Runtime& rt = R();
  const Config& c = rt.config;
  const uint64_t now_ns = MonotonicNs();
  const ClockPair now = ReadClockPair();
  const Calibration cal = Calibrate(rt.start_clock, now);
  if (cal.ns > 1000000) d.ticks_per_ns = static_cast<double>(cal.ticks) / static_cast<double>(cal.ns);
  if (d.ticks_per_ns <= 0) return 1000000;  // not calibrated yet: look again in 1 ms
  const uint32_t scopes = g_scope_count.load(std::memory_order_acquire);
  for (uint32_t id = 1; id < scopes; ++id) {
    const uint64_t ns = g_scope_threshold_ns[id].load(std::memory_order_relaxed);
    g_scope_threshold_ticks[id].store(static_cast<uint64_t>(static_cast<double>(ns) * d.ticks_per_ns), std::memory_order_relaxed);
  }
  if ((!c.slow_call.empty() || !c.stall_idle.empty()) && now_ns - d.modules_checked_ns > 1000000000ull) {
    d.modules_checked_ns = now_ns;
    const uint64_t gen = ModulesGeneration();
    if (gen != d.modules_gen) {
      d.modules_gen = gen;
      ResolveFunctions(d);
    }
  }
  // Names given by a front-end (a JVM names methods as it loads classes): a
  // cheap count check every tick, so a method is watched from its first call.
  if ((!c.slow_call.empty() || !c.stall_idle.empty()) && KeyNameCount() != d.key_names_seen) MatchKeyNames(d);
  std::unordered_set<Ring*> alive;
  for (uint32_t i = 0; i < rt.registry_size; ++i) {
    Ring* r = rt.registry[i].load(std::memory_order_acquire);
    if (r == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
    alive.insert(r);
    ThreadState& st = d.threads[r];
    if (st.tid != r->tid || st.start_tsc != r->start_tsc) {
      st = ThreadState{};
      st.tid = r->tid;
      st.start_tsc = r->start_tsc;
    }
    const uint64_t now_tsc = __rdtsc();
    if (!c.stall.empty()) CheckStall(d, *r, st, now_tsc);
    if (!c.slow_scope.empty()) CheckScopes(d, *r, st, now_tsc);
    if (!d.calls.empty()) ScanCalls(d, *r, st, now_tsc);
  }
  for (auto it = d.threads.begin(); it != d.threads.end();) it = alive.count(it->first) ? std::next(it) : d.threads.erase(it);
  uint64_t smallest = ~uint64_t{0};
  for (const auto* list : {&c.stall, &c.slow_scope, &c.slow_call}) {
    for (const Watch& w : *list) smallest = std::min(smallest, w.threshold_ns);
  }
  return std::clamp<uint64_t>(smallest / 5, 1000000, 20000000);
}

}  // namespace lookback::rt

using namespace lookback::rt;

extern "C" {

void lb_scope_begin(const char* name) {
  if (name == nullptr) return;
  Ring* r = lb_tls_ring;
  if (r == nullptr) return;
  const uint32_t id = ScopeId(name);
  if (id == 0) return;
  uint64_t tsc;
  if (IsSentinel(r)) {  // the thread's first trace point sets it up
    Record(false, ScopeKey(id));
    r = lb_tls_ring;
    if (r == nullptr || IsSentinel(r)) return;
    tsc = __rdtsc();
  } else {
    tsc = __rdtsc();
    RecordReading(r, false, ScopeKey(id), tsc);
  }
  const uint32_t d = r->scope_depth.load(std::memory_order_relaxed);
  if (d < kMaxWatchedScopes) {
    r->scope_id[d].store(id, std::memory_order_relaxed);
    r->scope_start[d].store(tsc, std::memory_order_relaxed);
  }
  r->scope_depth.store(d + 1, std::memory_order_release);
  if (r->scopes_used.load(std::memory_order_relaxed) == 0) r->scopes_used.store(1, std::memory_order_relaxed);
}

void lb_scope_end(const char* name) {
  if (name == nullptr) return;
  Ring* r = lb_tls_ring;
  if (r == nullptr || IsSentinel(r)) return;
  const uint32_t id = ScopeId(name);
  if (id == 0) return;
  const uint64_t tsc = __rdtsc();
  RecordReading(r, true, ScopeKey(id), tsc);
  uint32_t d = r->scope_depth.load(std::memory_order_relaxed);
  if (d == 0) return;
  --d;
  if (d < kMaxWatchedScopes) {
    const uint32_t sid = r->scope_id[d].load(std::memory_order_relaxed);
    const uint64_t start = r->scope_start[d].load(std::memory_order_relaxed);
    const uint64_t thr = sid < kMaxScopes ? g_scope_threshold_ticks[sid].load(std::memory_order_relaxed) : 0;
    if (thr != 0 && tsc - start > thr) {  // over its objective: tell the control thread, no syscall
      r->late_scope_id.store(sid, std::memory_order_relaxed);
      r->late_scope_end.store(tsc, std::memory_order_relaxed);
      r->late_scope_start.store(start, std::memory_order_release);
    }
    r->scope_start[d].store(0, std::memory_order_relaxed);
  }
  r->scope_depth.store(d, std::memory_order_release);
}

}  // extern "C"
