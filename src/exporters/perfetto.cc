// Perfetto protobuf trace (a `Trace` message: repeated TracePacket, field 1),
// encoded by hand: no libprotobuf, no .proto files. Opens in ui.perfetto.dev
// and trace_processor.
//
// Packet sequences (trusted_packet_sequence_id): one for the process (1) and
// one per exported thread (2, 3, ...). Per-thread sequences let each carry its
// own TracePacketDefaults (the thread's track, so events omit track_uuid) and
// its own incremental clock: the walk delivers threads one after another, so a
// single sequence would have to step back in time between threads, which
// delta timestamps cannot express.
//
// Every sequence starts with a packet flagged SEQ_INCREMENTAL_STATE_CLEARED
// that holds a ClockSnapshot (sequence-scoped clock 64, incremental, ns,
// equal to CLOCK_MONOTONIC ctx.origin_ns at the snapshot) and the
// TracePacketDefaults (timestamp_clock_id 64, track_event_defaults.track_uuid).
// Every later packet is flagged SEQ_NEEDS_INCREMENTAL_STATE and its timestamp
// is the delta from the previous timestamped packet of its sequence. The first
// snapshot of the file also sets primary_trace_clock = MONOTONIC: lookback's
// times are CLOCK_MONOTONIC, and nothing in the dump relates them to BOOTTIME.
//
// Event names are interned (InternedData.event_names, TrackEvent.name_iid).
// iids are unique in the whole file (one per function key); each sequence
// re-emits an entry the first time it uses it, in the packet that uses it.
//
// A slice begin costs about 14 bytes (packet tag and length 2, timestamp
// 2-4, track_event tag and length 2, type 2, name_iid 2-3, sequence id 2,
// flags 2), an end 2-3 less: 13.0 bytes per event over a whole file of a
// million events (the tests measure and print it).
//
// Samples (lookback record --sample) go on one more sequence per thread,
// after the thread's slices: counter tracks under the thread (TrackDescriptor
// with a CounterDescriptor; TrackEvent TYPE_COUNTER with counter_value or
// double_counter_value): "CPU %" (the share of each interval between two
// samples, at the interval's start), the cumulative minor and major faults
// and voluntary and involuntary context switches (exactly the values of the
// Nanoscope .timer file), RSS, and with allocation counting the heap bytes
// and objects and the bytes the thread allocated and freed. The state
// timeline is a slice track "state" under the thread, one slice per state.
//
// Field numbers, from protos/perfetto/trace/: trace_packet.proto,
// clock_snapshot.proto, trace_packet_defaults.proto,
// interned_data/interned_data.proto and track_event/*.proto.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/waiting.h"
#include "exporters/exporters.h"
#include "exporters/output.h"
#include "model/cpu_time.h"
#include "model/samples.h"

namespace lookback::exporters {
namespace {

// ---- protobuf wire format ----------------------------------------------------

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2 };

// Encoded into a local buffer and appended once: byte-wise push_back was
// half of the exporter's time on a 50 M-event dump.
inline void PutVarint(std::string* out, uint64_t v) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

void PutTag(std::string* out, uint32_t field, WireType type) { PutVarint(out, (uint64_t{field} << 3) | type); }

void PutVarintField(std::string* out, uint32_t field, uint64_t v) {
  PutTag(out, field, kVarint);
  PutVarint(out, v);
}

void PutDoubleField(std::string* out, uint32_t field, double v) {
  PutTag(out, field, kFixed64);
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

void PutBytesField(std::string* out, uint32_t field, std::string_view bytes) {
  PutTag(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

// ---- field numbers -------------------------------------------------------------

namespace trace {
constexpr uint32_t kPacket = 1;
}
namespace packet {  // TracePacket
constexpr uint32_t kClockSnapshot = 6;
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kTrustedPacketSequenceId = 10;
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTracePacketDefaults = 59;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint64_t kSeqIncrementalStateCleared = 1;
constexpr uint64_t kSeqNeedsIncrementalState = 2;
}  // namespace packet
namespace clock_snapshot {  // ClockSnapshot, ClockSnapshot.Clock
constexpr uint32_t kClocks = 1;
constexpr uint32_t kPrimaryTraceClock = 2;
constexpr uint32_t kClockId = 1;
constexpr uint32_t kClockTimestamp = 2;
constexpr uint32_t kIsIncremental = 3;
constexpr uint64_t kBuiltinMonotonic = 3;
constexpr uint64_t kSequenceClock = 64;  // first sequence-scoped clock id
}  // namespace clock_snapshot
namespace defaults {  // TracePacketDefaults, TrackEventDefaults
constexpr uint32_t kTimestampClockId = 58;
constexpr uint32_t kTrackEventDefaults = 11;
constexpr uint32_t kTrackUuid = 11;
}  // namespace defaults
namespace track_descriptor {  // TrackDescriptor, ProcessDescriptor, ThreadDescriptor
constexpr uint32_t kUuid = 1;
constexpr uint32_t kName = 2;
constexpr uint32_t kProcess = 3;
constexpr uint32_t kCounter = 8;
constexpr uint32_t kCounterUnit = 3;        // CounterDescriptor.unit
constexpr uint64_t kUnitSizeBytes = 3;
constexpr uint32_t kThread = 4;
constexpr uint32_t kParentUuid = 5;
constexpr uint32_t kProcessPid = 1;
constexpr uint32_t kProcessName = 6;
constexpr uint32_t kThreadPid = 1;
constexpr uint32_t kThreadTid = 2;
constexpr uint32_t kThreadName = 5;
}  // namespace track_descriptor
namespace track_event {  // TrackEvent
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kName = 23;
constexpr uint32_t kCounterValue = 30;
constexpr uint32_t kDoubleCounterValue = 44;
constexpr uint64_t kTypeSliceBegin = 1;
constexpr uint64_t kTypeSliceEnd = 2;
constexpr uint64_t kTypeInstant = 3;
constexpr uint64_t kTypeCounter = 4;
}  // namespace track_event
namespace debug_annotation {  // DebugAnnotation
constexpr uint32_t kUintValue = 3;
constexpr uint32_t kStringValue = 6;
constexpr uint32_t kName = 10;
}  // namespace debug_annotation
namespace interned {  // InternedData, EventName
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kIid = 1;
constexpr uint32_t kName = 2;
}  // namespace interned

constexpr uint32_t kProcessSequence = 1;
constexpr uint32_t kSampleSequenceBase = 1u << 20;  // + thread index: the thread's samples

// ---- the sink ------------------------------------------------------------------

class PerfettoSink : public model::TraceSink {
 public:
  explicit PerfettoSink(ExportOptions o) : o_(std::move(o)) {}

  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    static const format::Dump kNoDump;  // driven by hand without a dump
    waits_ = model::WaitFunctions(ctx.dump != nullptr ? *ctx.dump : kNoDump, {});
    const format::ProcessInfo& p = ctx.dump->process;
    // uuids only need to be unique within the file; the pid in the high half
    // keeps them apart if traces of several processes are loaded together.
    process_uuid_ = (uint64_t{p.pid} << 32) | 0xffffffffu;
    if (Status s = file_.Open(o_.out); !s.ok()) return s;

    StartSequence(kProcessSequence, /*track_uuid=*/0, /*primary_clock=*/true);

    std::string process;
    PutVarintField(&process, track_descriptor::kProcessPid, p.pid);
    if (!p.name.empty()) PutBytesField(&process, track_descriptor::kProcessName, p.name);
    std::string desc;
    PutVarintField(&desc, track_descriptor::kUuid, process_uuid_);
    PutBytesField(&desc, track_descriptor::kProcess, process);
    BeginPacket();
    PutBytesField(&packet_, packet::kTrackDescriptor, desc);
    EndPacket();

    // The dump itself: an instant on the process track at the trigger time.
    std::string event;
    PutVarintField(&event, track_event::kType, track_event::kTypeInstant);
    PutVarintField(&event, track_event::kTrackUuid, process_uuid_);
    PutBytesField(&event, track_event::kName, "lookback dump: " + p.reason);
    PutStringAnnotation(&event, "reason", p.reason);
    PutUintAnnotation(&event, "dump_seq", p.dump_seq);
    if (p.dump_realtime_ns != 0) PutUintAnnotation(&event, "dump_realtime_ns", p.dump_realtime_ns);
    if (const auto& t = ctx.dump->trigger) {
      PutStringAnnotation(&event, "detector", t->detector);
      if (t->tid != 0) PutUintAnnotation(&event, "trigger_tid", t->tid);
    }
    BeginPacket();
    PutTimestamp(ctx.dump_ns);
    PutBytesField(&packet_, packet::kTrackEvent, event);
    EndPacket();
    return Status::Ok();
  }

  void BeginThread(const format::ThreadInfo& t) override {
    thread_ = &t;
    waiting_.Reset(model::CpuTimeline::ForWalkedThread(*ctx_, t));
    ++thread_index_;
    const uint64_t uuid = (uint64_t{ctx_->dump->process.pid} << 32) | thread_index_;
    StartSequence(kProcessSequence + thread_index_, uuid, /*primary_clock=*/false);

    std::string thread;
    PutVarintField(&thread, track_descriptor::kThreadPid, ctx_->dump->process.pid);
    PutVarintField(&thread, track_descriptor::kThreadTid, t.tid);
    if (!t.name.empty()) PutBytesField(&thread, track_descriptor::kThreadName, t.name);
    std::string desc;
    PutVarintField(&desc, track_descriptor::kUuid, uuid);
    PutVarintField(&desc, track_descriptor::kParentUuid, process_uuid_);
    PutBytesField(&desc, track_descriptor::kThread, thread);
    BeginPacket();
    PutBytesField(&packet_, packet::kTrackDescriptor, desc);
    EndPacket();

    // The trigger, on the track of the thread it is about.
    const auto& trig = ctx_->dump->trigger;
    if (trig && trig->tid == t.tid && trig->tsc != 0) {
      std::string event;
      PutVarintField(&event, track_event::kType, track_event::kTypeInstant);
      PutBytesField(&event, track_event::kName, "lookback trigger: " + trig->detector);
      PutStringAnnotation(&event, "subject", trig->subject);
      if (trig->measured_ns) PutUintAnnotation(&event, "measured_ns", trig->measured_ns);
      if (trig->threshold_ns) PutUintAnnotation(&event, "threshold_ns", trig->threshold_ns);
      if (trig->signal) PutUintAnnotation(&event, "signal", trig->signal);
      BeginPacket();
      PutTimestamp(ctx_->clock.MonotonicNs(trig->tsc));
      PutBytesField(&packet_, packet::kTrackEvent, event);
      EndPacket();
    }
  }

  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t flags) override {
    auto [it, added] = iids_.try_emplace(key, static_cast<uint64_t>(iids_.size() + 1));
    const uint64_t iid = it->second;
    if (added) emitted_on_.push_back(0);
    BeginPacket();
    PutTimestamp(ts);
    if (emitted_on_[iid - 1] != sequence_) {  // first use on this sequence: define it here
      emitted_on_[iid - 1] = sequence_;
      scratch_.clear();
      PutVarintField(&scratch_, interned::kIid, iid);
      PutBytesField(&scratch_, interned::kName, KeyName(*ctx_, key));
      std::string names;
      PutBytesField(&names, interned::kEventNames, scratch_);
      PutBytesField(&packet_, packet::kInternedData, names);
    }
    waiting_.Enter(ts, waits_.IsWaitKey(key, ctx_->symbols));
    event_.clear();
    PutVarintField(&event_, track_event::kType, track_event::kTypeSliceBegin);
    PutVarintField(&event_, track_event::kNameIid, iid);
    if (flags & model::kSliceStartCut) PutStringAnnotation(&event_, "lookback", "entered before the window");
    PutBound(&event_, "start_bound_ns");
    PutBytesField(&packet_, packet::kTrackEvent, event_);
    EndPacket();
  }

  static constexpr int64_t kSplitSliceNs = 1'000'000;
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t flags) override {
    BeginPacket();
    PutTimestamp(ts);
    event_.clear();
    PutVarintField(&event_, track_event::kType, track_event::kTypeSliceEnd);
    // Arguments of an end event are merged into its slice's: the call's time
    // on CPU and waiting (model/cpu_time.h), where anything is known of it,
    // for slices long enough to see in a timeline (the split of a shorter
    // one is the readings' average, and two annotations would double the
    // bytes of a busy thread's events).
    const model::WaitTracker::Split split = waiting_.Exit(ts);
    if (split.total >= kSplitSliceNs && (waiting_.timeline().known() || split.wait != 0)) {
      PutUintAnnotation(&event_, "cpu_ns", static_cast<uint64_t>(split.total - split.wait));
      PutUintAnnotation(&event_, "wait_ns", static_cast<uint64_t>(split.wait));
    }
    if (flags & model::kSliceOpen) PutStringAnnotation(&event_, "lookback", "still running at the dump");
    if (flags & model::kSliceUnwound) PutStringAnnotation(&event_, "lookback", "exit never came (exception or longjmp)");
    PutBound(&event_, "end_bound_ns");
    PutBytesField(&packet_, packet::kTrackEvent, event_);
    EndPacket();
  }

  // Fast clock: the slice's start or end lies within this many ns of where
  // it is drawn (its bound's width; the placement is inside the bound).
  void EventBound(int64_t lo_ns, int64_t hi_ns) override { bound_ns_ = hi_ns - lo_ns; }
  void PutBound(std::string* event, std::string_view name) {
    if (bound_ns_ > 0) PutUintAnnotation(event, name, static_cast<uint64_t>(bound_ns_));
    bound_ns_ = 0;
  }

  void EndThread(const model::ThreadSummary&) override {
    if (const format::ThreadSamples* s = ctx_->dump->SamplesOf(*thread_)) {
      EmitSamples(*thread_, *s);
    } else {
      EmitCpuReadings(*thread_);
    }
  }

  Status End() override {
    return file_.Commit();
  }

 private:
  // The samples and states of one thread, on a sequence of their own (see the top of this file).
  void EmitSamples(const format::ThreadInfo& t, const format::ThreadSamples& s) {
    const uint64_t pid = ctx_->dump->process.pid;
    const uint64_t thread_uuid = (pid << 32) | thread_index_;
    auto track_uuid = [&](uint32_t k) { return (pid << 32) | (1u << 31) | (uint64_t{thread_index_} << 4) | k; };
    StartSequence(kSampleSequenceBase + thread_index_, 0, /*primary_clock=*/false);
    const bool alloc = (s.flags & format::kSampleAlloc) != 0;
    struct Counter {
      const char* name;
      format::SampleField field;  // kSampleFields: CPU %
      bool bytes;
      bool needs_alloc;
    };
    static const Counter kCounters[] = {
        {"CPU %", format::kSampleFields, false, false},
        {"minor faults", format::kSampleMinorFaults, false, false},
        {"major faults", format::kSampleMajorFaults, false, false},
        {"voluntary context switches", format::kSampleVoluntarySwitches, false, false},
        {"involuntary context switches", format::kSampleInvoluntarySwitches, false, false},
        {"RSS", format::kSampleRssBytes, true, false},
        {"heap bytes", format::kSampleHeapBytes, true, true},
        {"heap objects", format::kSampleHeapObjects, false, true},
        {"allocated bytes", format::kSampleAllocBytes, true, true},
        {"freed bytes", format::kSampleFreedBytes, true, true},
    };
    constexpr uint32_t kStateTrack = 15;
    auto describe = [&](uint64_t uuid, std::string_view name, bool counter, bool bytes) {
      std::string desc;
      PutVarintField(&desc, track_descriptor::kUuid, uuid);
      PutBytesField(&desc, track_descriptor::kName, name);
      PutVarintField(&desc, track_descriptor::kParentUuid, thread_uuid);
      if (counter) {
        std::string c;
        if (bytes) PutVarintField(&c, track_descriptor::kCounterUnit, track_descriptor::kUnitSizeBytes);
        PutBytesField(&desc, track_descriptor::kCounter, c);
      }
      BeginPacket();
      PutBytesField(&packet_, packet::kTrackDescriptor, desc);
      EndPacket();
    };
    for (uint32_t k = 0; k < std::size(kCounters); ++k) {
      if (kCounters[k].needs_alloc && !alloc) continue;
      describe(track_uuid(k), kCounters[k].name, true, kCounters[k].bytes);
    }
    if (!s.states.empty()) describe(track_uuid(kStateTrack), "state", false, false);

    // Samples and state spans merged in time order: a sequence's timestamps only go forward.
    const std::vector<model::StateSpan> spans = model::StateSpans(s, t);
    struct Item {
      int64_t ts;
      int kind;  // 0 state end, 1 state begin, 2 sample (ends sort first at equal times)
      size_t index;
    };
    std::vector<Item> items;
    for (size_t i = 0; i < s.samples.size(); ++i)
      items.push_back({ctx_->clock.MonotonicNs(s.samples[i][format::kSampleTsc]), 2, i});
    for (size_t i = 0; i < spans.size(); ++i) {
      items.push_back({ctx_->clock.MonotonicNs(spans[i].begin_tsc), 1, i});
      items.push_back({ctx_->clock.MonotonicNs(spans[i].end_tsc), 0, i});
    }
    std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      return a.ts != b.ts ? a.ts < b.ts : a.kind < b.kind;
    });
    for (const Item& it : items) {
      if (it.kind != 2) {
        event_.clear();
        PutVarintField(&event_, track_event::kType, it.kind == 1 ? track_event::kTypeSliceBegin : track_event::kTypeSliceEnd);
        PutVarintField(&event_, track_event::kTrackUuid, track_uuid(kStateTrack));
        if (it.kind == 1) PutBytesField(&event_, track_event::kName, model::StateName(spans[it.index].state));
        BeginPacket();
        PutTimestamp(it.ts);
        PutBytesField(&packet_, packet::kTrackEvent, event_);
        EndPacket();
        continue;
      }
      const auto& v = s.samples[it.index];
      for (uint32_t k = 0; k < std::size(kCounters); ++k) {
        const Counter& c = kCounters[k];
        if (c.needs_alloc && !alloc) continue;
        // CPU % of the interval that starts at this sample (none after the last one).
        if (c.field == format::kSampleFields && it.index + 1 >= s.samples.size()) continue;
        event_.clear();
        PutVarintField(&event_, track_event::kType, track_event::kTypeCounter);
        PutVarintField(&event_, track_event::kTrackUuid, track_uuid(k));
        if (c.field == format::kSampleFields) {
          // A share over 1 is the two clocks read a moment apart (a sample
          // preempted between its TSC and its CPU time), not more than a CPU.
          PutDoubleField(&event_, track_event::kDoubleCounterValue,
                         100.0 * std::min(1.0, model::CpuShare(v, s.samples[it.index + 1], ctx_->clock)));
        } else {
          PutVarintField(&event_, track_event::kCounterValue, v[c.field]);
        }
        BeginPacket();
        PutTimestamp(it.ts);
        PutBytesField(&packet_, packet::kTrackEvent, event_);
        EndPacket();
      }
    }
  }

  // A thread without samples: the control thread's CPU readings (CPU
  // section) as a "CPU %" counter, on a sequence of its own like samples.
  void EmitCpuReadings(const format::ThreadInfo& t) {
    const format::ThreadCpu* c = nullptr;
    for (const auto& tc : ctx_->dump->cpu) {
      if (&ctx_->dump->threads[tc.thread_index] == &t) c = &tc;
    }
    if (c == nullptr || c->readings.size() < 2) return;
    const uint64_t pid = ctx_->dump->process.pid;
    const uint64_t thread_uuid = (pid << 32) | thread_index_;
    const uint64_t uuid = (pid << 32) | (1u << 31) | (uint64_t{thread_index_} << 4);  // the samples' "CPU %" track
    StartSequence(kSampleSequenceBase + thread_index_, 0, /*primary_clock=*/false);
    std::string desc;
    PutVarintField(&desc, track_descriptor::kUuid, uuid);
    PutBytesField(&desc, track_descriptor::kName, "CPU %");
    PutVarintField(&desc, track_descriptor::kParentUuid, thread_uuid);
    std::string counter;
    PutBytesField(&desc, track_descriptor::kCounter, counter);
    BeginPacket();
    PutBytesField(&packet_, packet::kTrackDescriptor, desc);
    EndPacket();
    for (size_t i = 0; i + 1 < c->readings.size(); ++i) {
      const int64_t a = ctx_->clock.MonotonicNs(c->readings[i].tsc), b = ctx_->clock.MonotonicNs(c->readings[i + 1].tsc);
      if (b <= a) continue;
      const double share = static_cast<double>(c->readings[i + 1].cpu_ns - c->readings[i].cpu_ns) / static_cast<double>(b - a);
      event_.clear();
      PutVarintField(&event_, track_event::kType, track_event::kTypeCounter);
      PutVarintField(&event_, track_event::kTrackUuid, uuid);
      PutDoubleField(&event_, track_event::kDoubleCounterValue, 100.0 * std::min(share, 1.0));
      BeginPacket();
      PutTimestamp(a);
      PutBytesField(&packet_, packet::kTrackEvent, event_);
      EndPacket();
    }
  }

  // The first packet of a sequence: incremental state cleared, the clock
  // snapshot that anchors its delta timestamps, the defaults.
  void StartSequence(uint32_t sequence, uint64_t track_uuid, bool primary_clock) {
    sequence_ = sequence;
    first_on_sequence_ = true;
    last_ts_ = ctx_->origin_ns;

    std::string monotonic, incremental, snapshot;
    PutVarintField(&monotonic, clock_snapshot::kClockId, clock_snapshot::kBuiltinMonotonic);
    PutVarintField(&monotonic, clock_snapshot::kClockTimestamp, static_cast<uint64_t>(last_ts_));
    PutVarintField(&incremental, clock_snapshot::kClockId, clock_snapshot::kSequenceClock);
    PutVarintField(&incremental, clock_snapshot::kClockTimestamp, static_cast<uint64_t>(last_ts_));
    PutVarintField(&incremental, clock_snapshot::kIsIncremental, 1);
    PutBytesField(&snapshot, clock_snapshot::kClocks, monotonic);
    PutBytesField(&snapshot, clock_snapshot::kClocks, incremental);
    if (primary_clock) PutVarintField(&snapshot, clock_snapshot::kPrimaryTraceClock, clock_snapshot::kBuiltinMonotonic);

    std::string packet_defaults;
    PutVarintField(&packet_defaults, defaults::kTimestampClockId, clock_snapshot::kSequenceClock);
    if (track_uuid != 0) {
      std::string event_defaults;
      PutVarintField(&event_defaults, defaults::kTrackUuid, track_uuid);
      PutBytesField(&packet_defaults, defaults::kTrackEventDefaults, event_defaults);
    }

    BeginPacket();
    PutBytesField(&packet_, packet::kTracePacketDefaults, packet_defaults);
    PutBytesField(&packet_, packet::kClockSnapshot, snapshot);
    EndPacket();
  }

  void BeginPacket() { packet_.clear(); }

  // Sequence id and flags go last: the packet is complete, append it.
  void EndPacket() {
    PutVarintField(&packet_, packet::kTrustedPacketSequenceId, sequence_);
    PutVarintField(&packet_, packet::kSequenceFlags,
                   first_on_sequence_ ? packet::kSeqIncrementalStateCleared : packet::kSeqNeedsIncrementalState);
    first_on_sequence_ = false;
    PutBytesField(&buf_, trace::kPacket, packet_);
    file_.Drain();
  }

  // Delta from the previous timestamp of the sequence. Times that step back
  // (a TSC that went backwards, a dump time before the first event) are
  // clamped: deltas are unsigned.
  void PutTimestamp(int64_t ts) {
    ts = std::max(ts, last_ts_);
    PutVarintField(&packet_, packet::kTimestamp, static_cast<uint64_t>(ts - last_ts_));
    last_ts_ = ts;
  }

  static void PutStringAnnotation(std::string* event, std::string_view name, std::string_view value) {
    std::string a;
    PutBytesField(&a, debug_annotation::kName, name);
    PutBytesField(&a, debug_annotation::kStringValue, value);
    PutBytesField(event, track_event::kDebugAnnotations, a);
  }
  static void PutUintAnnotation(std::string* event, std::string_view name, uint64_t value) {
    std::string a;
    PutBytesField(&a, debug_annotation::kName, name);
    PutVarintField(&a, debug_annotation::kUintValue, value);
    PutBytesField(event, track_event::kDebugAnnotations, a);
  }


  ExportOptions o_;
  const model::ExportContext* ctx_ = nullptr;
  OutputFile file_;
  std::string& buf_ = file_.buffer();  // the file's own: packets go straight into it
  std::string packet_, event_, scratch_;
  model::WaitTracker waiting_;  // the thread being walked
  model::WaitFunctions waits_;
  uint64_t process_uuid_ = 0;
  uint32_t thread_index_ = 0;
  const format::ThreadInfo* thread_ = nullptr;
  uint32_t sequence_ = 0;
  bool first_on_sequence_ = false;
  int64_t bound_ns_ = 0;  // EventBound's width, for the next Enter or Exit
  int64_t last_ts_ = 0;
  std::unordered_map<uint64_t, uint64_t> iids_;  // function key -> iid (1-based)
  std::vector<uint32_t> emitted_on_;             // iid-1 -> last sequence that defined it
};

}  // namespace

std::unique_ptr<model::TraceSink> MakePerfettoSink(const ExportOptions& o) { return std::make_unique<PerfettoSink>(o); }

}  // namespace lookback::exporters
