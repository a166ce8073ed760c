// Where the time went: per function calls, inclusive and self time, average
// and longest call, built by a TraceSink from the walker's balanced stream;
// and the difference between two such reports (by name, since addresses
// differ between builds). No I/O: the CLI prints (report, diff), other
// analyses reuse the numbers.
//
// Definitions (docs/analyses.md has the long form):
//   calls      activations of the function (every Enter).
//   inclusive  time between Enter and Exit, counted only for outermost
//              activations: a function on the stack several times (recursion,
//              direct or through others) is not counted twice.
//   self       inclusive minus the inclusive time of the direct callees; sums
//              to the thread's traced time over all functions.
//   avg        inclusive / outermost activations (= calls without recursion).
//   max        the longest single activation.
//   share      of the traced thread time: the sum, over the selected threads,
//              of the span from each thread's first event to its last.
//   cpu, wait  the part of self (or inclusive) time the thread was on CPU,
//              and the rest, blocked or waiting for a core (model/cpu_time.h;
//              calls of waiting functions are all wait, waiting.h). Without
//              CPU readings for a thread only the waiting functions' time is
//              known as waiting.
// Threads that only waited, and a JVM's housekeeping threads, are not the
// story: unless ReportOptions::all_threads they are left out of the rows and
// listed in Report::set_aside instead.
// Frames cut by the window or the dump (kSliceStartCut, kSliceOpen) or whose
// exit was repaired (kSliceUnwound) count with their clipped durations; rows
// say how many of their activations were clipped.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/waiting.h"
#include "model/cpu_time.h"
#include "model/walk.h"

namespace lookback::analyses {

struct FunctionStats {
  std::string name;    // symbol, or 0x<key> without a symbolizer
  std::string module;  // file name of the module, "" if unknown
  uint64_t key = 0;    // the function's key in this dump
  uint32_t tid = 0;    // with ReportOptions::per_thread; 0 when threads are merged
  std::string thread;  // the thread's name (per_thread only)
  uint64_t calls = 0;
  uint64_t outer_calls = 0;  // activations not nested in one of the same function
  int64_t inclusive_ns = 0;
  int64_t self_ns = 0;
  int64_t max_ns = 0;
  int64_t self_cpu_ns = 0;       // self time on CPU; self_ns - self_cpu_ns waited
  int64_t inclusive_cpu_ns = 0;  // inclusive time on CPU (outermost activations)
  int64_t self_wait_ns() const { return self_ns - self_cpu_ns; }
  uint64_t clipped = 0;  // activations cut by the window or dump, or repaired
  // Fast clock: the sum over outermost activations of how far their
  // inclusive time may be off (the widths of their entry's and exit's
  // bounds), and the activations whose duration may be off by more than 1 %.
  int64_t inclusive_bound_ns = 0;
  uint64_t uncertain = 0;
  // The inclusive time may be off by more than 1 %: `report` marks it.
  bool Uncertain() const { return inclusive_bound_ns * 100 > inclusive_ns; }

  int64_t avg_ns() const { return outer_calls ? inclusive_ns / static_cast<int64_t>(outer_calls) : 0; }
};

// What the walker had to repair, summed over the threads.
struct RepairCounts {
  uint64_t start_cut = 0;        // frames begun before the window, opened at its start
  uint64_t open = 0;             // still running at the dump (or window end), closed there
  uint64_t unwound = 0;          // missing exits repaired
  uint64_t unmatched_exits = 0;  // exits that matched nothing (dropped)
  uint64_t lost_records = 0;     // overwritten in the ring before the dump
  uint64_t clipped() const { return start_cut + open + unwound; }
  void Add(const model::ThreadSummary& s);
};

// A thread left out of the rows (see above), with what it did.
struct SetAsideThread {
  uint32_t tid = 0;
  std::string name;
  std::string why;          // "housekeeping" or "waited"
  int64_t span_ns = 0;      // traced time
  int64_t cpu_ns = 0;       // of it on CPU
  std::string top;          // its function with the most self time
  int64_t top_self_ns = 0;
};

struct Report {
  std::vector<FunctionStats> functions;  // in no particular order: see SortFunctions
  uint32_t threads = 0;                  // threads with at least one call
  uint64_t calls = 0;                    // all activations
  int64_t thread_time_ns = 0;            // the shares' whole (see above)
  int64_t window_start_ns = 0, window_end_ns = 0;  // CLOCK_MONOTONIC, first event .. last event
  int64_t thread_cpu_ns = 0;             // of thread_time_ns, on CPU
  bool cpu_known = false;                // CPU readings covered every ranked thread
  RepairCounts repairs;
  std::vector<SetAsideThread> set_aside;  // by traced time, longest first
};

struct ReportOptions {
  bool per_thread = false;   // one row per (thread, function) instead of per function
  bool all_threads = false;  // rank every thread, the waiting and housekeeping ones too
  std::vector<std::string> wait_globs;  // more waiting functions (--wait)
};

// Feed it to model::Walk (or drive it by hand), then Take() the report.
// Memory: one entry per distinct function (per thread with per_thread) plus
// the call depth.
class ReportBuilder : public model::TraceSink {
 public:
  explicit ReportBuilder(ReportOptions options = {}) : options_(options) {}

  Status Begin(const model::ExportContext& ctx) override;
  void BeginThread(const format::ThreadInfo& t) override;
  void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void EventBound(int64_t lo_ns, int64_t hi_ns) override { next_bound_ = hi_ns - lo_ns; }
  void EndThread(const model::ThreadSummary& summary) override;
  Status End() override;

  Report Take() { return std::move(report_); }

 private:
  struct Acc {
    uint64_t calls = 0, outer_calls = 0, clipped = 0, uncertain = 0;
    int64_t inclusive = 0, self = 0, max = 0, inclusive_bound = 0;
    int64_t self_cpu = 0, inclusive_cpu = 0;
    uint32_t active = 0;  // activations of this function on the stack now
    int8_t waits = -1;    // a waiting function (waiting.h): 1, 0, or -1 not looked up yet
  };
  struct Frame {
    uint64_t key;
    int64_t start;
    int64_t children = 0;  // inclusive time of the direct callees
    int64_t bound = 0;     // width of the entry's bound (fast clock)
    Acc* acc;
    bool outermost;
    bool clipped;
  };
  void Flush(std::unordered_map<uint64_t, Acc>& accs, uint32_t tid, const std::string& thread);
  void Rank(uint32_t tid, const std::string& name, std::unordered_map<uint64_t, Acc>& accs, int64_t first, int64_t last,
            int64_t cpu, bool cpu_known);
  struct Aside {
    SetAsideThread info;
    int64_t first, last;
    bool cpu_known;
    std::unordered_map<uint64_t, Acc> accs;
  };
  std::vector<Aside> aside_;  // set aside unless no thread is ranked (End)

  ReportOptions options_;
  const model::ExportContext* ctx_ = nullptr;
  Report report_;
  std::unordered_map<uint64_t, Acc> thread_accs_;  // the thread being walked
  std::unordered_map<uint64_t, Acc> all_accs_;     // merged threads (unless per_thread)
  std::vector<Frame> stack_;
  uint32_t tid_ = 0;
  std::string thread_name_;
  int64_t thread_first_ = 0, thread_last_ = 0;
  bool thread_seen_ = false;
  int64_t next_bound_ = 0;  // from EventBound, for the next Enter or Exit
  model::WaitTracker waiting_;  // the thread being walked
  model::WaitFunctions waits_;
  bool jvm_ = false;
};

// Walks `dump` (model::Walk with `walk`'s thread, window and progress) into
// a Report. The error is the walker's.
Status ReportDump(const format::Dump& dump, symbolize::Symbolizer& symbols, const model::WalkOptions& walk,
                  const ReportOptions& options, Report* out);

// ---- sorting ----------------------------------------------------------------

enum class SortKey { kSelf, kInclusive, kCalls, kMax, kAvg, kName, kCpu, kWait };
// "self", "inclusive", "calls", "max", "avg", "name", "cpu" (self time on
// CPU), "wait" (self time waiting); false if none of them.
bool ParseSortKey(const std::string& text, SortKey* key);
// Largest first (name: alphabetical); ties broken by name, then thread.
void SortFunctions(std::vector<FunctionStats>* functions, SortKey key);

// ---- diff -------------------------------------------------------------------

// One function (by name) in two reports; a side where it is missing is zero.
struct FunctionDiff {
  std::string name;
  bool in_a = false, in_b = false;
  uint64_t calls_a = 0, calls_b = 0;
  int64_t self_a = 0, self_b = 0;
  int64_t inclusive_a = 0, inclusive_b = 0;
  int64_t avg_a = 0, avg_b = 0;  // inclusive per outermost call
  int64_t self_cpu_a = 0, self_cpu_b = 0;  // self time on CPU

  int64_t self_cpu_delta() const { return self_cpu_b - self_cpu_a; }
  int64_t self_delta() const { return self_b - self_a; }
  int64_t inclusive_delta() const { return inclusive_b - inclusive_a; }
  int64_t avg_delta() const { return avg_b - avg_a; }
  // (b - a) / a; +inf for a function new in b (a == 0 < b), 0 when both are 0.
  static double Relative(int64_t a, int64_t b);
};

enum class DiffSortKey { kSelf, kInclusive, kAvg, kCalls, kCpu };
// "self", "inclusive", "avg", "calls", "cpu"; false if none of them.
bool ParseDiffSortKey(const std::string& text, DiffSortKey* key);

// Functions of both reports matched by name (rows of the same name, e.g. one
// per thread or per module, are summed), ordered by the absolute change of
// `key`, largest first; ties by name.
std::vector<FunctionDiff> DiffReports(const Report& a, const Report& b, DiffSortKey key = DiffSortKey::kSelf);

}  // namespace lookback::analyses
