// Signatures: known-bad call chains, described in a text file and found in a
// dump while it streams by (`lookback match`).
//
// A signature is an ordered chain of function-name patterns, each frame below
// the previous one on the same thread's stack:
//
//   name: sleep-after-binder
//   chain: on_click >> binder_call > wait_reply
//   min: 10ms
//
// `A > B`: B is a direct child of A. `A >> B`: B runs anywhere below A (any
// depth). A match is one call of the chain's LAST function that completes the
// chain; its duration is that call's duration. The file format is documented
// in docs/analyses.md ("lookback match").
//
// Matching keeps, per thread, only the open stack: for every open frame and
// every chain step, the outermost stack index where a chain ending at that
// step can begin. Memory is bounded by the call depth times the number of
// steps.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "symbolize/names.h"
#include "common/result.h"
#include "common/status.h"
#include "model/walk.h"

namespace lookback::analyses {

struct ChainStep {
  std::string pattern;  // glob: * ? [abc] [a-z] [!x]
  bool direct = false;  // relation to the previous step: '>' (true) or '>>' (false); unused on step 0
};

struct Signature {
  std::string name;
  std::string description;
  std::vector<ChainStep> chain;
  int64_t min_last_ns = 0;  // `min:`  the last frame lasts at least this long
  int64_t min_top_ns = 0;   // `min-top:` the first frame lasts at least this long
  int line = 0;             // where its block starts in the file
};

// The signatures of a file, or an error "ORIGIN:LINE: message". `origin`
// names the text in errors (usually the file name).
Result<std::vector<Signature>> ParseSignatures(std::string_view text, const std::string& origin);
Result<std::vector<Signature>> LoadSignatures(const std::string& path);

// Renders a chain back to its text form ("a >> b > c").
std::string ChainText(const Signature& s);

// Name matching (GlobMatch, WithoutParameters, LastComponent, ShortName,
// NameMatches) lives with the symbols: symbolize/names.h.
using symbolize::GlobMatch;
using symbolize::LastComponent;
using symbolize::NameMatches;
using symbolize::ShortName;
using symbolize::WithoutParameters;

// Parses "10ms", "1.5s", "250us", "800ns" (a unit is required).
Status ParseDuration(std::string_view text, int64_t* ns);

struct MatchWorst {  // the slowest match: where to look
  uint32_t tid = 0;
  std::string thread;
  int64_t ts_ns = 0;               // CLOCK_MONOTONIC entry of the last frame
  int64_t dur_ns = -1;             // -1: no match yet
  std::vector<std::string> stack;  // from the chain's first frame down to its last
};

struct SignatureStats {
  uint64_t matches = 0;
  uint64_t open = 0;  // matches whose last frame was still running at the dump (or window end)
  int64_t total_ns = 0, max_ns = 0;
  MatchWorst worst;
};

// A TraceSink that counts matches of every signature, streaming.
class SignatureMatcher : public model::TraceSink {
 public:
  explicit SignatureMatcher(std::vector<Signature> signatures);
  ~SignatureMatcher() override;

  Status Begin(const model::ExportContext& ctx) override;
  void BeginThread(const format::ThreadInfo& t) override;
  void Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) override;
  void EndThread(const model::ThreadSummary& summary) override;
  Status End() override;

  const std::vector<Signature>& signatures() const { return signatures_; }
  const std::vector<SignatureStats>& stats() const { return stats_; }  // parallel to signatures()
  int64_t origin_ns() const { return origin_ns_; }
  int64_t dump_ns() const { return dump_ns_; }

 private:
  struct Frame {
    uint64_t key;
    int64_t start_ns;
    const std::vector<uint32_t>* steps;  // StepsOf(key)
  };
  // A match waiting for its first frame to end (signatures with min-top).
  struct Pending {
    size_t signature;
    SignatureStats stats;
  };
  const std::vector<uint32_t>& StepsOf(uint64_t key);
  // Adds a match to `into`; its stack is kept only when it is slower than `worst_ns`.
  void Record(int64_t dur, bool open, size_t top, int64_t ts, int64_t worst_ns, SignatureStats* into);
  static void Merge(const SignatureStats& from, SignatureStats* into);

  std::vector<Signature> signatures_;
  std::vector<SignatureStats> stats_;
  // Chain steps flattened over all signatures; step_sig_[i] is step i's
  // signature, step_first_[i] whether it starts a chain, step_last_ whether it ends one.
  std::vector<ChainStep> steps_;
  std::vector<uint32_t> step_sig_;
  std::vector<uint8_t> step_first_, step_last_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> steps_of_key_;  // key -> steps its name matches
  struct CacheSlot {
    uint64_t key = ~0ull;
    const std::vector<uint32_t>* steps = nullptr;
  };
  std::vector<CacheSlot> steps_cache_;  // direct-mapped, in front of steps_of_key_
  symbolize::Symbolizer* symbols_ = nullptr;
  int64_t origin_ns_ = 0, dump_ns_ = 0;

  // The open stack of the current thread. For frame f and step k (rows of
  // steps_.size() entries): end_[f][k] = outermost stack index where a chain
  // whose step k is frame f begins, -1 if none; anc_[f][k] = the minimum of
  // end_ over f and its ancestors. end_, anc_ and pending_ keep the size of
  // the deepest stack seen (rows past stack_.size() are stale).
  std::vector<Frame> stack_;
  std::vector<int32_t> end_, anc_;
  std::vector<std::vector<Pending>> pending_;  // per open frame
  uint32_t tid_ = 0;
  std::string thread_;
};

}  // namespace lookback::analyses
