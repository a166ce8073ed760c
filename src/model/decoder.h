// Decoding a thread's ring window: full timestamps and keys from the 8-byte
// records, then LIFO matching of entries and exits with repair.
//
// Streaming: DecodeThread walks records once (plus a bounded look-ahead for
// the first EPOCH/FN_BASE) and CallMatcher keeps only the open call stack, so
// memory is bounded by call depth, not by the number of events.
#pragma once

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
  uint64_t tsc;    // full TSC (0 for kResume)
  uint64_t key;    // full function key (0 for kResume)
  uint64_t index;  // record index within the window
};

struct DecodeStats {
  uint64_t records = 0;
  uint64_t events = 0;
  uint64_t undecodable_prefix = 0;  // events whose epoch or base no announcement in the window gives
  uint64_t unknown_records = 0;     // control kinds this reader does not know, or empty slots
  uint64_t backwards = 0;           // events whose timestamp is below the previous one
  uint64_t resumes = 0;
};

// Decodes `n` records of one thread's window (`get(i)` returns record i)
// laid out as `layout`, calling `sink` with every event in order.
template <class Get, class Sink>
DecodeStats DecodeRecords(uint64_t n, format::RecordLayout layout, Get&& get, Sink&& sink) {
  using namespace format;
  DecodeStats st;
  st.records = n;
  // The state in force before the first announcements (record_state.h).
  RecordState state(layout);
  state.Prime(n, get);
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
      sink(Event{IsExit(r) ? EventKind::kExit : EventKind::kEnter, tsc, key, i});
      continue;
    }
    switch (static_cast<ControlKind>(ControlKindOf(r))) {
      case ControlKind::kEpoch:
      case ControlKind::kFnBase: state.Apply(r); break;
      case ControlKind::kResume:
        ++st.resumes;
        sink(Event{EventKind::kResume, 0, 0, i});
        break;
      case ControlKind::kUnwindTo: sink(Event{EventKind::kUnwindTo, 0, ControlPayload(r), i}); break;
      default: ++st.unknown_records; break;
    }
  }
  return st;
}

template <class Sink>
DecodeStats DecodeThread(const format::Dump& dump, const format::ThreadInfo& t, Sink&& sink) {
  return DecodeRecords(t.record_count, dump.layout(), [&](uint64_t i) { return dump.Record(t, i); }, sink);
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
