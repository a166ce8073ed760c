// From a dump to a balanced stream of slices, the input every exporter gets.
//
// For each selected thread, in time order: Enter/Exit pairs that nest
// properly, whatever happened in the ring:
//   - frames entered before the window (their exit is in the window, their
//     entry was overwritten) are opened at the window start, flagged kStartCut;
//   - frames whose exit never came (exceptions under clang, longjmp) are
//     closed where the trace shows they were abandoned, flagged kUnwound;
//   - frames still running at the snapshot are closed there, flagged kOpen.
// Nothing is invented: every Enter/Exit corresponds to a record, and every
// repair is counted in ThreadSummary. Memory is bounded by the call depth;
// each thread's records are read twice (once to find the frames cut at the
// window start), never held.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "format/reader.h"
#include "model/clock_model.h"
#include "model/decoder.h"

namespace lookback::symbolize {
class Symbolizer;
}

namespace lookback::model {

enum SliceFlag : uint8_t {
  kSliceStartCut = 1,  // on Enter: entered before the window
  kSliceOpen = 2,      // on Exit: still running when the dump was taken (or the window ends)
  kSliceUnwound = 4,   // on Exit: its exit never came; closed when its caller moved on
};

struct ThreadSummary {
  uint32_t tid = 0;
  uint64_t events = 0;           // ENTER/EXIT records decoded
  uint64_t slices = 0;           // Enter/Exit pairs emitted
  uint64_t start_cut = 0;        // frames opened at the window start
  uint64_t unwound = 0;          // missing exits repaired
  uint64_t open = 0;             // frames closed at the snapshot / window end
  uint64_t unmatched_exits = 0;  // exits that matched nothing (dropped)
  uint64_t lost_records = 0;     // overwritten before the dump (the ring wrapped)
  DecodeStats decode;
};

struct ExportContext {
  const format::Dump* dump = nullptr;
  symbolize::Symbolizer* symbols = nullptr;
  ClockModel clock{format::ClockInfo{}};
  int64_t origin_ns = 0;     // CLOCK_MONOTONIC ns of the earliest event exported
  int64_t dump_ns = 0;       // CLOCK_MONOTONIC ns when the dump was taken
  uint64_t total_events = 0; // ENTER/EXIT records in the selected threads (for progress)
  // Per thread (index into dump->threads; empty for threads not selected):
  // the silences of at least kQuietGapNs between two consecutive entries or
  // exits, [from, to) in CLOCK_MONOTONIC ns. Where the CPU readings say a
  // thread was off CPU, it was most likely there (CpuTimeline::Refine).
  std::vector<std::vector<std::pair<int64_t, int64_t>>> quiet;
};
inline constexpr int64_t kQuietGapNs = 50'000;

// Exporters implement this (one file per format under src/exporters/).
// Times are CLOCK_MONOTONIC nanoseconds; subtract ctx.origin_ns for relative.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  // An error ends the walk.
  virtual Status Begin(const ExportContext& ctx) = 0;
  virtual void BeginThread(const format::ThreadInfo& t) = 0;
  virtual void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) = 0;
  virtual void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) = 0;
  // Fast-clock threads: called right before an Enter or Exit whose time is
  // not exact, with the interval [lo_ns, hi_ns] it certainly lies in (its
  // ts_ns is the decoder's placement inside it). Exact times get no call.
  virtual void EventBound(int64_t lo_ns, int64_t hi_ns) {
    (void)lo_ns;
    (void)hi_ns;
  }
  virtual void EndThread(const ThreadSummary& summary) = 0;
  // Flushes and closes.
  virtual Status End() = 0;
};

struct WalkOptions {
  std::string thread;  // tid or name; empty = all threads
  // Keep only [start, end) in CLOCK_MONOTONIC ns; frames crossing an edge
  // are clipped to it (kStartCut / kOpen).
  std::optional<int64_t> window_start_ns, window_end_ns;
  // Called now and then with events done so far (progress bars).
  void (*progress)(void* ctx, uint64_t done, uint64_t total) = nullptr;
  void* progress_ctx = nullptr;
};

struct WalkResult {
  Status status;
  std::vector<ThreadSummary> threads;
};

WalkResult Walk(const format::Dump& dump, symbolize::Symbolizer& symbols, const WalkOptions& options,
                TraceSink& sink);

// Sets options->window_start_ns/window_end_ns from a --window text (see
// ParseWindow), shifted onto the dump's CLOCK_MONOTONIC.
Status ResolveWindow(const format::Dump& dump, const std::string& text, WalkOptions* options);

// Parses "START..END" with units ns/us/ms/s, relative to the dump time when
// signed ("-2s..", "-500ms..-100ms") and to the first event otherwise
// ("0..1.5s"). Either side may be empty. "monotonic:START..END" gives both
// ends in the traced process's own CLOCK_MONOTONIC ns, unshifted (a program
// that noted its clock, such as the JVM agent's STOP_TRACING).
Status ParseWindow(const std::string& text, bool* relative_to_dump, std::optional<int64_t>* start,
                        std::optional<int64_t>* end);

}  // namespace lookback::model
