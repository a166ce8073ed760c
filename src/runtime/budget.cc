// The overhead budget: estimate, shed, bring back (budget.h).
#include "runtime/budget.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "format/format.h"
#include "lookback/lookback.h"
#include "runtime/cpu_log.h"
#include "runtime/exclude.h"
#include "runtime/pass_guards.h"
#include "runtime/runtime.h"

namespace lookback::rt {

std::atomic<void (*)()> g_shed_listener{nullptr};  // lb_set_shed_listener

namespace {

// A JVM probe's call from compiled Java code into lb_enter: what it adds to
// lb_enter's own cost, which MeasureTracePoint measures. Hubble's Listing 1
// in Java costs 9.8 ns per trace point where the native floor hook costs
// 9.2 on the same machine, with or without critical natives
// (docs/performance.md, "The JVM"): the call from Java adds about what a
// native hook call costs, so a little more than nothing.
constexpr double kJvmProbeCallNs = 1.0;

struct ThreadState {
  const Ring* ring = nullptr;
  uint64_t start_tsc = 0;   // with ring: the same thread's ring, not a reused mapping
  uint64_t pos = 0;         // at the last judgement
  uint64_t filtered = 0;
  uint64_t cpu_ns = 0;
  uint64_t mono_ns = 0;
  uint32_t estimate_bp = 0;  // the latest estimate, basis points of CPU time
  uint64_t tp_per_s = 0;     // trace points per second of CPU time then
  uint64_t filtered_per_s = 0;  // calls the filter dropped, per second of CPU time then
  bool seen = false;
  bool judged = false;       // estimate_bp and the rates are set

  // The next window starts here.
  void StartWindow(uint64_t at_pos, uint64_t at_filtered, uint64_t at_cpu_ns, uint64_t at_mono_ns) {
    pos = at_pos;
    filtered = at_filtered;
    cpu_ns = at_cpu_ns;
    mono_ns = at_mono_ns;
  }
};

// BringBack marks what comes back with this until the publication's time is known.
constexpr uint64_t kUntilPending = ~uint64_t{0};

struct Budget {
  std::mutex mutex;  // guards everything below: the control thread writes, dumps read
  bool measured = false;
  TracePointCost cost;
  std::unordered_map<uint32_t, ThreadState> threads;
  std::vector<ShedFunction> history;  // every shed, in order; until_ns set when it came back
  // Shed from the start because an earlier run of the program shed them
  // (lb_shed_remembered: the JVM agent's shed memory): never in `shed` (the
  // front-end gave them no trace points), never brought back, tid 0 in dumps.
  std::vector<ShedFunction> remembered;
  uint64_t judgements = 0;            // threads judged, over the process's life (lb_budget_judgements)
  std::vector<uint64_t> shed;         // sorted: what is shed now
  uint64_t calm_since_ns = 0;         // every thread under a quarter of the budget since (0: not calm)
  uint32_t returns = 0;               // times BringBack ran: each doubles the calm it waits for
  uint64_t guards_gone_seen = 0;      // PassGuardUnregistrations() when last looked at
};

Budget& B() {
  static Budget* b = new Budget;  // never destroyed: dumps at exit read it
  return *b;
}


struct KeyCount {
  uint64_t records = 0;  // entries and exits
  uint64_t timed = 0;    // calls whose duration was measured
  uint64_t ticks = 0;    // their total duration
};

// Counts the ring's latest records per function, and measures the calls
// whose entry and exit both carry a time (EVENTs). Keys come from the base
// slots as the window's FN_BASE records announce them (a sync re-announces
// every slot at least every SyncInterval records, well inside the window);
// EVENTs before a slot's first announcement are skipped. The owner keeps
// writing meanwhile: the copy is of relaxed loads, and whatever it may have
// overwritten is dropped before counting. (Ring::base is the owner's alone:
// reading it here would race with its plain stores.)
uint64_t CountRecent(const Ring& r, std::unordered_map<uint64_t, KeyCount>* out) {
  const uint64_t end = __atomic_load_n(&r.pos, __ATOMIC_ACQUIRE);
  const uint64_t n = std::min<uint64_t>({end, kBudgetScanRecords, r.capacity / 2});
  std::vector<uint64_t> rec(n);
  for (uint64_t i = 0; i < n; ++i) rec[i] = __atomic_load_n(&r.slots[(end - n + i) & r.mask], __ATOMIC_RELAXED);
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t now = __atomic_load_n(&r.pos, __ATOMIC_RELAXED);
  // Indexes below now - capacity + margin may hold newer records than the ones copied.
  const uint64_t safe_from = now + format::kMaxSlotsPerPublish > r.capacity ? now + format::kMaxSlotsPerPublish - r.capacity : 0;
  const uint64_t skip = safe_from > end - n ? std::min(n, safe_from - (end - n)) : 0;

  bool known[format::kBaseSlots] = {};
  uint64_t base[format::kBaseSlots] = {};
  struct Open {
    uint64_t key;
    uint64_t tsc_low;
    bool timed;
  };
  std::vector<Open> stack;
  uint64_t counted = 0;
  for (uint64_t i = skip; i < n; ++i) {
    const uint64_t x = rec[i];
    uint64_t key;
    bool exit, timed = false;
    uint64_t tsc_low = 0;
    if (format::IsEvent(x)) {
      const unsigned s = format::EventSlot(x);
      if (!known[s]) {
        stack.clear();
        continue;
      }
      key = base[s] << 32 | format::EventKeyLow(x);
      exit = format::IsExit(x);
      timed = true;
      tsc_low = format::EventTscLow(x);
    } else if (format::IsUntimed(x)) {
      key = format::ControlPayload(x);
      exit = format::IsUntimedExit(x);
    } else {
      const auto kind = static_cast<format::ControlKind>(format::ControlKindOf(x));
      if (kind == format::ControlKind::kFnBase) {
        base[format::FnBaseSlot(x)] = format::FnBaseValue(x);
        known[format::FnBaseSlot(x)] = true;
      } else if (kind == format::ControlKind::kResume || kind == format::ControlKind::kUnwindTo) {
        stack.clear();
      }
      continue;
    }
    KeyCount& k = (*out)[key];
    ++k.records;
    ++counted;
    if (!exit) {
      if (stack.size() < 4096) stack.push_back({key, tsc_low, timed});
    } else if (!stack.empty() && stack.back().key == key) {
      if (timed && stack.back().timed) {
        ++k.timed;
        k.ticks += (tsc_low - stack.back().tsc_low) & format::kTscLowMask;
      }
      stack.pop_back();
    } else {
      stack.clear();  // an exit that matches nothing open: start again
    }
  }
  return counted;
}

double TicksPerNs() {
  const ClockPair& s = R().start_clock;
  const ClockPair now = ReadClockPair();
  const double ns = static_cast<double>(now.mono_ns - s.mono_ns);
  return ns > 0 ? static_cast<double>(now.tsc - s.tsc) / ns : 1.0;
}

// What is shed now, for modules registering guards later (SetShedQuery):
// an immutable snapshot, since the query runs under the guard registry's
// lock, which Publish takes (through SetPassGuard) while holding b.mutex.
// The query runs only under that lock, so once Publish has swapped in a new
// snapshot and taken the lock itself (SetShedQuery), no query can still hold
// the old one: it is freed then. (Kept forever, they added up to megabytes an
// hour on a program that changes phase, javac's thousands of shed methods a
// few at a time.)
std::atomic<const std::vector<uint64_t>*> g_shed_snapshot{nullptr};

bool IsShedNow(uint64_t fn) {
  const std::vector<uint64_t>* s = g_shed_snapshot.load(std::memory_order_acquire);
  return s != nullptr && std::binary_search(s->begin(), s->end(), fn);
}

// Sends the shed set where trace points look: the filter table (hooks,
// lb_enter) and the clang pass's guards, set for what was added and cleared
// for what came back since `before`. Returns the keys added that have a
// guard (sorted). Caller holds b.mutex.
//
// A function with a guard is left out of the filter table: its trace points
// test the guard once per invocation, at the entry, and its exits follow
// that decision (the pass keeps it in a register, the JVM's rewritten
// methods in a local). The table is read at every record instead, so with a
// guarded key in it a frame entered just before the shed lost its exit (the
// JVM's enter passed the guard and recorded, its exit reached lb_exit after
// the table had changed), and the decoder closed it where its caller moved
// on, milliseconds later.
std::vector<uint64_t> Publish(const Budget& b, const std::vector<uint64_t>& before) {
  std::vector<uint64_t> filter;
  filter.reserve(b.shed.size());
  for (uint64_t k : b.shed) {
    if (!PassGuardRegistered(k)) filter.push_back(k);
  }
  SetShedFilter(filter);
  const std::vector<uint64_t>* old =
      g_shed_snapshot.exchange(new std::vector<uint64_t>(b.shed), std::memory_order_acq_rel);
  SetShedQuery(&IsShedNow);  // takes the registry's lock: no query is reading `old` past this
  delete old;
  std::vector<uint64_t> guarded;
  for (uint64_t k : b.shed) {
    if (!std::binary_search(before.begin(), before.end(), k) && SetPassGuard(k, true)) guarded.push_back(k);
  }
  for (uint64_t k : before) {
    if (!std::binary_search(b.shed.begin(), b.shed.end(), k)) SetPassGuard(k, false);
  }
  return guarded;
}

// Sheds the functions of `r` that cost most until what the thread records
// would fit in two thirds of the budget. `excess_ns` is what its records
// cost over that target per second of its CPU time.
//
// The shares come from a sample of the ring: a function with fewer than
// kBudgetMinSampleRecords records in it is not judged by this sample (its
// share is noise); if more must go, the next judgement, measured with the
// others gone, sees it better. With `keep_one` (the history floor) the
// last function the sample shows recording is not shed: once a loop's
// callees are shed its caller may record the whole rate, and shedding it
// would leave the ring nothing newer than the shed. Caller holds b.mutex.
void ShedFrom(Budget& b, const Ring& r, uint32_t tid, double excess_ns, bool keep_one, uint64_t tp_per_s,
              double own_share, uint64_t now_ns, double ticks_per_ns) {
  std::unordered_map<uint64_t, KeyCount> counts;
  const uint64_t counted = CountRecent(r, &counts);
  if (counted == 0) return;
  struct Candidate {
    uint64_t key;
    KeyCount c;
  };
  // Shares are of the records of functions not shed: the sample reaches
  // back before the latest sheds, and the window's rate is of what is left.
  // Against the whole sample, a caller left alone once its callees went
  // looked a few percent of the rate it had, and was shed on that word.
  std::vector<Candidate> order;
  order.reserve(counts.size());
  uint64_t live = 0;
  for (const auto& [key, c] : counts) {
    if (std::binary_search(b.shed.begin(), b.shed.end(), key)) continue;
    order.push_back({key, c});
    live += c.records;
  }
  if (order.empty()) return;  // else live > 0: every key counted has a record
  auto mean_ticks = [](const KeyCount& c) { return c.timed ? c.ticks / c.timed : ~uint64_t{0}; };
  std::sort(order.begin(), order.end(), [&](const Candidate& a, const Candidate& z) {
    if (a.c.records != z.c.records) return a.c.records > z.c.records;
    if (mean_ticks(a.c) != mean_ticks(z.c)) return mean_ticks(a.c) < mean_ticks(z.c);
    return a.key < z.key;
  });
  double saved = 0;
  uint64_t remaining = live;  // records of functions neither shed nor being shed
  std::vector<uint64_t> added;
  for (const Candidate& cand : order) {
    if (saved >= excess_ns || b.shed.size() + added.size() >= kBudgetMaxShed) break;
    const double share = static_cast<double>(cand.c.records) / static_cast<double>(live);
    const double rate = share * static_cast<double>(tp_per_s);  // its records per CPU second
    // The candidates are in falling order: none after one too rare to judge
    // is judged. There is no floor of cost besides: a flat profile (javac's
    // thousands of methods at under 1 % of the calls each) is brought under
    // the budget only by shedding many functions that each cost little,
    // and a floor of a twentieth of the budget left javac's main thread
    // at 23 % (docs/performance.md, "A flat profile").
    if (cand.c.records < kBudgetMinSampleRecords) break;
    if (keep_one && remaining == cand.c.records) break;
    remaining -= cand.c.records;
    saved += rate * b.cost.recorded_ns;
    added.push_back(cand.key);
    ShedFunction f;
    f.key = cand.key;
    f.at_ns = now_ns;
    f.calls_per_s = static_cast<uint64_t>(rate / 2);
    f.calls_per_own_s = rate / 2 / own_share;
    f.mean_ns = cand.c.timed ? static_cast<uint64_t>(static_cast<double>(cand.c.ticks) / cand.c.timed / ticks_per_ns) : 0;
    f.tid = tid;
    b.history.push_back(f);
  }
  b.shed.insert(b.shed.end(), added.begin(), added.end());
  std::sort(b.shed.begin(), b.shed.end());
}

// Brings back every function shed before this tick (history entries before
// `shed_this_tick`): the program calmed down, and what a function costs now
// cannot be known while it is not recorded. One that is still hot is shed
// again at the next judgement of its thread. What this same tick shed (the
// history floor sheds for a thread's ring while its CPU share is calm) stays
// shed: brought back at once it would have come back before it was shed
// (until_ns before at_ns), a line every reader rejects. Caller holds b.mutex.
void BringBack(Budget& b, size_t shed_this_tick) {
  std::vector<uint64_t> still;
  for (size_t i = 0; i < b.history.size(); ++i) {
    ShedFunction& f = b.history[i];
    if (f.until_ns != 0) continue;
    if (i < shed_this_tick) {
      f.until_ns = kUntilPending;
    } else {
      still.push_back(f.key);
    }
  }
  std::sort(still.begin(), still.end());
  b.shed = std::move(still);
  ++b.returns;
}

// Times the trace point in use (MeasureTracePoint), once, when the first
// thread has used enough CPU time to be judged: a program whose threads never
// do (a compiler run by a build, a short JVM) never pays for it, 3-4 ms of
// the control thread's CPU at start where every core is busy starting the
// program (docs/performance.md, "The overhead budget").
void MeasureCosts(Budget& b) {
  // The JVM agent notes itself when it rewrites its first class (natives.cc).
  bool managed = false;
  for (const auto& [k, v] : Notes()) managed = managed || k == "jvm";
  TracePointCost cost = MeasureTracePoint(managed);
  if (managed) {
    cost.recorded_ns += kJvmProbeCallNs;
    cost.filtered_ns += kJvmProbeCallNs;
  }
  std::lock_guard<std::mutex> lock(b.mutex);
  b.cost = cost;
  b.measured = true;
}

}  // namespace

bool BudgetOn() { return R().config.budget_bp != 0; }

uint64_t BudgetTick(uint64_t now_ns) {
  if (!BudgetOn()) return 0;
  Budget& b = B();
  const double budget = R().config.budget_bp / 10000.0;
  const uint64_t history_ns = R().config.history_ns;
  bool measure = false;  // a thread is ready for its first judgement, and the costs are not known yet
  const double ticks_per_ns = TicksPerNs();
  bool changed = false;
  double worst = 0;
  {
    std::lock_guard<std::mutex> control(ControlMutex());  // rings stay mapped while we read them
    std::lock_guard<std::mutex> lock(b.mutex);
    const std::vector<uint64_t> before = b.shed;
    const size_t history_before = b.history.size();
    // Per thread, the calls per second of its own work of what it shed
    // through the clang pass's guards and is still shed.
    std::unordered_map<uint32_t, double> pass_shed_rate;
    // A guarded function whose guards were all taken back has no trace
    // points left (a module unloaded; a Java method the agent retransformed
    // without its probes): its calls cost nothing now.
    if (const uint64_t gone = PassGuardUnregistrations(); gone != b.guards_gone_seen) {
      b.guards_gone_seen = gone;
      for (ShedFunction& f : b.history) {
        if (f.pass_guard && f.until_ns == 0 && !PassGuardRegistered(f.key)) f.pass_guard = false;
      }
    }
    for (const ShedFunction& f : b.history) {
      if (f.pass_guard && f.until_ns == 0) pass_shed_rate[f.tid] += f.calls_per_own_s;
    }
    Runtime& rt = R();
    for (uint32_t i = 0; i < rt.registry_size; ++i) {
      const Ring* r = rt.registry[i].load(std::memory_order_acquire);
      if (r == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
      ThreadState& st = b.threads[r->tid];
      bool ok = false;
      const uint64_t cpu = ThreadCpuNsOf(r->tid, &ok);
      const uint64_t pos = __atomic_load_n(&r->pos, __ATOMIC_ACQUIRE);
      const uint64_t filtered = __atomic_load_n(&r->filtered, __ATOMIC_RELAXED);
      if (!ok) continue;
      if (!st.seen || st.ring != r || st.start_tsc != r->start_tsc) {
        st = ThreadState{};
        st.ring = r;
        st.start_tsc = r->start_tsc;
        st.StartWindow(pos, filtered, cpu, now_ns);
        st.seen = true;
        continue;
      }
      const uint64_t dcpu = cpu - st.cpu_ns;
      if (dcpu < (st.judged ? kBudgetMinCpuNs : kBudgetFirstCpuNs)) continue;  // keep the baseline until there is enough to judge
      if (!b.measured) {  // judged right after the timing, on the same baseline
        measure = true;
        continue;
      }
      const uint64_t dpos = pos - st.pos, dfiltered = filtered - st.filtered;
      // What the ring counted: its records and the filter's dropped calls.
      const double counted = static_cast<double>(dpos) * b.cost.recorded_ns + static_cast<double>(dfiltered) * b.cost.filtered_ns;
      // The calls of functions it shed through the pass's guards, which
      // nothing counts (inline_hooks.cc): at R calls per second of own
      // work, two trace points each at pass_shed_ns, they cost a share
      // 2 R pass_shed_ns of `own`, and own = dcpu - counted - that share.
      // R is the rate when shed: a function called less since is
      // over-priced until the budget calms down and brings it back, one
      // called more under-priced; a thread calling what another thread
      // shed is not priced for it. The price is the guard path timed at
      // start (MeasureTracePoint), which cannot see what keeping the bit
      // costs in the function's registers.
      const auto rate = pass_shed_rate.find(r->tid);
      const double shed_share =
          rate == pass_shed_rate.end() ? 0.0 : 2 * rate->second * b.cost.pass_shed_ns / 1e9;
      const double own = std::max((static_cast<double>(dcpu) - counted) / (1 + shed_share), static_cast<double>(dcpu) / 10);
      const double cost = counted + shed_share * own;
      const double estimate = cost / own;
      const double per_cpu_s = 1e9 / static_cast<double>(dcpu);
      const uint64_t tp_per_s = static_cast<uint64_t>(static_cast<double>(dpos) * per_cpu_s);
      st.filtered_per_s = static_cast<uint64_t>(static_cast<double>(dfiltered) * per_cpu_s);
      // On CPU under a tenth of the time since its window began: as good as
      // idle for calm (below).
      const bool mostly_idle = now_ns > st.mono_ns && dcpu * 10 < now_ns - st.mono_ns;
      st.StartWindow(pos, filtered, cpu, now_ns);
      st.estimate_bp = static_cast<uint32_t>(std::min(estimate * 10000, 1e9));
      st.tp_per_s = tp_per_s;
      st.judged = true;
      ++b.judgements;
      // Calm is judged on the whole estimate, as when those calls were
      // counted: a busy thread whose pass-built shed functions were hot
      // when shed is never calm. Its price is a rate from the time of the
      // shed, which a change of phase does not lower, so such functions stay
      // shed while the thread stays busy (and come back once it idles).
      // Judging calm without it would bring them back every calm period
      // (3 s, doubling) even while they are hot, and on a loaded machine
      // within a second or two of CPU. A thread on CPU under a tenth of the
      // time has idled, as far as calm goes: priced from a rate when shed, a
      // thread polling every 50 ms was judged every 1.3 s of wall time once
      // windows were 8 ms of CPU, each time over a quarter of the budget, and
      // what it shed never came back (BudgetJvm's fold test, fast clock).
      if (!mostly_idle) worst = std::max(worst, estimate);
      // History: a ring of C records holds H seconds of a thread that
      // records at most C / H a second. Per second of its CPU time, which is
      // at most one of wall time, so the ring holds at least H. A thread
      // over two thirds of that rate is held to half of it: a new phase of a
      // program records at full rate until its next judgement (8 ms of CPU
      // at millions of records a second), and a thread held just under the
      // rate itself had no room left for those bursts (H2's ring held 1.4-
      // 1.8 s of 2). A thread recording over a quarter of it is not calm, as
      // one over a quarter of the budget is not.
      double history_excess_ns = 0;
      if (history_ns != 0) {
        const double max_rate = static_cast<double>(r->mask + 1) * 1e9 / static_cast<double>(history_ns);
        if (static_cast<double>(tp_per_s) > max_rate * 2 / 3) {
          history_excess_ns = (static_cast<double>(tp_per_s) - max_rate / 2) * b.cost.recorded_ns;
        }
        if (static_cast<double>(tp_per_s) > max_rate / 4 && !mostly_idle) worst = std::max(worst, budget / 4);
      }
      // Shedding works on what the thread records: the calls of functions
      // already shed still cost their hook call (or JNI call) whatever is
      // shed next, so shedding more to pay for them would only lose
      // information (info reports them; the clang pass's guard and the JVM
      // agent's retransform remove them). Hence the recorded part alone is
      // held to the target, two thirds of the budget, as a share of the
      // thread's whole CPU time: where the calibrated costs add up to more
      // than that time (a tight loop prices calls higher than code around
      // them pays), a share of "own work" would blow up the smallest.
      const double recorded = static_cast<double>(dpos) * b.cost.recorded_ns / static_cast<double>(dcpu);
      const bool over_budget = estimate > budget && recorded > budget * 2 / 3;
      if (over_budget || history_excess_ns > 0) {
        const size_t before = b.shed.size();
        // Over the target, in ns per second of the thread's CPU time.
        const double excess_ns = std::max(over_budget ? (recorded - budget * 2 / 3) * 1e9 : 0.0, history_excess_ns);
        // Over the budget, whatever it takes; for the history alone, never
        // the last function recording.
        ShedFrom(b, *r, r->tid, excess_ns, !over_budget, tp_per_s, own / static_cast<double>(dcpu), now_ns,
                 ticks_per_ns);
        changed = changed || b.shed.size() != before;
      }
    }
    // Threads gone since: forget them.
    for (auto it = b.threads.begin(); it != b.threads.end();) {
      bool ok = false;
      ThreadCpuNsOf(it->first, &ok);
      it = ok ? std::next(it) : b.threads.erase(it);
    }
    // Calm: no thread judged this tick is over a quarter of the budget (an
    // idle thread is not judged: it costs nothing).
    if (worst < budget / 4) {
      if (b.calm_since_ns == 0) b.calm_since_ns = now_ns;
    } else {
      b.calm_since_ns = 0;
    }
    const uint64_t calm_needed = kBudgetCalmNs << std::min<uint32_t>(b.returns, 5);
    if (b.calm_since_ns != 0 && now_ns - b.calm_since_ns >= calm_needed && !b.shed.empty()) {
      BringBack(b, history_before);
      changed = true;
    }
    if (changed) {
      // The times in the history are when the trace points saw the change:
      // a function comes back no later than its until_ns (taken before the
      // publication) and is shed from its at_ns on (taken after it), so a
      // reader may trust that nothing of it lies in between.
      const uint64_t before_ns = MonotonicNs();
      const std::vector<uint64_t> guarded = Publish(b, before);
      const uint64_t after_ns = MonotonicNs();
      for (size_t i = history_before; i < b.history.size(); ++i) {
        b.history[i].at_ns = after_ns;
        b.history[i].pass_guard = std::binary_search(guarded.begin(), guarded.end(), b.history[i].key);
      }
      for (ShedFunction& f : b.history) {
        if (f.until_ns == kUntilPending) f.until_ns = before_ns;
      }
      // Every thread's next judgement measures from here: what it wrote
      // while this tick decided and published (the sampling takes a while,
      // tens of ms in a sanitized build) is at the old set's rate, and would
      // make the next judgement shed what the new set needs no longer.
      for (uint32_t i = 0; i < rt.registry_size; ++i) {
        const Ring* r = rt.registry[i].load(std::memory_order_acquire);
        if (r == nullptr || r->state.load(std::memory_order_acquire) != kRingLive) continue;
        auto it = b.threads.find(r->tid);
        if (it == b.threads.end() || it->second.ring != r) continue;
        bool ok = false;
        const uint64_t cpu = ThreadCpuNsOf(r->tid, &ok);
        if (!ok) continue;
        it->second.pos = __atomic_load_n(&r->pos, __ATOMIC_ACQUIRE);
        it->second.filtered = __atomic_load_n(&r->filtered, __ATOMIC_RELAXED);
        it->second.cpu_ns = cpu;
      }
    }
  }
  // Outside b.mutex: the listener may ask for the keys.
  if (void (*listener)() = g_shed_listener.load(std::memory_order_acquire); changed && listener != nullptr) listener();
  if (measure) {
    MeasureCosts(b);
    return now_ns;  // and judge it at once (the control loop ticks again when this time is past)
  }
  return now_ns + kBudgetTickNs;
}

std::vector<uint64_t> ShedKeys() {
  Budget& b = B();
  std::lock_guard<std::mutex> lock(b.mutex);
  return b.shed;
}

std::vector<std::pair<std::string, std::string>> BudgetMetadata() {
  std::vector<std::pair<std::string, std::string>> m;
  const uint32_t bp = R().config.budget_bp;
  m.emplace_back(format::metadata::kBudget, BudgetText(bp));
  if (bp == 0) return m;
  m.emplace_back(format::metadata::kBudgetHistory, HistoryText(R().config.history_ns));
  Budget& b = B();
  std::lock_guard<std::mutex> lock(b.mutex);
  if (b.measured) {
    m.emplace_back(format::metadata::kBudgetPassShedPs, std::to_string(static_cast<uint64_t>(b.cost.pass_shed_ns * 1000)));
    m.emplace_back(format::metadata::kBudgetCostPs, std::to_string(static_cast<uint64_t>(b.cost.recorded_ns * 1000)) + " " +
                                                        std::to_string(static_cast<uint64_t>(b.cost.filtered_ns * 1000)));
  }
  std::string threads;
  for (const auto& [tid, st] : b.threads) {
    if (!st.judged) continue;
    threads += std::to_string(tid) + " " + std::to_string(st.estimate_bp) + " " + std::to_string(st.tp_per_s) + " " +
               std::to_string(st.filtered_per_s) + "\n";
  }
  if (!threads.empty()) m.emplace_back(format::metadata::kBudgetThreads, threads);
  std::string shed;
  char line[160];
  for (const ShedFunction& f : b.remembered) {
    snprintf(line, sizeof line, "%llx %llu 0 %llu %llu 0\n", static_cast<unsigned long long>(f.key),
             static_cast<unsigned long long>(f.at_ns), static_cast<unsigned long long>(f.calls_per_s),
             static_cast<unsigned long long>(f.mean_ns));
    shed += line;
  }
  for (const ShedFunction& f : b.history) {
    snprintf(line, sizeof line, "%llx %llu %llu %llu %llu %u\n", static_cast<unsigned long long>(f.key),
             static_cast<unsigned long long>(f.at_ns), static_cast<unsigned long long>(f.until_ns),
             static_cast<unsigned long long>(f.calls_per_s), static_cast<unsigned long long>(f.mean_ns), f.tid);
    shed += line;
  }
  if (!shed.empty()) m.emplace_back(format::metadata::kBudgetShed, shed);
  return m;
}

}  // namespace lookback::rt

extern "C" {

size_t lb_shed_keys(uint64_t* out, size_t max) {
  const std::vector<uint64_t> keys = lookback::rt::ShedKeys();
  for (size_t i = 0; i < keys.size() && i < max && out != nullptr; ++i) out[i] = keys[i];
  return keys.size();
}

int lb_budget_on(void) { return lookback::rt::BudgetOn() ? 1 : 0; }

uint64_t lb_budget_judgements(void) {
  lookback::rt::Budget& b = lookback::rt::B();
  std::lock_guard<std::mutex> lock(b.mutex);
  return b.judgements;
}

int lb_shed_remembered(uint64_t key, uint64_t calls_per_s, uint64_t mean_ns) {
  using namespace lookback::rt;
  if (!BudgetOn() || key == 0) return -1;
  ShedFunction f;
  f.key = key;
  f.at_ns = MonotonicNs();
  f.calls_per_s = calls_per_s;
  f.mean_ns = mean_ns;
  Budget& b = B();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.remembered.push_back(f);
  return 0;
}

int lb_shed_figures(uint64_t key, uint64_t* calls_per_s, uint64_t* mean_ns) {
  using namespace lookback::rt;
  Budget& b = B();
  std::lock_guard<std::mutex> lock(b.mutex);
  for (auto it = b.history.rbegin(); it != b.history.rend(); ++it) {
    if (it->key != key || it->until_ns != 0) continue;
    if (calls_per_s != nullptr) *calls_per_s = it->calls_per_s;
    if (mean_ns != nullptr) *mean_ns = it->mean_ns;
    return 0;
  }
  return -1;
}

void lb_set_shed_listener(void (*listener)(void)) {
  lookback::rt::g_shed_listener.store(listener, std::memory_order_release);
}

}  // extern "C"
