// `lookback chains` and analyses::ChainsBuilder: on a dump of tests/programs/
// timing.cc (known chains: main -> handle_request -> render -> slow_parse
// {30 ms}, main -> on_click -> binder_call -> wait_reply {20 ms}), and on
// synthetic streams checked against a brute-force computation that keeps
// everything, to show the bounded-memory version loses nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../integration/harness.h"
#include "timing_recording.h"
#include "analyses/chains.h"
#include "format/reader.h"
#include "model/clock_model.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {


const Recording& Timing() {
  static const Recording r = RecordTiming("chains_timing", {}, kTimingMs);
  return r;
}
const std::string& TimingDump() { return Timing().path; }
int64_t Slack() { return Timing().slack_ns; }

analyses::ChainsResult ChainsOfTiming(analyses::ChainsOptions o) {
  format::Dump d = MustOpen(TimingDump());
  symbolize::Symbolizer sym(d);
  analyses::ChainsBuilder b(o);
  model::WalkResult r = model::Walk(d, sym, {}, b);
  EXPECT_TRUE(r.status.ok());
  return b.Take();
}

std::vector<std::string> Names(const std::vector<analyses::ChainFrame>& frames) {
  std::vector<std::string> out;
  for (const auto& f : frames) out.push_back(f.name);
  return out;
}

using Path = std::vector<std::string>;

// The chain of `path` in `chains`, nullptr if absent.
const analyses::Chain* Find(const std::vector<analyses::Chain>& chains, const Path& path) {
  for (const auto& c : chains)
    if (Names(c.frames) == path) return &c;
  return nullptr;
}

const Path kSlowParse = {"main", "handle_request", "render", "slow_parse"};
const Path kWaitReply = {"main", "on_click", "binder_call", "wait_reply"};
const Path kFastParse = {"main", "handle_request", "render", "fast_parse"};
const Path kIdleTick = {"main", "idle_tick"};

TEST(ChainsTest, FindsTheRenderAndBinderChains) {
  analyses::ChainsResult r = ChainsOfTiming({});
  ASSERT_EQ(r.threads.size(), 1u);
  const auto& chains = r.threads[0].chains;
  ASSERT_EQ(chains.size(), 4u);  // the program has four distinct root-to-leaf paths
  const analyses::Chain* slow = Find(chains, kSlowParse);
  const analyses::Chain* binder = Find(chains, kWaitReply);
  const analyses::Chain* fast = Find(chains, kFastParse);
  ASSERT_TRUE(slow && binder && fast && Find(chains, kIdleTick));
  ExpectDuration(slow->leaf_ns(), 30, Slack(), "slow_parse");
  ExpectDuration(slow->frames[2].inclusive_ns(), 50, Slack(), "render around the worst slow_parse");
  ExpectDuration(binder->leaf_ns(), 20, Slack(), "wait_reply");
  ExpectDuration(binder->frames[1].inclusive_ns(), 20, Slack(), "on_click around it");
  // The worst of 15 fast_parse calls: each 2 ms, one preemption can stretch
  // the worst, so only its floor.
  EXPECT_GE(fast->leaf_ns(), 2 * kMs * 0.95);
  EXPECT_EQ(Names(chains.back().frames), kIdleTick);  // ~10 ns
  // Every frame of a chain holds the next one.
  for (const auto& c : chains) {
    for (size_t i = 0; i + 1 < c.frames.size(); ++i) {
      EXPECT_LE(c.frames[i].start_ns, c.frames[i + 1].start_ns);
      EXPECT_GE(c.frames[i].end_ns, c.frames[i + 1].end_ns);
    }
  }
}

TEST(ChainsTest, RanksChainsByTheirLeafTime) {
  if (Slack() > kQuietNs) GTEST_SKIP() << "five runs of timing starved by " << Slack() / 1e6 << " ms or more";
  analyses::ChainsResult r = ChainsOfTiming({});
  ASSERT_EQ(r.threads.size(), 1u);
  const auto& chains = r.threads[0].chains;
  ASSERT_EQ(chains.size(), 4u);
  EXPECT_EQ(Names(chains[0].frames), kSlowParse);  // 30 ms
  EXPECT_EQ(Names(chains[1].frames), kWaitReply);  // 20 ms
  EXPECT_EQ(Names(chains[2].frames), kFastParse);  // 2 ms
  EXPECT_EQ(Names(chains[3].frames), kIdleTick);
}

TEST(ChainsTest, RanksByDepthWhenAsked) {
  analyses::ChainsOptions o;
  o.rank = analyses::ChainRank::kDepth;
  o.top = 3;
  analyses::ChainsResult r = ChainsOfTiming(o);
  ASSERT_EQ(r.threads.size(), 1u);
  const auto& chains = r.threads[0].chains;
  ASSERT_EQ(chains.size(), 3u);  // idle_tick's, two deep, is the one left out
  for (const auto& c : chains) EXPECT_EQ(c.depth(), 4u);
  EXPECT_TRUE(Find(chains, kSlowParse) && Find(chains, kWaitReply) && Find(chains, kFastParse));
  if (Slack() < kQuietNs) {  // equal depths: the leaf's time decides
    EXPECT_EQ(Names(chains[0].frames), kSlowParse);
    EXPECT_EQ(Names(chains[1].frames), kWaitReply);
  }
}

TEST(ChainsTest, CriticalPathFollowsTheSlowestCallee) {
  analyses::ChainsResult r = ChainsOfTiming({});
  ASSERT_EQ(r.threads.size(), 1u);
  const auto& t = r.threads[0];
  // handle_request (50 ms) against on_click (20), slow_parse (30) against
  // fast_parse (2): a run starved by less than 18 ms cannot reorder them.
  if (Slack() < 18 * kMs) {
    EXPECT_EQ(Names(t.critical_path), kSlowParse) << "slack " << Slack();
  } else {
    EXPECT_TRUE(Names(t.critical_path) == kSlowParse || Names(t.critical_path) == kFastParse ||
                Names(t.critical_path) == kWaitReply);
    return;
  }
  EXPECT_EQ(t.running, 0u);  // the dump was taken at exit: nothing was running
  ASSERT_EQ(t.critical_path.size(), 4u);
  EXPECT_EQ(t.critical_path[0].callees, 3u + 2u + 50u);
  ExpectDuration(t.critical_path[2].inclusive_ns(), 50, Slack(), "render");
  ExpectDuration(t.critical_path[2].self_ns, 10, Slack(), "render self");
  EXPECT_EQ(t.critical_path[2].callees, 6u);
  ExpectDuration(t.critical_path[3].inclusive_ns(), 30, Slack(), "slow_parse");
}

TEST(ChainsTest, PrintsIndentedTreesWithDurations) {
  RunResult r = RunProgram({Cli(), "chains", TimingDump(), "--top", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Top 4 chains by leaf time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("#4  "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#5  "), std::string::npos) << r.out;
  RunResult one = RunProgram({Cli(), "chains", TimingDump(), "--top", "1"});
  EXPECT_NE(one.out.find("Top 1 chain by leaf time"), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("#2  "), std::string::npos) << one.out;
  EXPECT_NE(r.out.find(" in slow_parse, depth 4, at +"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Critical path: the slowest top-level frame (main at +"), std::string::npos) << r.out;
  // Indented two spaces a level, after a right-aligned duration: slow_parse
  // ends its chain (nothing after the name), binder_call is at depth 2.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +\d+\.\d ms        slow_parse\n)"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(\n +\d+\.\d ms      binder_call\n)"))) << r.out;
  // The critical path says what each step leaves out.
  EXPECT_TRUE(std::regex_search(r.out, std::regex(R"(render +self \d+\.\d ms, 6 callees \(the 5 others: )"))) << r.out;

  RunResult json = RunProgram({Cli(), "chains", TimingDump(), "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.rfind("{", 0), 0u);
  EXPECT_NE(json.out.find("\"critical_path\": {\"running\": 0"), std::string::npos) << json.out;
  EXPECT_EQ(RunProgram({Cli(), "chains", TimingDump(), "--rank", "width"}).exit_code, 2);
  EXPECT_EQ(RunProgram({Cli(), "chains", TimingDump(), "--format", "xml"}).exit_code, 2);
}

// ---- synthetic streams ----------------------------------------------------

struct Ev {
  bool enter;
  uint64_t key;
  int64_t ts;
  uint8_t flags = 0;
};

analyses::ChainsResult Feed(const std::vector<Ev>& events, analyses::ChainsOptions o, size_t* max_held = nullptr) {
  analyses::ChainsBuilder b(o);
  model::ExportContext ctx;  // names are 0x<key>
  EXPECT_TRUE((b.Begin(ctx)).ok());
  format::ThreadInfo t;
  t.tid = 9;
  b.BeginThread(t);
  uint32_t depth = 0;
  for (const auto& e : events) {
    if (e.enter) b.Enter(e.key, e.ts, depth++, e.flags);
    else b.Exit(e.key, e.ts, --depth, e.flags);
    if (max_held) *max_held = std::max(*max_held, b.HeldFrames());
  }
  b.EndThread(model::ThreadSummary{});
  EXPECT_TRUE((b.End()).ok());
  return b.Take();
}

TEST(ChainsTest, CriticalPathOfAStallIsTheRunningStack) {
  // main(0..) -> a(1..91) finished, 90 ns; -> b(92..) still running at the
  // dump (100) -> c(93..94). a is longer than b so far, but b is the stall.
  auto r = Feed({{true, 1, 0},
                 {true, 0xa, 1},
                 {false, 0xa, 91},
                 {true, 0xb, 92},
                 {true, 0xc, 93},
                 {false, 0xc, 94},
                 {false, 0xb, 100, model::kSliceOpen},
                 {false, 1, 100, model::kSliceOpen}},
                {});
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(Names(r.threads[0].critical_path), (Path{"0x1", "0xb", "0xc"}));
  EXPECT_EQ(r.threads[0].running, 2u);
  EXPECT_EQ(r.threads[0].critical_path[1].inclusive_ns(), 8);
  // Without the stall, the slowest callee wins.
  auto done = Feed({{true, 1, 0}, {true, 0xa, 1}, {false, 0xa, 91}, {true, 0xb, 92}, {false, 0xb, 100}, {false, 1, 100}}, {});
  EXPECT_EQ(Names(done.threads[0].critical_path), (Path{"0x1", "0xa"}));
  EXPECT_EQ(done.threads[0].running, 0u);
}

// A random properly nested stream: `n` events, keys 1..keys, depth <= max_depth.
std::vector<Ev> RandomStream(uint32_t seed, size_t n, int keys, size_t max_depth) {
  std::mt19937 rng(seed);
  std::vector<Ev> out;
  std::vector<uint64_t> stack;
  int64_t ts = 0;
  while (out.size() < n || !stack.empty()) {
    ts += 1 + static_cast<int64_t>(rng() % 50);
    const bool enter = out.size() < n && stack.size() < max_depth && (stack.empty() || rng() % 2 == 0);
    if (enter) {
      const uint64_t k = 1 + rng() % keys;
      stack.push_back(k);
      out.push_back({true, k, ts});
    } else {
      out.push_back({false, stack.back(), ts});
      stack.pop_back();
    }
  }
  return out;
}

// Brute force: every leaf occurrence kept, then the best per distinct path.
struct RefChain {
  std::vector<uint64_t> keys;
  int64_t leaf_ns, leaf_start;
};
std::vector<RefChain> ReferenceChains(const std::vector<Ev>& events, analyses::ChainRank rank, size_t top) {
  struct Open {
    uint64_t key;
    int64_t start;
    bool has_callee;
  };
  std::vector<Open> stack;
  std::map<std::vector<uint64_t>, RefChain> best;
  auto key_of = [&](const RefChain& c) {
    const int64_t d = static_cast<int64_t>(c.keys.size());
    return rank == analyses::ChainRank::kTime ? std::make_tuple(c.leaf_ns, d, -c.leaf_start)
                                              : std::make_tuple(d, c.leaf_ns, -c.leaf_start);
  };
  for (const auto& e : events) {
    if (e.enter) {
      if (!stack.empty()) stack.back().has_callee = true;
      stack.push_back({e.key, e.ts, false});
      continue;
    }
    const Open o = stack.back();
    if (!o.has_callee) {
      RefChain c;
      for (const auto& s : stack) c.keys.push_back(s.key);
      c.leaf_ns = e.ts - o.start;
      c.leaf_start = o.start;
      auto it = best.find(c.keys);
      if (it == best.end() || key_of(c) > key_of(it->second)) best[c.keys] = c;
    }
    stack.pop_back();
  }
  std::vector<RefChain> all;
  for (auto& [k, c] : best) all.push_back(c);
  std::sort(all.begin(), all.end(), [&](const RefChain& a, const RefChain& b) { return key_of(a) > key_of(b); });
  if (all.size() > top) all.resize(top);
  return all;
}

TEST(ChainsTest, KeepsExactlyTheTopChainsOfABruteForceWithBoundedMemory) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    for (auto rank : {analyses::ChainRank::kTime, analyses::ChainRank::kDepth}) {
      const size_t kTop = 4, kDepth = 7;
      auto events = RandomStream(seed, 20000, 3, kDepth);
      analyses::ChainsOptions o;
      o.top = kTop;
      o.rank = rank;
      size_t held = 0;
      auto r = Feed(events, o, &held);
      auto ref = ReferenceChains(events, rank, kTop);
      ASSERT_EQ(r.threads.size(), 1u);
      const auto& got = r.threads[0].chains;
      ASSERT_EQ(got.size(), ref.size()) << "seed " << seed;
      for (size_t i = 0; i < ref.size(); ++i) {
        std::vector<uint64_t> keys;
        for (const auto& f : got[i].frames) keys.push_back(f.key);
        EXPECT_EQ(keys, ref[i].keys) << "seed " << seed << " chain " << i;
        EXPECT_EQ(got[i].leaf_ns(), ref[i].leaf_ns) << "seed " << seed << " chain " << i;
      }
      // Candidates (top x depth) and critical paths under construction (at
      // most depth + depth * (depth + 1) / 2), whatever the number of events.
      EXPECT_LE(held, kTop * kDepth + kDepth + kDepth * (kDepth + 1) / 2) << "seed " << seed;
    }
  }
}

TEST(ChainsTest, MemoryDoesNotGrowWithTheNumberOfEvents) {
  size_t held_small = 0, held_large = 0;
  analyses::ChainsOptions o;
  o.top = 8;
  Feed(RandomStream(42, 10000, 50, 12), o, &held_small);
  Feed(RandomStream(42, 1000000, 50, 12), o, &held_large);
  const size_t bound = 8 * 12 + 12 + 12 * 13 / 2;
  EXPECT_LE(held_small, bound);
  EXPECT_LE(held_large, bound);
}

TEST(ChainsTest, CriticalPathMatchesABruteForceDescent) {
  for (uint32_t seed = 10; seed < 16; ++seed) {
    auto events = RandomStream(seed, 5000, 4, 6);
    // Brute force: the whole call tree, then the descent.
    struct Node {
      uint64_t key;
      int64_t start, end = 0;
      std::vector<size_t> kids;
    };
    std::vector<Node> nodes;
    std::vector<size_t> roots, stack;
    for (const auto& e : events) {
      if (e.enter) {
        nodes.push_back({e.key, e.ts, 0, {}});
        (stack.empty() ? roots : nodes[stack.back()].kids).push_back(nodes.size() - 1);
        stack.push_back(nodes.size() - 1);
      } else {
        nodes[stack.back()].end = e.ts;
        stack.pop_back();
      }
    }
    auto slowest = [&](const std::vector<size_t>& ids) {  // ties: the earlier
      size_t best = ids[0];
      for (size_t id : ids)
        if (nodes[id].end - nodes[id].start > nodes[best].end - nodes[best].start) best = id;
      return best;
    };
    std::vector<uint64_t> want;
    for (size_t at = slowest(roots);; at = slowest(nodes[at].kids)) {
      want.push_back(nodes[at].key);
      if (nodes[at].kids.empty()) break;
    }
    auto r = Feed(events, {});
    std::vector<uint64_t> got;
    for (const auto& f : r.threads[0].critical_path) got.push_back(f.key);
    EXPECT_EQ(got, want) << "seed " << seed;
  }
}

}  // namespace
}  // namespace lookback::testing
