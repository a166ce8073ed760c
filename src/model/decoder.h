// Decoding a thread's ring window: full timestamps and keys from the 8-byte
// records, then LIFO matching of entries and exits with repair.
//
// Streaming: DecodeThread walks records once (plus a bounded look-ahead for
// the first EPOCH/FN_BASE) and CallMatcher keeps only the open call stack, so
// memory is bounded by call depth, not by the number of events.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "format/reader.h"
#include "format/record_state.h"

namespace lookback::model {

enum class EventKind : uint8_t {
  kEnter,
  kExit,
  kResume,    // tracing resumed after a gap
  kUnwindTo,  // key = a call site; frames above its function were abandoned (tsc 0)
};

struct Event {
  EventKind kind;
  uint64_t tsc;    // full TSC (0 for kResume); in a fast-clock ring, placed within [lo, hi]
  uint64_t key;    // full function key (0 for kResume)
  uint64_t index;  // record index within the window
  // The interval the event certainly lies in: lo == hi == tsc in an exact
  // ring and for a fast-clock ring's readings (FORMAT.md, "Fast clock").
  uint64_t lo;
  uint64_t hi;
};

struct DecodeStats {
  uint64_t records = 0;
  uint64_t events = 0;
  uint64_t undecodable_prefix = 0;  // events whose epoch or base no announcement in the window gives
  uint64_t unknown_records = 0;     // control kinds this reader does not know, or empty slots
  uint64_t backwards = 0;           // events whose timestamp is below the previous one
  uint64_t resumes = 0;
  // Fast-clock rings: events that carried no reading of their own (placed
  // between their readings), and OFFCPU records applied.
  uint64_t untimed = 0;
  uint64_t off_cpu = 0;
};

// How a thread's EVENT timestamps read (from its THREAD section and the
// dump's CLOCK).
struct ClockMode {
  bool fast = false;          // kThreadFastClock: an EVENT's TSC is the latest reading before it
  double ticks_per_ns = 0;    // to apply OFFCPU records (0: ignored, the bounds stay wider)
  uint64_t end_tsc = 0;       // upper bound of the events after the window's last reading
};

// Fast-clock rings: holds the events written since the latest reading until
// the next one, then gives each its bound and places it inside it, evenly
// by order (the readings themselves are exact). At most kMaxPending are
// held (a well-formed ring has a reading every few records; a damaged one
// is bounded by the thread's end instead).
template <class Sink>
class FastClockPlacer {
 public:
  static constexpr size_t kMaxPending = 4096;
  FastClockPlacer(const ClockMode& mode, Sink& sink, DecodeStats& st) : mode_(mode), sink_(sink), st_(st) {}

  // An EVENT: a reading, exact.
  void OnReading(Event e) {
    uint64_t bound = e.tsc;
    if (off_cpu_ns_ != 0) {
      const double ticks = static_cast<double>(off_cpu_ns_) * mode_.ticks_per_ns;
      bound = ticks < static_cast<double>(bound) ? bound - static_cast<uint64_t>(ticks) : 0;
      ++st_.off_cpu;
    }
    off_cpu_ns_ = 0;
    if (have_reading_ && bound > reading_) {
      spacing_ = static_cast<double>(bound - reading_) / static_cast<double>(events_held_ + 1);
    }
    Release(bound);
    have_reading_ = true;
    reading_ = e.tsc;
    e.lo = e.hi = e.tsc;
    sink_(e);
  }
  // An UNTIMED_ENTRY/EXIT: after the latest reading, before the next one.
  // Before the window's first reading its lower bound is unknown (the ring
  // wrapped over its reading): such an event is not decodable.
  // Returns false then.
  bool OnUntimed(Event e) {
    if (!have_reading_) return false;
    e.tsc = reading_;
    Hold(e);
    return true;
  }
  // RESUME, UNWIND_TO: keep their place among the held events.
  void OnMarker(const Event& e) {
    if (held_.empty()) {
      sink_(e);
    } else {
      held_.push_back(e);
    }
  }
  void OnOffCpu(uint64_t ns) { off_cpu_ns_ = ns; }
  // The events after the window's last reading are bounded only by the
  // thread's end (its exit, or the snapshot, which may be milliseconds
  // later): placed at the pace of the last stretch between two readings
  // rather than spread over that whole interval.
  void Finish() {
    tail_ = true;
    Release(mode_.end_tsc);
  }

 private:
  void Hold(const Event& e) {
    held_.push_back(e);
    ++events_held_;
    ++st_.untimed;
    if (events_held_ >= kMaxPending) Release(mode_.end_tsc);
  }
  // Everything held lies in [its reading, upper].
  void Release(uint64_t upper) {
    uint64_t k = 0;
    for (Event& e : held_) {
      if (e.kind == EventKind::kEnter || e.kind == EventKind::kExit) {
        ++k;
        e.lo = e.tsc;
        e.hi = upper > e.tsc ? upper : e.tsc;
        const double span = static_cast<double>(e.hi - e.lo);
        const double share = static_cast<double>(k) / static_cast<double>(events_held_ + 1);
        const double at = tail_ && spacing_ > 0 ? std::min(span * share, spacing_ * static_cast<double>(k)) : span * share;
        e.tsc = e.lo + static_cast<uint64_t>(at);
      }
      sink_(e);
    }
    held_.clear();
    events_held_ = 0;
  }

  const ClockMode& mode_;
  Sink& sink_;
  DecodeStats& st_;
  std::vector<Event> held_;
  uint64_t events_held_ = 0;
  bool have_reading_ = false;
  uint64_t reading_ = 0;
  uint64_t off_cpu_ns_ = 0;
  double spacing_ = 0;  // ticks per event between the last two readings
  bool tail_ = false;
};

// Decodes `n` records of one thread's window (`get(i)` returns record i)
// laid out as `layout`, calling `sink` with every event in order.
template <class Get, class Sink>
DecodeStats DecodeRecords(uint64_t n, format::RecordLayout layout, const ClockMode& mode, Get&& get, Sink&& sink) {
  using namespace format;
  DecodeStats st;
  st.records = n;
  // The state in force before the first announcements (record_state.h).
  RecordState state(layout);
  state.Prime(n, get);
  FastClockPlacer<Sink> placer(mode, sink, st);
  uint64_t last_tsc = 0;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t r = get(i);
    if (IsEvent(r)) {
      uint64_t tsc = 0, key = 0;
      if (!state.Decode(r, &tsc, &key)) {
        ++st.undecodable_prefix;
        continue;
      }
      if (tsc < last_tsc) ++st.backwards;
      last_tsc = tsc;
      ++st.events;
      const Event e{IsExit(r) ? EventKind::kExit : EventKind::kEnter, tsc, key, i, tsc, tsc};
      if (mode.fast) {
        placer.OnReading(e);  // in a fast-clock ring every EVENT is a reading
      } else {
        sink(e);
      }
      continue;
    }
    Event marker{EventKind::kResume, 0, 0, i, 0, 0};
    switch (static_cast<ControlKind>(ControlKindOf(r))) {
      case ControlKind::kEpoch:
      case ControlKind::kFnBase: state.Apply(r); continue;
      case ControlKind::kResume: ++st.resumes; break;
      case ControlKind::kUnwindTo:
        marker.kind = EventKind::kUnwindTo;
        marker.key = ControlPayload(r);
        break;
      case ControlKind::kOffCpu:
        if (mode.fast && mode.ticks_per_ns > 0) placer.OnOffCpu(ControlPayload(r));
        continue;
      case ControlKind::kUntimedEntry:
      case ControlKind::kUntimedExit: {
        if (!mode.fast) {
          ++st.unknown_records;  // only fast-clock rings hold them
          continue;
        }
        const Event e{IsUntimedExit(r) ? EventKind::kExit : EventKind::kEnter, 0, ControlPayload(r), i, 0, 0};
        if (placer.OnUntimed(e)) {
          ++st.events;
        } else {
          ++st.undecodable_prefix;
        }
        continue;
      }
      default: ++st.unknown_records; continue;
    }
    if (mode.fast) {
      placer.OnMarker(marker);
    } else {
      sink(marker);
    }
  }
  if (mode.fast) placer.Finish();
  return st;
}

template <class Get, class Sink>
DecodeStats DecodeRecords(uint64_t n, format::RecordLayout layout, Get&& get, Sink&& sink) {
  return DecodeRecords(n, layout, ClockMode{}, get, sink);
}

inline ClockMode ClockModeOf(const format::Dump& dump, const format::ThreadInfo& t) {
  ClockMode m;
  m.fast = (t.flags & format::kThreadFastClock) != 0;
  if (dump.clock.ns != 0) m.ticks_per_ns = static_cast<double>(dump.clock.ticks) / static_cast<double>(dump.clock.ns);
  m.end_tsc = t.exit_tsc != 0 ? t.exit_tsc : t.snapshot_tsc;
  return m;
}

template <class Sink>
DecodeStats DecodeThread(const format::Dump& dump, const format::ThreadInfo& t, Sink&& sink) {
  return DecodeRecords(t.record_count, dump.layout(), ClockModeOf(dump, t), [&](uint64_t i) { return dump.Record(t, i); },
                       sink);
}

enum FrameFlag : uint8_t {
  kFrameStartCut = 1,  // entered before the window: starts at the window start
  kFrameOpen = 2,      // still running at dump time: ends at the snapshot
  kFrameUnwound = 4,   // its exit never came (exception, longjmp): ended by an outer exit
};

struct Frame {
  uint64_t key;
  uint64_t start_tsc, end_tsc;
  uint32_t depth;  // 0 = outermost frame seen in the window
  uint8_t flags;
};

struct MatchStats {
  uint64_t frames = 0;
  uint64_t start_cut = 0;  // exits whose entry was before the window
  uint64_t unwound = 0;    // frames closed by an outer exit (missing exits repaired)
  uint64_t open = 0;       // frames still open at dump time
};

// Pairs entries and exits (LIFO). Frames come out in order of their end.
// Missing exits (clang skips exit hooks while unwinding an exception; nobody
// gets them on longjmp) are repaired two ways: an UNWIND_TO record names the
// call site of the first entry after the non-local exit, so frames above the
// function containing it are closed right there (this needs `function_of`,
// mapping a code address to its function's key: symbol information); and an
// exit names its function, so frames above it are closed when it arrives.
class CallMatcher {
 public:
  using FunctionOf = uint64_t (*)(void* ctx, uint64_t pc);  // 0 if unknown
  CallMatcher() = default;
  CallMatcher(FunctionOf function_of, void* ctx) : function_of_(function_of), ctx_(ctx) {}

  template <class Emit>
  void OnEvent(const Event& e, Emit&& emit) {
    if (e.kind == EventKind::kUnwindTo) {
      pending_unwind_ = e.key;
      return;
    }
    if (window_start_ == 0 && e.kind != EventKind::kResume) window_start_ = e.tsc;
    if (e.kind == EventKind::kEnter) {
      if (pending_unwind_ != 0) UnwindTo(pending_unwind_, e.tsc, emit);
      pending_unwind_ = 0;
      stack_.push_back({e.key, e.tsc});
      return;
    }
    pending_unwind_ = 0;
    if (e.kind != EventKind::kExit) return;
    size_t at = stack_.size();
    while (at > 0 && stack_[at - 1].key != e.key) --at;
    if (at == 0) {
      // Entered before the window (or entry lost): everything seen so far ran inside it.
      ++stats_.start_cut;
      ++stats_.frames;
      emit(Frame{e.key, window_start_, e.tsc, 0, kFrameStartCut});
      return;
    }
    while (stack_.size() > at) {  // frames whose exits never came
      const Open o = stack_.back();
      stack_.pop_back();
      ++stats_.unwound;
      ++stats_.frames;
      emit(Frame{o.key, o.start_tsc, e.tsc, Depth(stack_.size()), kFrameUnwound});
    }
    const Open o = stack_.back();
    stack_.pop_back();
    ++stats_.frames;
    emit(Frame{o.key, o.start_tsc, e.tsc, Depth(stack_.size()), 0});
  }

  // Closes every frame still open at `end_tsc` (the snapshot time).
  template <class Emit>
  void Finish(uint64_t end_tsc, Emit&& emit) {
    while (!stack_.empty()) {
      const Open o = stack_.back();
      stack_.pop_back();
      ++stats_.open;
      ++stats_.frames;
      emit(Frame{o.key, o.start_tsc, end_tsc, Depth(stack_.size()), kFrameOpen});
    }
  }

  struct Open {
    uint64_t key, start_tsc;
  };
  // Closes the frames above the innermost frame of the function containing `pc`.
  template <class Emit>
  void UnwindTo(uint64_t pc, uint64_t tsc, Emit&& emit) {
    const uint64_t fn = function_of_ ? function_of_(ctx_, pc) : 0;
    if (fn == 0) return;
    size_t at = stack_.size();
    while (at > 0 && stack_[at - 1].key != fn) --at;
    if (at == 0) return;  // its frame is not in the window: leave the stack alone
    while (stack_.size() > at) {
      const Open o = stack_.back();
      stack_.pop_back();
      ++stats_.unwound;
      ++stats_.frames;
      emit(Frame{o.key, o.start_tsc, tsc, Depth(stack_.size()), kFrameUnwound});
    }
  }

  const std::vector<Open>& stack() const { return stack_; }
  const MatchStats& stats() const { return stats_; }

 private:
  // Depth within the window's stack; frames cut at the window start are
  // reported at depth 0 (their true depth is unknowable).
  uint32_t Depth(size_t stack_index) const { return static_cast<uint32_t>(stack_index); }
  std::vector<Open> stack_;
  MatchStats stats_;
  FunctionOf function_of_ = nullptr;
  void* ctx_ = nullptr;
  uint64_t pending_unwind_ = 0;
  uint64_t window_start_ = 0;
};

}  // namespace lookback::model
