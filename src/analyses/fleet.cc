#include "analyses/fleet.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "model/samples.h"
#include "symbolize/symbolizer.h"

namespace lookback::analyses::fleet {
namespace {

using ColumnType = CellType;
constexpr ColumnType kI32 = ColumnType::kInt32, kI64 = ColumnType::kInt64, kStr = ColumnType::kString;

// name, type, nullable, dictionary, partition. Times are nanoseconds: *_ns on
// the dump's CLOCK_MONOTONIC, time_ns on CLOCK_REALTIME (Unix epoch).
constexpr ColumnDef kDumpsColumns[] = {
    {"schema_version", kI32, false, false, false},
    {"dump_id", kI64, false, false, false},
    {"host", kStr, false, true, false},
    {"program", kStr, false, true, true},
    {"day", kStr, false, true, true},
    {"build_id", kStr, true, true, false},
    {"pid", kI64, false, false, false},
    {"exe", kStr, true, true, false},
    {"cmdline", kStr, true, false, false},
    {"reason", kStr, true, false, false},
    {"trigger_detector", kStr, true, true, false},
    {"trigger_subject", kStr, true, false, false},
    {"trigger_tid", kI64, true, false, false},
    {"time_ns", kI64, false, false, false},
    {"dump_ns", kI64, false, false, false},
    {"origin_ns", kI64, false, false, false},
    {"window_start_ns", kI64, true, false, false},
    {"window_end_ns", kI64, true, false, false},
    {"lookback_version", kStr, true, true, false},
    {"file", kStr, true, false, false},
};
constexpr ColumnDef kThreadsColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"thread_id", kI32, false, false, false},
    {"tid", kI64, false, false, false},
    {"name", kStr, false, true, false},
    {"start_ns", kI64, true, false, false},
    {"end_ns", kI64, true, false, false},
    {"exited", kI32, false, false, false},
    {"calls", kI64, false, false, false},
    {"start_cut", kI64, false, false, false},
    {"unwound", kI64, false, false, false},
    {"open", kI64, false, false, false},
    {"unmatched_exits", kI64, false, false, false},
    {"lost_records", kI64, false, false, false},
    // Of its traced span (first to last call), on CPU (NULL: no CPU
    // readings); waited: under 2 % of it on CPU, and with the dump's other
    // such threads under 2 % of its CPU time (model::StillOnlyWaited);
    // housekeeping: a JVM's own thread (model/waiting.h). Queries that rank
    // work leave out threads with either set.
    {"cpu_ns", kI64, true, false, false},
    {"waited", kI32, false, false, false},
    {"housekeeping", kI32, false, false, false},
};
constexpr size_t kThreadsWaited = 14, kThreadsHousekeeping = 15;
static_assert(std::string_view(kThreadsColumns[kThreadsWaited].name) == "waited");
static_assert(std::string_view(kThreadsColumns[kThreadsHousekeeping].name) == "housekeeping");
constexpr ColumnDef kFunctionsColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"function_id", kI32, false, false, false},
    {"key", kI64, false, false, false},
    {"name", kStr, false, true, false},
    {"module", kStr, true, true, false},
    {"build_id", kStr, true, true, false},
    {"file", kStr, true, true, false},
    {"line", kI32, true, false, false},
};
constexpr ColumnDef kCallsColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"call_id", kI64, false, false, false},
    {"thread_id", kI32, false, true, false},
    {"function_id", kI32, false, true, false},
    {"start_ns", kI64, false, false, false},
    {"duration_ns", kI64, false, false, false},
    {"self_ns", kI64, false, false, false},
    {"depth", kI32, false, true, false},
    {"parent", kI64, true, false, false},
    {"flags", kI32, false, true, false},
    // Of duration_ns and self_ns, on CPU (model/cpu_time.h): the rest waited.
    {"cpu_ns", kI64, false, false, false},
    {"self_cpu_ns", kI64, false, false, false},
};
constexpr ColumnDef kSamplesColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"thread_id", kI32, false, true, false},
    {"ts_ns", kI64, false, false, false},
    {"cpu_ns", kI64, false, false, false},
    {"minor_faults", kI64, false, false, false},
    {"major_faults", kI64, false, false, false},
    {"voluntary_switches", kI64, false, false, false},
    {"involuntary_switches", kI64, false, false, false},
    {"rss_bytes", kI64, false, false, false},
    {"heap_bytes", kI64, true, false, false},
    {"heap_objects", kI64, true, false, false},
    {"alloc_bytes", kI64, true, false, false},
    {"freed_bytes", kI64, true, false, false},
};
constexpr ColumnDef kThreadStatesColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"thread_id", kI32, false, true, false},
    {"start_ns", kI64, false, false, false},
    {"duration_ns", kI64, false, false, false},
    {"state", kStr, false, true, false},
    {"code", kStr, false, true, false},
};
constexpr ColumnDef kSignatureMatchesColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"signature", kStr, false, true, false},
    {"chain", kStr, false, true, false},
    {"matches", kI64, false, false, false},
    {"open", kI64, false, false, false},
    {"total_ns", kI64, false, false, false},
    {"max_ns", kI64, false, false, false},
    {"worst_tid", kI64, true, false, false},
    {"worst_thread", kStr, true, true, false},
    {"worst_start_ns", kI64, true, false, false},
    {"worst_stack", kStr, true, false, false},
};
// The functions the overhead budget shed (runtime/budget.h): their calls
// are not in `calls` from shed_ns to until_ns (NULL: to the dump), and
// their time is in their callers' self time.
constexpr ColumnDef kShedColumns[] = {
    {"dump_id", kI64, false, true, false},
    {"function_id", kI32, false, false, false},
    {"shed_ns", kI64, false, false, false},
    {"until_ns", kI64, true, false, false},
    {"calls_per_s", kI64, false, false, false},
    {"mean_ns", kI64, true, false, false},
    {"tid", kI64, false, false, false},
};

const TableDef kTables[kTableCount] = {
    {"dumps", kDumpsColumns},   {"threads", kThreadsColumns},             {"functions", kFunctionsColumns},
    {"calls", kCallsColumns},   {"samples", kSamplesColumns},             {"thread_states", kThreadStatesColumns},
    {"signature_matches", kSignatureMatchesColumns}, {"shed", kShedColumns},
};

uint64_t Fnv1a(uint64_t h, std::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string MetadataOr(const format::Dump& d, const char* key, const std::string& fallback) {
  auto it = d.metadata.find(key);
  return it == d.metadata.end() ? fallback : it->second;
}

// The module of a native key, for the function's build id.
const format::ModuleInfo* ModuleOf(const format::Dump& d, uint64_t key) {
  for (const auto& m : d.modules) {
    if (key >= m.lo && key < m.hi) return &m;
  }
  return nullptr;
}

}  // namespace

const TableDef& TableOf(Table t) { return kTables[t]; }

DumpIdentity IdentityOf(const format::Dump& d) {
  DumpIdentity id;
  id.host = MetadataOr(d, format::metadata::kHost, "");
  id.program = d.process.name.empty() ? "unknown" : d.process.name;
  if (!d.modules.empty() && !d.modules[0].build_id.empty()) id.build_id = format::HexBuildId(d.modules[0].build_id);
  const std::string key = fmt::format("{}\n{}\n{}\n{}\n{}", id.host, d.process.pid, d.process.dump_seq,
                                      d.process.dump_realtime_ns, d.process.dump_tsc);
  id.dump_id = static_cast<int64_t>(Fnv1a(0xcbf29ce484222325ull, key) >> 1);  // non-negative in every engine
  const time_t secs = static_cast<time_t>(d.process.dump_realtime_ns / 1000000000ull);
  struct tm utc = {};
  gmtime_r(&secs, &utc);
  id.day = fmt::format("{:04}-{:02}-{:02}", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday);
  return id;
}

FleetRows::FleetRows(TableSink& out, FleetOptions options) : out_(out), options_(std::move(options)) {
  if (options_.signatures != nullptr) matcher_ = std::make_unique<SignatureMatcher>(*options_.signatures);
}

FleetRows::~FleetRows() = default;

void FleetRows::Put(Table t, std::span<const Value> values) {
  if (!error_.ok()) return;
  error_ = out_.Row(t, values);
}

Status FleetRows::Begin(const model::ExportContext& ctx) {
  ctx_ = &ctx;
  const format::Dump& d = *ctx.dump;
  id_ = IdentityOf(d);
  waits_ = model::WaitFunctions(d, options_.wait_globs);
  jvm_ = model::IsJvmDump(d);
  if (matcher_) {
    if (Status s = matcher_->Begin(ctx); !s.ok()) return s;
  }
  const std::string version = MetadataOr(d, format::metadata::kLookbackVersion, "");
  auto opt_int = [](const std::optional<int64_t>& v) { return v ? Value::Int(*v) : Value::Null(); };
  const std::optional<format::TriggerInfo>& t = d.trigger;
  const Value row[] = {
      Value::Int(kSchemaVersion),
      Value::Int(id_.dump_id),
      Value::Text(id_.host),
      Value::Text(id_.program),
      Value::Text(id_.day),
      Value::OptionalText(id_.build_id),
      Value::Int(d.process.pid),
      Value::OptionalText(d.process.exe),
      Value::OptionalText(d.process.cmdline),
      Value::OptionalText(d.process.reason),
      t ? Value::Text(t->detector) : Value::Null(),
      t ? Value::OptionalText(t->subject) : Value::Null(),
      t && t->tid != 0 ? Value::Int(t->tid) : Value::Null(),
      Value::Int(static_cast<int64_t>(d.process.dump_realtime_ns)),
      Value::Int(ctx.dump_ns),
      Value::Int(ctx.origin_ns),
      opt_int(options_.window_start_ns),
      opt_int(options_.window_end_ns),
      Value::OptionalText(version),
      Value::OptionalText(options_.file),
  };
  static_assert(std::size(row) == std::size(kDumpsColumns));
  Put(kDumps, row);
  for (const format::ShedInfo& f : d.budget.shed) {
    const Value shed[] = {
        Value::Int(id_.dump_id),
        Value::Int(FunctionId(f.key)),
        Value::Int(static_cast<int64_t>(f.at_ns)),
        f.until_ns != 0 ? Value::Int(static_cast<int64_t>(f.until_ns)) : Value::Null(),
        Value::Int(static_cast<int64_t>(f.calls_per_s)),
        f.mean_ns != 0 ? Value::Int(static_cast<int64_t>(f.mean_ns)) : Value::Null(),
        Value::Int(f.tid),
    };
    static_assert(std::size(shed) == std::size(kShedColumns));
    Put(kShed, shed);
  }
  return error_;
}

int64_t FleetRows::FunctionId(uint64_t key) {
  // A direct-mapped cache in front of the map: one lookup per call entered.
  IdSlot& slot = id_cache_[(key ^ (key >> 12)) % std::size(id_cache_)];
  if (slot.key == key) return slot.id;
  auto [it, added] = function_ids_.try_emplace(key, static_cast<int64_t>(function_ids_.size() + 1));
  slot = {key, it->second};
  if (!added) return it->second;
  ++stats_.functions;
  const symbolize::Symbol& sym = ctx_->symbols->Lookup(key);
  const format::ModuleInfo* m = ModuleOf(*ctx_->dump, key);
  const std::string build_id = m != nullptr ? format::HexBuildId(m->build_id) : "";
  const Value row[] = {
      Value::Int(id_.dump_id),
      Value::Int(it->second),
      Value::Int(static_cast<int64_t>(key)),
      Value::Text(sym.name),
      Value::OptionalText(sym.module),
      Value::OptionalText(build_id),
      Value::OptionalText(sym.file),
      sym.line > 0 ? Value::Int(sym.line) : Value::Null(),
  };
  Put(kFunctions, row);
  return it->second;
}

void FleetRows::BeginThread(const format::ThreadInfo& t) {
  thread_ = &t;
  ++thread_id_;
  stack_.clear();
  waiting_.Reset(model::CpuTimeline::ForWalkedThread(*ctx_, t));
  thread_first_ = -1;
  thread_last_ = 0;
  if (matcher_) matcher_->BeginThread(t);
}

void FleetRows::Enter(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) {
  if (thread_first_ < 0) thread_first_ = ts_ns;
  const int64_t id = FunctionId(key);
  stack_.push_back({next_call_id_++, id, ts_ns, 0, flags});
  waiting_.Enter(ts_ns, waits_.IsWaitKey(key, ctx_->symbols));
  if (matcher_) matcher_->Enter(key, ts_ns, depth, flags);
}

void FleetRows::Exit(uint64_t key, int64_t ts_ns, uint32_t depth, uint8_t flags) {
  if (matcher_) matcher_->Exit(key, ts_ns, depth, flags);
  if (stack_.empty()) return;
  const Frame f = stack_.back();
  stack_.pop_back();
  const int64_t dur = ts_ns > f.start ? ts_ns - f.start : 0;
  if (!stack_.empty()) stack_.back().children += dur;
  thread_last_ = std::max(thread_last_, ts_ns);
  const model::WaitTracker::Split split = waiting_.Exit(ts_ns);
  const int64_t self = dur > f.children ? dur - f.children : 0;
  const int64_t self_wait = std::clamp<int64_t>(split.wait - split.children_wait, 0, self);
  const Value row[] = {
      Value::Int(id_.dump_id),
      Value::Int(f.id),
      Value::Int(thread_id_),
      Value::Int(f.function_id),
      Value::Int(f.start),
      Value::Int(dur),
      Value::Int(self),
      Value::Int(depth),
      stack_.empty() ? Value::Null() : Value::Int(stack_.back().id),
      Value::Int(f.flags | flags),
      Value::Int(split.total - split.wait),
      Value::Int(self - self_wait),
  };
  static_assert(std::size(row) == std::size(kCallsColumns));
  Put(kCalls, row);
  ++stats_.calls;
}

void FleetRows::PutSamples(const format::ThreadSamples& ts) {
  const model::ClockModel& clock = ctx_->clock;
  const bool alloc = (ts.flags & format::kSampleAlloc) != 0;
  static constexpr format::SampleField kFields[] = {
      format::kSampleCpuNs, format::kSampleMinorFaults, format::kSampleMajorFaults,
      format::kSampleVoluntarySwitches, format::kSampleInvoluntarySwitches, format::kSampleRssBytes,
      format::kSampleHeapBytes, format::kSampleHeapObjects, format::kSampleAllocBytes, format::kSampleFreedBytes};
  for (const auto& v : ts.samples) {
    Value row[std::size(kSamplesColumns)];
    row[0] = Value::Int(id_.dump_id);
    row[1] = Value::Int(thread_id_);
    row[2] = Value::Int(clock.MonotonicNs(v[format::kSampleTsc]));
    size_t col = 3;
    for (format::SampleField f : kFields) {
      const bool needs_alloc = f >= format::kSampleHeapBytes;
      row[col++] = needs_alloc && !alloc ? Value::Null() : Value::Int(static_cast<int64_t>(v[f]));
    }
    Put(kSamples, row);
    ++stats_.samples;
  }
  for (const model::StateSpan& span : model::StateSpans(ts, *thread_)) {
    const int64_t begin = clock.MonotonicNs(span.begin_tsc);
    const char code[1] = {span.state};
    const Value row[] = {
        Value::Int(id_.dump_id),
        Value::Int(thread_id_),
        Value::Int(begin),
        Value::Int(std::max<int64_t>(0, clock.MonotonicNs(span.end_tsc) - begin)),
        Value::Text(model::StateName(span.state)),
        Value::Text(std::string_view(code, 1)),
    };
    Put(kThreadStates, row);
    ++stats_.states;
  }
}

void FleetRows::EndThread(const model::ThreadSummary& sum) {
  if (matcher_) matcher_->EndThread(sum);
  const format::ThreadInfo& t = *thread_;
  const model::ClockModel& clock = ctx_->clock;
  const uint64_t end_tsc = t.exit_tsc != 0 ? t.exit_tsc : t.snapshot_tsc;
  // On CPU over the traced span, as report counts it (report.cc).
  const int64_t span = thread_first_ >= 0 ? thread_last_ - thread_first_ : 0;
  int64_t cpu = std::max<int64_t>(0, span - waiting_.root_wait());
  const bool known = waiting_.timeline().known();
  if (known) cpu = std::min(cpu, waiting_.timeline().OnCpu(thread_first_, thread_last_));
  const Value row[] = {
      Value::Int(id_.dump_id),
      Value::Int(thread_id_),
      Value::Int(t.tid),
      Value::Text(t.name),
      t.start_tsc != 0 ? Value::Int(clock.MonotonicNs(t.start_tsc)) : Value::Null(),
      end_tsc != 0 ? Value::Int(clock.MonotonicNs(end_tsc)) : Value::Null(),
      Value::Int(t.exit_tsc != 0 ? 1 : 0),
      Value::Int(static_cast<int64_t>(sum.slices)),
      Value::Int(static_cast<int64_t>(sum.start_cut)),
      Value::Int(static_cast<int64_t>(sum.unwound)),
      Value::Int(static_cast<int64_t>(sum.open)),
      Value::Int(static_cast<int64_t>(sum.unmatched_exits)),
      Value::Int(static_cast<int64_t>(sum.lost_records)),
      known ? Value::Int(cpu) : Value::Null(),
      Value::Int(thread_first_ >= 0 && model::OnlyWaited(cpu, span) ? 1 : 0),
      Value::Int(jvm_ && model::IsHousekeepingThread(t.name) ? 1 : 0),
  };
  static_assert(std::size(row) == std::size(kThreadsColumns));
  threads_rows_.push_back({std::vector<Value>(std::begin(row), std::end(row)), cpu});
  ++stats_.threads;
  if (const format::ThreadSamples* samples = ctx_->dump->SamplesOf(t)) PutSamples(*samples);
}

Status FleetRows::End() {
  {
    // Threads that waited most of their span are "waited" only while together
    // under 2 % of the dump's CPU time, the least busy first (report's rule).
    std::vector<model::ThreadWork> work;
    for (const PendingThread& t : threads_rows_) {
      work.push_back({t.cpu_ns, t.row[kThreadsWaited].i != 0, t.row[kThreadsHousekeeping].i != 0});
    }
    const std::vector<bool> waited = model::StillOnlyWaited(work);
    for (size_t i = 0; i < threads_rows_.size(); ++i) {
      threads_rows_[i].row[kThreadsWaited] = Value::Int(waited[i] ? 1 : 0);
      Put(kThreads, threads_rows_[i].row);
    }
    threads_rows_.clear();
  }
  if (matcher_) {
    if (Status s = matcher_->End(); !s.ok() && error_.ok()) error_ = s;
    const auto& sigs = matcher_->signatures();
    for (size_t i = 0; i < sigs.size(); ++i) {
      const SignatureStats& st = matcher_->stats()[i];
      if (st.matches == 0) continue;  // a row says "it fired here"
      std::string stack;
      for (const auto& f : st.worst.stack) stack += (stack.empty() ? "" : " > ") + std::string(WithoutParameters(f));
      const std::string chain = ChainText(sigs[i]);
      const bool worst = st.worst.dur_ns >= 0;
      const Value row[] = {
          Value::Int(id_.dump_id),
          Value::Text(sigs[i].name),
          Value::Text(chain),
          Value::Int(static_cast<int64_t>(st.matches)),
          Value::Int(static_cast<int64_t>(st.open)),
          Value::Int(st.total_ns),
          Value::Int(st.max_ns),
          worst ? Value::Int(st.worst.tid) : Value::Null(),
          worst ? Value::OptionalText(st.worst.thread) : Value::Null(),
          worst ? Value::Int(st.worst.ts_ns) : Value::Null(),
          worst ? Value::OptionalText(stack) : Value::Null(),
      };
      Put(kSignatureMatches, row);
      ++stats_.matches;
    }
  }
  return error_;
}

}  // namespace lookback::analyses::fleet
