// The longest call chains of each thread and its critical path, built by a
// TraceSink while the walker streams: memory is bounded by the call depth and
// the number of chains asked for, never by the number of events.
//
// Chain: the functions on the stack, root first, when a leaf frame (one that
// called no traced function) returned: main -> handle_request -> render ->
// slow_parse. Chains with the same functions in the same order are the same
// chain; each is shown by its worst occurrence (the one whose leaf took
// longest), with the durations of every frame in that occurrence. A thread's
// chains are ranked by the leaf's time in that worst occurrence (rank kTime,
// the default: where the time at the bottom of the stack went), or by depth
// (rank kDepth: the deepest stacks), ties by the other criterion, then by the
// earliest occurrence. The top K are kept.
//
// Critical path: if the thread still had frames running at the end (the
// dump, or --window's end: e.g. a dump taken during a stall), the chain of
// those frames, outermost first; below the innermost running frame, and
// otherwise from the slowest top-level frame (depth 0, longest inclusive time)
// down, at each level the callee with the longest inclusive time, until a
// leaf. Each step knows its self time and how many direct callees it had, so
// a reader sees what the path leaves out.
#pragma once

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "model/waiting.h"
#include "model/cpu_time.h"
#include "model/walk.h"

namespace lookback::analyses {

struct ChainFrame {
  std::string name;  // symbol, or 0x<key> without a symbolizer
  uint64_t key = 0;
  int64_t start_ns = 0, end_ns = 0;  // CLOCK_MONOTONIC, clipped to the window
  int64_t self_ns = 0;               // inclusive minus the direct callees
  uint64_t callees = 0;              // direct callee activations
  uint8_t flags = 0;                 // model::SliceFlag of its Enter and Exit
  int64_t cpu_ns = 0;                // of inclusive, on CPU (model/cpu_time.h; 0 for a waiting function)
  int64_t inclusive_ns() const { return end_ns - start_ns; }
  int64_t wait_ns() const { return inclusive_ns() - cpu_ns; }
};

struct Chain {
  std::vector<ChainFrame> frames;  // root first, the leaf last
  int64_t leaf_ns() const { return frames.empty() ? 0 : frames.back().inclusive_ns(); }
  size_t depth() const { return frames.size(); }
};

struct ThreadChains {
  uint32_t tid = 0;
  std::string name;
  std::vector<Chain> chains;  // best first
  // Root first; empty when the thread made no call in the window.
  std::vector<ChainFrame> critical_path;
  // How many leading critical_path frames were still running at the end.
  size_t running = 0;
  // Its traced span and, of it, the time on CPU; `waited`: under 2 % on CPU,
  // and with the other such threads under 2 % of all the CPU time
  // (model/waiting.h, StillOnlyWaited), `housekeeping`: a JVM's own thread.
  int64_t span_ns = 0, cpu_ns = 0;
  bool waited = false, housekeeping = false;
  model::ThreadSummary summary;
};

struct ChainsResult {
  std::vector<ThreadChains> threads;  // in walk order; threads with no call are left out
  int64_t origin_ns = 0;              // CLOCK_MONOTONIC of the first event shown
  int64_t dump_ns = 0;                // CLOCK_MONOTONIC when the dump was taken
};

enum class ChainRank { kTime, kDepth };
// "time" or "depth"; false if neither.
bool ParseChainRank(const std::string& text, ChainRank* rank);

struct ChainsOptions {
  size_t top = 10;  // chains kept per thread (K)
  ChainRank rank = ChainRank::kTime;
};

class ChainsBuilder : public model::TraceSink {
 public:
  explicit ChainsBuilder(ChainsOptions options = {}) : options_(options) {}

  Status Begin(const model::ExportContext& ctx) override;
  void BeginThread(const format::ThreadInfo& t) override;
  void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void EndThread(const model::ThreadSummary& summary) override;
  Status End() override;

  ChainsResult Take() { return std::move(result_); }

  // For tests: how many chain frames the thread being walked holds now (the
  // candidates and the critical paths under construction).
  size_t HeldFrames() const;

 private:
  static constexpr int64_t kNotEnded = std::numeric_limits<int64_t>::min();
  struct Node {  // a ChainFrame before its name is looked up
    uint64_t key;
    int64_t start, end, self;
    uint64_t callees;
    uint8_t flags;
  };
  // (time, depth) or (depth, time), then the earlier leaf start: larger is better.
  using Rank = std::tuple<int64_t, int64_t, int64_t>;
  struct Candidate {
    std::vector<Node> nodes;  // root first; ancestors get their end when they return
    uint64_t hash = 0;
    Rank rank{};
    uint64_t generation = 0;  // bumped when the slot is reused or the occurrence replaced
  };
  struct Ref {
    uint32_t slot;
    uint64_t generation;
  };
  struct Frame {
    uint64_t key;
    int64_t start;
    uint8_t enter_flags;
    uint64_t hash;  // of the functions from the root to this one
    int64_t children_ns = 0;
    uint64_t callees = 0;
    std::vector<Ref> refs;   // candidates in which this activation is an ancestor (<= K)
    std::vector<Node> best;  // critical path below this frame, leaf first
    bool best_running = false;
    int64_t best_ns = -1;
  };

  Rank RankOf(int64_t leaf_ns, size_t depth, int64_t leaf_start) const;
  void OfferChain(const Frame& leaf, int64_t end, uint8_t exit_flags);
  std::vector<ChainFrame> Named(const std::vector<Node>& nodes);

  ChainsOptions options_;
  const model::ExportContext* ctx_ = nullptr;
  ChainsResult result_;
  // The thread being walked.
  ThreadChains thread_;
  std::vector<Frame> stack_;
  std::vector<Candidate> slots_;
  std::set<std::pair<Rank, uint32_t>> by_rank_;  // worst first (with the slot for ties)
  std::unordered_map<uint64_t, uint32_t> by_hash_;
  model::CpuTimeline cpu_;  // the thread being walked
  model::WaitFunctions waits_;
  bool jvm_ = false;
  int64_t first_ns_ = -1;
  std::vector<Node> top_best_;  // critical path of the thread so far, leaf first
  bool top_best_running_ = false;
  int64_t top_best_ns_ = -1;
  uint64_t next_generation_ = 1;
  bool any_call_ = false;
  int64_t last_ns_ = 0;
};

}  // namespace lookback::analyses
