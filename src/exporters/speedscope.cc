// speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json):
// one "evented" profile per thread, open/close events in nanoseconds relative
// to the earliest event, frames shared by all threads. Written as it comes:
// each event goes straight to the file, so memory is bounded by the number of
// distinct functions and the call depth. JSON key order does not matter to
// speedscope, so "profiles" comes first and the frame table ("shared") last,
// once every frame is known.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <unordered_map>
#include <vector>

#include "exporters/exporters.h"
#include "exporters/json_util.h"
#include "exporters/output.h"

namespace lookback::exporters {
namespace {

class SpeedscopeSink : public model::TraceSink {
 public:
  explicit SpeedscopeSink(ExportOptions o) : o_(std::move(o)) {}

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    if (Status s = file_.Open(o_.out); !s.ok()) return s;
    buf_ = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n\"profiles\":[";
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo& t) override {
    buf_ += threads_ == 0 ? "\n" : ",\n";
    ++threads_;
    buf_ += "{\"type\":\"evented\",\"name\":";
    AppendJsonString(&buf_, t.name.empty() ? fmt::format("thread {}", t.tid) : fmt::format("{} ({})", t.name, t.tid));
    buf_ += ",\"unit\":\"nanoseconds\",\"events\":[";
    first_event_ = true;
    start_ = last_ = 0;
    stack_.clear();
  }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t) override {
    auto [it, added] = frames_.try_emplace(key, static_cast<uint32_t>(keys_.size()));
    if (added) keys_.push_back(key);
    stack_.push_back(it->second);
    Event('O', it->second, ts);
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t) override {
    // The walker's slices are balanced; closing the frame on top of our own
    // stack keeps the file loadable even if that ever changed.
    if (stack_.empty()) return;
    const uint32_t frame = stack_.back();
    stack_.pop_back();
    Event('C', frame, ts);
  }
  void EndThread(const model::ThreadSummary&) override {
    while (!stack_.empty()) {  // never happens with balanced input
      Event('C', stack_.back(), ctx_->origin_ns + last_);
      stack_.pop_back();
    }
    buf_ += fmt::format("],\"startValue\":{},\"endValue\":{}}}", start_, last_);
    file_.Drain();
  }
  Status End() override {
    buf_ += "\n],\n\"shared\":{\"frames\":[";
    for (size_t i = 0; i < keys_.size(); ++i) {
      buf_ += i == 0 ? "\n{\"name\":" : ",\n{\"name\":";
      AppendJsonString(&buf_, KeyName(*ctx_, keys_[i]));
      buf_ += "}";
      file_.Drain();
    }
    const auto& process = ctx_->dump->process;
    std::string name = process.name.empty() ? std::string("lookback") : process.name;
    if (!process.reason.empty()) name += " \u2014 " + process.reason;
    buf_ += "\n]},\n\"name\":";
    AppendJsonString(&buf_, name);
    buf_ += ",\"activeProfileIndex\":0,\"exporter\":\"lookback\"}\n";
    return file_.Commit();
  }

 private:
  // "at" must not go backwards within a profile: clamp to the previous event.
  void Event(char type, uint32_t frame, int64_t ts) {
    int64_t at = std::max<int64_t>(ts - ctx_->origin_ns, 0);
    if (first_event_) {
      start_ = last_ = at;
    } else {
      at = std::max(at, last_);
    }
    last_ = at;
    fmt::format_to(std::back_inserter(buf_), "{}\n{{\"type\":\"{}\",\"frame\":{},\"at\":{}}}", first_event_ ? "" : ",",
                   type, frame, at);
    first_event_ = false;
    file_.Drain();
  }

  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  OutputFile file_;
  std::string& buf_ = file_.buffer();  // the file's own: text goes straight into it
  std::unordered_map<uint64_t, uint32_t> frames_;  // key -> index in "shared.frames"
  std::vector<uint64_t> keys_;                     // index -> key
  std::vector<uint32_t> stack_;                    // open frames of the current thread
  size_t threads_ = 0;
  bool first_event_ = true;
  int64_t start_ = 0, last_ = 0;  // relative ns of the thread's first and latest event
};

}  // namespace

std::unique_ptr<model::TraceSink> MakeSpeedscopeSink(const ExportOptions& o) {
  return std::make_unique<SpeedscopeSink>(o);
}

}  // namespace lookback::exporters
