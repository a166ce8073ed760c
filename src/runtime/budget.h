// The overhead budget (LOOKBACK_BUDGET, `lookback record --budget`, agent
// option budget=): keeps what tracing costs each thread under a share of
// that thread's CPU time, by shedding (no longer recording) the functions
// that cost most for the least information: the most frequent ones, whose
// calls are the shortest.
//
// Estimate. Every kBudgetTickNs the control thread reads, for each live
// ring whose thread has used enough CPU since it was last judged
// (kBudgetFirstCpuNs, then kBudgetMinCpuNs), the records written since then
// (Ring::pos), the calls the filter dropped (Ring::filtered) and the thread's
// CPU time, and prices the records at the cost of one trace point measured
// on this machine, for the clock mode and front-end in use, when the first
// thread is ready to be judged (MeasureTracePoint; a short program never
// pays for it). The calls of functions shed through the clang pass's
// guards are not counted where they run (that would be a store per call,
// most of what such a call costs): they are priced from the rate at which
// the thread made them when they were shed, per second of its own work. The
// estimate is that cost over the CPU time the thread spent on its own work
// (CPU time less the cost).
//
// Shed. When a thread's estimate passes the budget, the control thread reads
// the thread's latest records (at most kBudgetScanRecords), counts them per
// function, and sheds the most frequent (shorter mean duration first among
// equals) until what the thread records fits in two thirds of the budget
// (the calls of functions already shed cost what they cost whatever is shed
// next: they are in the estimate, and info reports them). A shed
// function is filtered where its trace points run: the compiler hooks and
// lb_enter/lb_exit look it up in the run-time filter table (exclude.h), code
// built with the clang pass tests the function's own guard byte
// (pass_guards.h), which also keeps nesting exact. Only a function with too
// few records in the sample to judge is spared; there is no floor of cost, so
// a flat profile sheds many functions. After a shed every thread's next
// window starts from its publication.
//
// History (LOOKBACK_HISTORY, default 2 s of an 8 MiB ring, config.h). Also
// sheds, the same way, while the thread records over two thirds of its
// ring's capacity over that duration per second of its CPU time, down to
// half of it, so the ring holds at least that long with room for the bursts
// of new phases.
//
// Re-evaluate. Once no thread's estimate has been over a quarter of the
// budget for kBudgetCalmNs (doubled after each return, up to 32 times), the
// program has changed phase (the pass's shed calls are priced from a rate that
// cannot change until they come back: while they keep a busy thread's
// estimate over a quarter of the budget, it is not calm): every shed function comes back (its rate now
// cannot be known while it is not recorded), and one that is still hot is
// shed again at its thread's next judgement.
//
// What a dump says: every function shed, when (and when it came back), its
// call rate and mean duration then, and which thread's estimate shed it
// (METADATA budget.*, FORMAT.md), so a reader knows what is missing and that
// its time sits in its callers' self time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lookback::rt {

inline constexpr uint64_t kBudgetTickNs = 10'000'000;
// A thread is first judged once it has used this much CPU (a short program
// is never shed), then each time it has used kBudgetMinCpuNs more: a new
// phase of the program, with hot functions of its own, pays full price for
// that long at most: a new phase of H2 (bench/jvm_workload.sh) records 8 M
// trace points a second until then, and with windows of 25 ms (often 50,
// when the thread was a little short of 25 at a tick of 25 ms) five such
// bursts filled most of a ring. With ticks of 10 ms and windows of 8 ms a
// busy thread is judged at every tick.
inline constexpr uint64_t kBudgetFirstCpuNs = 100'000'000;
inline constexpr uint64_t kBudgetMinCpuNs = 8'000'000;
// A function is shed on a sample's word only with at least this many
// records in it: its share is then known within about a fifth.
inline constexpr uint64_t kBudgetMinSampleRecords = 32;
inline constexpr uint64_t kBudgetScanRecords = 1u << 16;
inline constexpr uint64_t kBudgetCalmNs = 3'000'000'000;
inline constexpr size_t kBudgetMaxShed = 4096;

// One function the budget stopped recording.
struct ShedFunction {
  uint64_t key = 0;
  uint64_t at_ns = 0;        // CLOCK_MONOTONIC when it was shed
  uint64_t until_ns = 0;     // CLOCK_MONOTONIC when it came back (0: still shed)
  uint64_t calls_per_s = 0;  // its calls per second of the thread's CPU time, when it was shed
  uint64_t mean_ns = 0;      // the mean duration of its calls then (0: not measured, untimed records only)
  uint32_t tid = 0;          // the thread whose estimate shed it
  // Not in dumps. Its calls per second of that thread's own work then (CPU
  // time less the estimated cost of tracing: what shedding does not change,
  // where a rate per CPU second measured at full price is several times too
  // low once the thread runs without its cost), and whether code built with
  // a front-end with guards (the clang pass, the JVM agent) has a guard for
  // it: nothing counts those calls, so the estimate prices them at this rate
  // until the function comes back or its guards are all unregistered.
  double calls_per_own_s = 0;
  bool pass_guard = false;
};

bool BudgetOn() __attribute__((no_instrument_function));
// Control thread: judges every traced thread, sheds and brings back; returns
// the CLOCK_MONOTONIC ns at which to call again (0: the budget is off).
uint64_t BudgetTick(uint64_t now_ns) __attribute__((no_instrument_function));
// For dumps (any thread): the METADATA entries (format::metadata::kBudget*).
std::vector<std::pair<std::string, std::string>> BudgetMetadata() __attribute__((no_instrument_function));
// The keys shed now, sorted (the filter table holds them, exclude.cc).
std::vector<uint64_t> ShedKeys() __attribute__((no_instrument_function));

// The cost of one trace point (an entry or an exit) on this machine for this
// process's clock mode, through lb_enter/lb_exit (`managed`: a managed
// runtime's probes) or the compiler hooks: recorded, and dropped by the
// filter table (a shed or excluded function's call through the hooks still
// costs the call); and a shed function's trace point in code built with the
// clang pass (its guarded hooks' shed path: a byte load and a branch at
// entry, a test of the kept bit at the exit). runtime.cc.
struct TracePointCost {
  double recorded_ns = 10;
  double filtered_ns = 2;
  double pass_shed_ns = 0.2;
};
TracePointCost MeasureTracePoint(bool managed) __attribute__((no_instrument_function));

}  // namespace lookback::rt
