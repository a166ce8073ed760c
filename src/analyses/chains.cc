#include "analyses/chains.h"

#include <algorithm>

#include <fmt/format.h>

#include "symbolize/symbolizer.h"

namespace lookback::analyses {
namespace {

// Identity of a root-to-frame path, extended one function at a time.
uint64_t MixHash(uint64_t parent, uint64_t key) {
  uint64_t h = (parent ^ key) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}
constexpr uint64_t kRootHash = 0x6c6f6f6b6261636bull;

// Better critical-path step: one still running at the end beats any finished
// one (a stall shows as the chain of running frames); then the longer; ties
// keep the earlier.
bool BetterStep(bool running, int64_t ns, bool best_running, int64_t best_ns) {
  if (best_ns < 0) return true;
  if (running != best_running) return running;
  return ns > best_ns;
}

}  // namespace

bool ParseChainRank(const std::string& text, ChainRank* rank) {
  if (text == "time") return *rank = ChainRank::kTime, true;
  if (text == "depth") return *rank = ChainRank::kDepth, true;
  return false;
}

Status ChainsBuilder::Begin(const model::ExportContext& ctx) {
  ctx_ = &ctx;
  result_ = ChainsResult{};
  result_.origin_ns = ctx.origin_ns;
  result_.dump_ns = ctx.dump_ns;
  static const format::Dump kNoDump;  // driven by hand without a dump
  waits_ = model::WaitFunctions(ctx.dump != nullptr ? *ctx.dump : kNoDump, {});
  jvm_ = ctx.dump != nullptr && model::IsJvmDump(*ctx.dump);
  return Status::Ok();
}

void ChainsBuilder::BeginThread(const format::ThreadInfo& t) {
  thread_ = ThreadChains{};
  thread_.tid = t.tid;
  thread_.name = t.name;
  stack_.clear();
  slots_.clear();
  by_rank_.clear();
  by_hash_.clear();
  top_best_.clear();
  top_best_running_ = false;
  top_best_ns_ = -1;
  any_call_ = false;
  last_ns_ = 0;
  first_ns_ = -1;
  cpu_ = model::CpuTimeline::ForWalkedThread(*ctx_, t);
}

void ChainsBuilder::Enter(uint64_t key, int64_t ts, uint32_t, uint8_t flags) {
  any_call_ = true;
  if (first_ns_ < 0) first_ns_ = ts;
  last_ns_ = std::max(last_ns_, ts);
  const uint64_t parent = stack_.empty() ? kRootHash : stack_.back().hash;
  Frame& f = stack_.emplace_back();
  f.key = key;
  f.start = ts;
  f.enter_flags = flags;
  f.hash = MixHash(parent, key);
}

ChainsBuilder::Rank ChainsBuilder::RankOf(int64_t leaf_ns, size_t depth, int64_t leaf_start) const {
  const int64_t d = static_cast<int64_t>(depth);
  return options_.rank == ChainRank::kTime ? Rank{leaf_ns, d, -leaf_start} : Rank{d, leaf_ns, -leaf_start};
}

void ChainsBuilder::Exit(uint64_t, int64_t ts, uint32_t, uint8_t flags) {
  if (stack_.empty()) return;  // the walker balances; be safe when driven by hand
  Frame f = std::move(stack_.back());
  stack_.pop_back();
  last_ns_ = std::max(last_ns_, ts);
  const int64_t ns = std::max<int64_t>(0, ts - f.start);
  const Node node{f.key, f.start, ts, std::max<int64_t>(0, ns - f.children_ns), f.callees,
                  static_cast<uint8_t>(f.enter_flags | flags)};

  // Candidate chains through this activation learn how it ended.
  const size_t depth = stack_.size();
  for (const Ref& r : f.refs) {
    Candidate& c = slots_[r.slot];
    if (c.generation == r.generation && depth < c.nodes.size()) c.nodes[depth] = node;
  }
  if (f.callees == 0) OfferChain(f, ts, flags);

  // The critical path below the caller: this one if it is its best callee.
  const bool running = (flags & model::kSliceOpen) != 0;
  f.best.push_back(node);
  if (!stack_.empty()) {
    Frame& p = stack_.back();
    p.children_ns += ns;
    ++p.callees;
    if (BetterStep(running, ns, p.best_running, p.best_ns)) {
      p.best = std::move(f.best);
      p.best_running = running;
      p.best_ns = ns;
    }
  } else if (BetterStep(running, ns, top_best_running_, top_best_ns_)) {
    top_best_ = std::move(f.best);
    top_best_running_ = running;
    top_best_ns_ = ns;
  }
}

void ChainsBuilder::OfferChain(const Frame& leaf, int64_t end, uint8_t exit_flags) {
  if (options_.top == 0) return;
  const size_t depth = stack_.size() + 1;
  const Rank rank = RankOf(std::max<int64_t>(0, end - leaf.start), depth, leaf.start);
  uint32_t slot;
  if (auto it = by_hash_.find(leaf.hash); it != by_hash_.end()) {
    slot = it->second;
    Candidate& c = slots_[slot];
    // A 64-bit hash collision between two different paths: keep the first.
    if (c.nodes.size() != depth || c.nodes.back().key != leaf.key) return;
    for (size_t i = 0; i + 1 < depth; ++i) {
      if (c.nodes[i].key != stack_[i].key) return;
    }
    if (rank <= c.rank) return;  // its worst occurrence so far is worse than this one
    by_rank_.erase({c.rank, slot});
  } else if (slots_.size() < options_.top) {
    slot = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    // Full: this one replaces the worst, if better. An evicted chain can come
    // back only with an occurrence better than every one it had (the worst
    // kept rank never decreases), so what is shown is exact.
    const auto worst = by_rank_.begin();
    if (rank <= worst->first) return;
    slot = worst->second;
    by_rank_.erase(worst);
    by_hash_.erase(slots_[slot].hash);
  }
  Candidate& c = slots_[slot];
  c.hash = leaf.hash;
  c.rank = rank;
  c.generation = next_generation_++;
  c.nodes.clear();
  for (Frame& a : stack_) {
    c.nodes.push_back(Node{a.key, a.start, kNotEnded, 0, 0, a.enter_flags});
    auto ref = std::find_if(a.refs.begin(), a.refs.end(), [&](const Ref& r) { return r.slot == slot; });
    if (ref != a.refs.end()) {
      ref->generation = c.generation;
    } else {
      a.refs.push_back(Ref{slot, c.generation});
    }
  }
  c.nodes.push_back(Node{leaf.key, leaf.start, end, std::max<int64_t>(0, end - leaf.start), 0,
                         static_cast<uint8_t>(leaf.enter_flags | exit_flags)});
  by_rank_.insert({rank, slot});
  by_hash_[leaf.hash] = slot;
}

std::vector<ChainFrame> ChainsBuilder::Named(const std::vector<Node>& nodes) {
  std::vector<ChainFrame> out;
  out.reserve(nodes.size());
  for (const Node& n : nodes) {
    ChainFrame f;
    f.name = ctx_ != nullptr && ctx_->symbols != nullptr ? ctx_->symbols->Name(n.key) : fmt::format("0x{:x}", n.key);
    f.key = n.key;
    f.start_ns = n.start;
    f.end_ns = n.end == kNotEnded ? std::max(n.start, last_ns_) : n.end;
    f.self_ns = n.self;
    f.callees = n.callees;
    f.flags = n.flags;
    f.cpu_ns = ctx_ != nullptr && waits_.IsWaitKey(n.key, ctx_->symbols) ? 0 : cpu_.OnCpu(f.start_ns, f.end_ns);
    out.push_back(std::move(f));
  }
  return out;
}

void ChainsBuilder::EndThread(const model::ThreadSummary& summary) {
  while (!stack_.empty()) Exit(stack_.back().key, last_ns_, 0, model::kSliceOpen);  // never with the walker
  if (!any_call_) return;
  std::vector<std::pair<Rank, uint32_t>> order(by_rank_.rbegin(), by_rank_.rend());
  for (const auto& [rank, slot] : order) thread_.chains.push_back(Chain{Named(slots_[slot].nodes)});
  std::vector<Node> path(top_best_.rbegin(), top_best_.rend());
  thread_.critical_path = Named(path);
  while (thread_.running < path.size() && (path[thread_.running].flags & model::kSliceOpen) != 0) ++thread_.running;
  thread_.summary = summary;
  thread_.span_ns = std::max<int64_t>(0, last_ns_ - first_ns_);
  thread_.cpu_ns = cpu_.OnCpu(first_ns_, last_ns_);
  thread_.waited = cpu_.known() && model::OnlyWaited(thread_.cpu_ns, thread_.span_ns);
  thread_.housekeeping = jvm_ && model::IsHousekeepingThread(thread_.name);
  result_.threads.push_back(std::move(thread_));
  slots_.clear();
  by_rank_.clear();
  by_hash_.clear();
  top_best_.clear();
}

Status ChainsBuilder::End() {
  // As report: threads that waited most of their span count as "only
  // waited" only while together they did a negligible part of the work.
  std::vector<model::ThreadWork> work;
  for (const ThreadChains& t : result_.threads) work.push_back({t.cpu_ns, t.waited, t.housekeeping});
  const std::vector<bool> waited = model::StillOnlyWaited(work);
  for (size_t i = 0; i < waited.size(); ++i) result_.threads[i].waited = waited[i];
  return Status::Ok();
}

size_t ChainsBuilder::HeldFrames() const {
  size_t n = top_best_.size();
  for (const auto& c : slots_) n += c.nodes.size();
  for (const auto& f : stack_) n += f.best.size();
  return n;
}

}  // namespace lookback::analyses
