// Folded stacks ("thread;main;f;g 1234"), weighted by self time in ns, one
// line per distinct stack: flamegraph.pl, inferno and speedscope read it.
// Stacks are kept as a trie of (parent, key) nodes, so memory grows with the
// number of distinct stacks, not with the number of calls. A line repeats its
// whole stack, so the file grows with the square of the depth: frames deeper
// than kMaxDepth are merged into one "[deeper frames]" frame (as
// async-profiler's depth limit does), which bounds a 10,000-deep recursion's
// file to megabytes instead of gigabytes; lines are written as they are made.
#include <fmt/format.h>

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "exporters/exporters.h"
#include "exporters/output.h"

namespace lookback::exporters {
namespace {

struct PairHash {
  size_t operator()(const std::pair<uint32_t, uint64_t>& p) const {
    return std::hash<uint64_t>()(p.second * 0x9e3779b97f4a7c15ull ^ p.first);
  }
};

class FoldedSink : public model::TraceSink {
 public:
  explicit FoldedSink(ExportOptions o) : o_(std::move(o)) {}

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    return file_.Open(o_.out);
  }
  void BeginThread(const format::ThreadInfo& t) override {
    nodes_.assign(1, Node{0, 0, 0});  // the thread's root
    children_.clear();
    stack_.clear();
    thread_label_ = t.name.empty() ? fmt::format("thread {}", t.tid) : fmt::format("{} ({})", t.name, t.tid);
  }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t) override {
    if (stack_.size() >= kMaxDepth) {  // every deeper frame is the one "[deeper frames]" node
      const uint32_t at = stack_[kMaxDepth - 1].node;
      stack_.push_back({Child(at, kDeeperKey), ts, 0});
      return;
    }
    stack_.push_back({Child(stack_.empty() ? 0 : stack_.back().node, key), ts, 0});
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t) override {
    if (stack_.empty()) return;
    const Frame f = stack_.back();
    stack_.pop_back();
    const int64_t total = ts > f.start ? ts - f.start : 0;
    nodes_[f.node].self_ns += static_cast<uint64_t>(total > f.children ? total - f.children : 0);
    if (!stack_.empty()) stack_.back().children += total;
  }
  void EndThread(const model::ThreadSummary&) override {
    std::string out;
    std::vector<uint32_t> path;
    for (size_t i = 1; i < nodes_.size(); ++i) {
      if (nodes_[i].self_ns == 0) continue;
      path.clear();
      for (uint32_t n = static_cast<uint32_t>(i); n != 0; n = nodes_[n].parent) path.push_back(n);
      out.append(thread_label_);
      for (auto n = path.rbegin(); n != path.rend(); ++n) out.append(";").append(Name(nodes_[*n].key));
      fmt::format_to(std::back_inserter(out), " {}\n", nodes_[i].self_ns);
      if (out.size() >= (1u << 20)) {
        file_.Write(out);
        out.clear();
      }
    }
    file_.Write(out);
  }
  Status End() override { return file_.Commit(); }

 private:
  static constexpr size_t kMaxDepth = 1024;
  static constexpr uint64_t kDeeperKey = ~0ull;  // no function's key: keys are addresses or method ids

  uint32_t Child(uint32_t parent, uint64_t key) {
    auto [it, added] = children_.try_emplace({parent, key}, static_cast<uint32_t>(nodes_.size()));
    if (added) nodes_.push_back(Node{parent, key, 0});
    return it->second;
  }
  const std::string& Name(uint64_t key) {
    auto [it, added] = names_.try_emplace(key);
    if (added) it->second = key == kDeeperKey ? fmt::format("[frames deeper than {}]", kMaxDepth)
                                              : Clean(KeyName(*ctx_, key));
    return it->second;
  }
  static std::string Clean(std::string s) {  // ';' separates frames, the last ' ' the weight
    for (auto& c : s) c = (c == ';') ? ':' : (c == '\n' ? ' ' : c);
    return s;
  }
  struct Node {
    uint32_t parent;
    uint64_t key;
    uint64_t self_ns;
  };
  struct Frame {
    uint32_t node;
    int64_t start;
    int64_t children;
  };
  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  OutputFile file_;
  std::vector<Node> nodes_;
  std::unordered_map<std::pair<uint32_t, uint64_t>, uint32_t, PairHash> children_;
  std::vector<Frame> stack_;
  std::unordered_map<uint64_t, std::string> names_;  // cleaned, by key
  std::string thread_label_;
};

}  // namespace

std::unique_ptr<model::TraceSink> MakeFoldedSink(const ExportOptions& o) { return std::make_unique<FoldedSink>(o); }

}  // namespace lookback::exporters
