// Nanoscope's text trace: one file per thread, "<ns>:<signature>" on push and
// "<ns>:POP" on pop, timestamps non-decreasing (CLOCK_MONOTONIC ns, the base
// Nanoscope's .timer/.state files share), pushes and pops balanced. Each file
// is written to a temporary name and renamed when complete, as Nanoscope does.
//
// With samples (lookback record --sample), beside each thread's NAME.txt:
//   NAME.txt.timer  one line per sample, Nanoscope's nine cumulative columns
//                   separated by ", ": wall ns (CLOCK_MONOTONIC, the trace's
//                   base), thread CPU ns, major faults, minor faults, context
//                   switches (voluntary + involuntary), process memory bytes
//                   (heap in use with allocation counting, else resident set),
//                   process heap objects (0 without allocation counting),
//                   bytes the thread allocated, bytes it freed
//   NAME.txt.state  one line per state change, "<ns>:<state>" (Running,
//                   Sleeping, Disk wait, ...)
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <memory>

#include "common/directories.h"
#include "exporters/exporters.h"
#include "exporters/output.h"
#include "model/samples.h"

namespace lookback::exporters {
namespace {

class NanoscopeSink : public model::TraceSink {
 public:
  explicit NanoscopeSink(ExportOptions o) : o_(std::move(o)) {}

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    return MakeDirectories(o_.out);
  }
  void BeginThread(const format::ThreadInfo& t) override {
    std::string name = t.name;
    for (auto& c : name) c = (c == '/' || c == ' ' || c == ':') ? '_' : c;
    const std::string path = fmt::format("{}/{}-{}.txt", o_.out, t.tid, name.empty() ? "thread" : name);
    file_ = std::make_unique<OutputFile>();
    Keep(file_->Open(path));
    if (const format::ThreadSamples* samples = ctx_->dump->SamplesOf(t)) WriteSamples(path, *samples);
    last_ = 0;
  }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t) override {
    std::string& out = Line(ts);
    out += KeyName(*ctx_, key);
    out.push_back('\n');
    file_->Drain();
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t) override {
    Line(ts) += "POP\n";
    file_->Drain();
  }
  void EndThread(const model::ThreadSummary&) override {
    if (file_ && file_->is_open()) {
      Keep(file_->Commit());
    }
    file_.reset();
  }
  Status End() override { return error_; }

 private:
  void WriteSamples(const std::string& path, const format::ThreadSamples& s) {
    std::string text;
    const bool alloc = (s.flags & format::kSampleAlloc) != 0;
    for (const auto& v : s.samples) {
      fmt::format_to(std::back_inserter(text), "{}, {}, {}, {}, {}, {}, {}, {}, {}\n",
                     ctx_->clock.MonotonicNs(v[format::kSampleTsc]), v[format::kSampleCpuNs],
                     v[format::kSampleMajorFaults], v[format::kSampleMinorFaults],
                     v[format::kSampleVoluntarySwitches] + v[format::kSampleInvoluntarySwitches],
                     alloc ? v[format::kSampleHeapBytes] : v[format::kSampleRssBytes], v[format::kSampleHeapObjects],
                     v[format::kSampleAllocBytes], v[format::kSampleFreedBytes]);
    }
    Commit(path + ".timer", text);
    text.clear();
    for (const auto& c : s.states)
      fmt::format_to(std::back_inserter(text), "{}:{}\n", ctx_->clock.MonotonicNs(c.tsc), model::StateName(c.state));
    Commit(path + ".state", text);
  }
  void Commit(const std::string& path, const std::string& text) {
    OutputFile f;
    Status s = f.Open(path);
    if (s.ok()) {
      f.Write(text);
      s = f.Commit();
    }
    Keep(std::move(s));
  }
  void Keep(Status s) {  // the first error is the one End reports
    if (!s.ok() && error_.ok()) error_ = std::move(s);
  }
  // Starts a line "TS:" in the thread's file and returns its buffer.
  std::string& Line(int64_t ts) {
    last_ = std::max(last_, ts);  // non-decreasing, even if the TSC stepped back
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits, last_).ptr;  // fmt here cost half the export
    *end++ = ':';
    std::string& out = file_->buffer();
    out.append(digits, static_cast<size_t>(end - digits));
    return out;
  }

  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  std::unique_ptr<OutputFile> file_;  // the thread's
  Status error_;
  int64_t last_ = 0;
};

}  // namespace

std::unique_ptr<model::TraceSink> MakeNanoscopeSink(const ExportOptions& o) { return std::make_unique<NanoscopeSink>(o); }

}  // namespace lookback::exporters
