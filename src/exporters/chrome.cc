// Chrome Trace Event JSON: B/E duration events per thread, microseconds with
// fractional nanoseconds, process and thread names as metadata, the dump
// itself as a global instant event. Opens in chrome://tracing and Perfetto.
#include <fmt/format.h>

#include <memory>

#include "exporters/exporters.h"
#include "exporters/json_util.h"
#include "exporters/output.h"

namespace lookback::exporters {
namespace {

class ChromeSink : public model::TraceSink {
 public:
  explicit ChromeSink(ExportOptions o) : o_(std::move(o)) {}

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    pid_ = ctx.dump->process.pid;
    if (Status s = file_.Open(o_.out); !s.ok()) return s;
    buf_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    buf_ += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", pid_, pid_);
    AppendJsonString(&buf_, ctx.dump->process.name);
    buf_ += "}}";
    buf_ += fmt::format(",\n{{\"ph\":\"i\",\"s\":\"g\",\"pid\":{},\"tid\":{},\"ts\":{},\"name\":", pid_, pid_, Us(ctx.dump_ns));
    AppendJsonString(&buf_, "lookback dump: " + ctx.dump->process.reason);
    buf_ += "}";
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo& t) override {
    tid_ = t.tid;
    buf_ += fmt::format(",\n{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", pid_, tid_);
    AppendJsonString(&buf_, t.name);
    buf_ += "}}";
    const auto& trig = ctx_->dump->trigger;
    if (trig && trig->tid == t.tid && trig->tsc != 0) {  // the trigger, on its thread
      buf_ += fmt::format(",\n{{\"ph\":\"i\",\"s\":\"t\",\"pid\":{},\"tid\":{},\"ts\":{},\"name\":", pid_, tid_,
                          Us(ctx_->clock.MonotonicNs(trig->tsc)));
      AppendJsonString(&buf_, "lookback trigger: " + trig->detector);
      buf_ += fmt::format(",\"args\":{{\"measured_ns\":{},\"threshold_ns\":{},\"subject\":", trig->measured_ns,
                          trig->threshold_ns);
      AppendJsonString(&buf_, trig->subject);
      buf_ += "}}";
    }
  }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t flags) override {
    buf_ += fmt::format(",\n{{\"ph\":\"B\",\"pid\":{},\"tid\":{},\"ts\":{},\"name\":", pid_, tid_, Us(ts));
    AppendJsonString(&buf_, KeyName(*ctx_, key));
    if (flags & model::kSliceStartCut) buf_ += ",\"args\":{\"lookback\":\"entered before the window\"}";
    buf_ += "}";
    file_.Drain();
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t flags) override {
    buf_ += fmt::format(",\n{{\"ph\":\"E\",\"pid\":{},\"tid\":{},\"ts\":{}", pid_, tid_, Us(ts));
    if (flags & model::kSliceOpen) buf_ += ",\"args\":{\"lookback\":\"still running at the dump\"}";
    if (flags & model::kSliceUnwound) buf_ += ",\"args\":{\"lookback\":\"exit never came (exception or longjmp)\"}";
    buf_ += "}";
    file_.Drain();
  }
  void EndThread(const model::ThreadSummary&) override {}
  Status End() override {
    buf_ += "\n]}\n";
    return file_.Commit();
  }

 private:
  std::string Us(int64_t ns) const {
    const int64_t rel = ns - ctx_->origin_ns;
    const int64_t a = rel < 0 ? -rel : rel;
    return fmt::format("{}{}.{:03d}", rel < 0 ? "-" : "", a / 1000, static_cast<int>(a % 1000));
  }

  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  OutputFile file_;
  std::string& buf_ = file_.buffer();  // the file's own: text goes straight into it
  uint32_t pid_ = 0, tid_ = 0;
};

}  // namespace

std::unique_ptr<model::TraceSink> MakeChromeSink(const ExportOptions& o) { return std::make_unique<ChromeSink>(o); }

}  // namespace lookback::exporters
