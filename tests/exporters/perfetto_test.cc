// `lookback convert --to perfetto` on dumps of real programs, read back with
// the minimal protobuf reader in proto_reader.h and checked against what the
// exporter was given (model::Walk on the same dump).
#include <algorithm>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "export_fixture.h"
#include "exporters/exporters.h"
#include "model/clock_model.h"
#include "model/walk.h"
#include "proto_reader.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

// Field numbers from Perfetto's protos (protos/perfetto/trace/...), written
// out here again so the test does not share the exporter's constants.
enum : uint32_t {
  kTracePacket = 1,
  // TracePacket
  kClockSnapshot = 6,
  kTimestamp = 8,
  kSequenceId = 10,
  kTrackEvent = 11,
  kInternedData = 12,
  kSequenceFlags = 13,
  kTimestampClockId = 58,
  kPacketDefaults = 59,
  kTrackDescriptor = 60,
};
constexpr uint64_t kIncrementalClock = 64;
constexpr uint64_t kMonotonic = 3;

struct TrackInfo {
  uint64_t uuid = 0, parent = 0;
  bool process = false, thread = false;
  uint64_t pid = 0, tid = 0;
  std::string name;
};

struct SliceEvent {
  bool begin;
  std::string name;  // begins only
  int64_t ts;
  std::vector<std::string> notes;  // debug annotation values, but cpu_ns and wait_ns
  std::map<std::string, std::string> split;  // cpu_ns and wait_ns (long slices, model/cpu_time.h)
};

struct Instant {
  uint64_t track;
  std::string name;
  int64_t ts;
  std::map<std::string, std::string> args;
};

struct Decoded {
  std::string error;  // first problem found, with the packet index
  size_t packets = 0, slice_events = 0, counters = 0;
  // Encoded size of the packets holding slice begin/end events, without the
  // interned names some of them carry.
  size_t event_packet_bytes = 0;
  // Of those, the timestamp fields: deltas, whose size the machine's speed
  // decides (a starved or sanitized run spaces the events wider).
  size_t event_timestamp_bytes = 0;
  uint64_t primary_clock = 0;
  std::vector<TrackInfo> tracks;  // process and thread tracks, in order of appearance
  std::vector<TrackInfo> counter_tracks;
  std::map<uint64_t, std::vector<SliceEvent>> slices;  // track uuid -> begin/end events
  std::vector<Instant> instants;
  std::map<uint64_t, std::vector<uint64_t>> flags;  // sequence -> flags of each packet
  std::map<uint64_t, std::vector<int64_t>> times;   // sequence -> timestamps
  std::map<uint64_t, uint64_t> max_depth;           // track uuid -> deepest nesting
};

struct SequenceState {
  bool cleared = false;
  bool clock_known = false;
  int64_t clock = 0;  // last value of the incremental clock
  uint64_t default_clock = 0, default_track = 0;
  std::map<uint64_t, std::string> names;  // interned event names
};

// Decodes a whole trace; stops at the first problem (Decoded::error).
Decoded DecodeTrace(std::string_view bytes) {
  Decoded out;
  std::map<uint64_t, SequenceState> seqs;
  std::map<uint64_t, std::string> all_names;  // iid -> name over the whole file: never redefined
  std::map<uint64_t, std::vector<std::string>> stacks;
  std::vector<ProtoField> top, p, sub, sub2, sub3;
  auto fail = [&](const std::string& what) {
    if (out.error.empty()) out.error = "packet " + std::to_string(out.packets) + ": " + what;
  };
  std::string err = ParseMessage(bytes, &top);
  if (!err.empty()) return fail("Trace: " + err), out;
  for (const ProtoField& tf : top) {
    if (tf.number != kTracePacket || tf.wire_type != 2) return fail("not a TracePacket field"), out;
    err = ParseMessage(tf.bytes, &p);
    if (!err.empty()) return fail(err), out;
    const ProtoField* seq_f = FindField(p, kSequenceId);
    if (seq_f == nullptr || seq_f->value == 0) return fail("no trusted_packet_sequence_id"), out;
    const uint64_t seq = seq_f->value;
    SequenceState& s = seqs[seq];
    const ProtoField* flags_f = FindField(p, kSequenceFlags);
    const uint64_t flags = flags_f ? flags_f->value : 0;
    out.flags[seq].push_back(flags);
    if (flags & 1) {
      s = SequenceState();
      s.cleared = true;
    }
    if (!s.cleared) return fail("packet before SEQ_INCREMENTAL_STATE_CLEARED on its sequence"), out;

    if (const ProtoField* d = FindField(p, kPacketDefaults)) {
      ParseMessage(d->bytes, &sub);
      if (const ProtoField* c = FindField(sub, 58)) s.default_clock = c->value;
      if (const ProtoField* te = FindField(sub, 11)) {
        ParseMessage(te->bytes, &sub2);
        if (const ProtoField* u = FindField(sub2, 11)) s.default_track = u->value;
      }
    }
    if (const ProtoField* cs = FindField(p, kClockSnapshot)) {
      if (!(err = ParseMessage(cs->bytes, &sub)).empty()) return fail("ClockSnapshot: " + err), out;
      if (const ProtoField* pc = FindField(sub, 2)) out.primary_clock = pc->value;
      int64_t monotonic = -1, incremental = -2;
      for (const ProtoField* c : FindAll(sub, 1)) {
        ParseMessage(c->bytes, &sub2);
        const ProtoField* id = FindField(sub2, 1);
        const ProtoField* ts = FindField(sub2, 2);
        const ProtoField* inc = FindField(sub2, 3);
        if (!id || !ts) return fail("clock without id or timestamp"), out;
        if (id->value == kMonotonic) monotonic = static_cast<int64_t>(ts->value);
        if (id->value == kIncrementalClock) {
          if (!inc || inc->value != 1) return fail("clock 64 is not incremental"), out;
          incremental = static_cast<int64_t>(ts->value);
        }
      }
      if (monotonic != incremental) return fail("snapshot does not tie clock 64 to MONOTONIC"), out;
      s.clock = incremental;
      s.clock_known = true;
    }
    if (const ProtoField* in = FindField(p, kInternedData)) {
      if (!(err = ParseMessage(in->bytes, &sub)).empty()) return fail("InternedData: " + err), out;
      for (const ProtoField* en : FindAll(sub, 2)) {
        ParseMessage(en->bytes, &sub2);
        const ProtoField* iid = FindField(sub2, 1);
        const ProtoField* name = FindField(sub2, 2);
        if (!iid || !name || iid->value == 0) return fail("EventName without iid or name"), out;
        s.names[iid->value] = std::string(name->bytes);
        auto [it, added] = all_names.try_emplace(iid->value, std::string(name->bytes));
        if (!added && it->second != name->bytes) return fail("iid " + std::to_string(iid->value) + " redefined"), out;
      }
    }
    int64_t ts = 0;
    if (const ProtoField* t = FindField(p, kTimestamp)) {
      const ProtoField* cid = FindField(p, kTimestampClockId);
      const uint64_t clock = cid ? cid->value : s.default_clock;
      if (clock != kIncrementalClock || !s.clock_known) return fail("timestamp not on the incremental clock"), out;
      if (t->value > (uint64_t{1} << 50)) return fail("implausible delta " + std::to_string(t->value)), out;
      s.clock += static_cast<int64_t>(t->value);
      ts = s.clock;
      out.times[seq].push_back(ts);
    }
    if (const ProtoField* td = FindField(p, kTrackDescriptor)) {
      if (!(err = ParseMessage(td->bytes, &sub)).empty()) return fail("TrackDescriptor: " + err), out;
      TrackInfo info;
      if (const ProtoField* u = FindField(sub, 1)) info.uuid = u->value;
      if (const ProtoField* u = FindField(sub, 5)) info.parent = u->value;
      if (const ProtoField* pd = FindField(sub, 3)) {
        info.process = true;
        ParseMessage(pd->bytes, &sub2);
        if (const ProtoField* f = FindField(sub2, 1)) info.pid = f->value;
        if (const ProtoField* f = FindField(sub2, 6)) info.name = std::string(f->bytes);
      }
      if (const ProtoField* th = FindField(sub, 4)) {
        info.thread = true;
        ParseMessage(th->bytes, &sub2);
        if (const ProtoField* f = FindField(sub2, 1)) info.pid = f->value;
        if (const ProtoField* f = FindField(sub2, 2)) info.tid = f->value;
        if (const ProtoField* f = FindField(sub2, 5)) info.name = std::string(f->bytes);
      }
      if (info.uuid == 0) return fail("track without uuid"), out;
      for (const auto& t : out.tracks) {
        if (t.uuid == info.uuid) return fail("track uuid defined twice"), out;
      }
      for (const auto& t : out.counter_tracks) {
        if (t.uuid == info.uuid) return fail("track uuid defined twice"), out;
      }
      // Counter tracks (a thread's "CPU %", the sampler's) apart: the checks
      // below index the process and thread tracks.
      (info.process || info.thread ? out.tracks : out.counter_tracks).push_back(info);
    }
    if (const ProtoField* te = FindField(p, kTrackEvent)) {
      if (!FindField(p, kTimestamp)) return fail("track event without timestamp"), out;
      if (!(err = ParseMessage(te->bytes, &sub)).empty()) return fail("TrackEvent: " + err), out;
      const ProtoField* type = FindField(sub, 9);
      const ProtoField* tu = FindField(sub, 11);
      const uint64_t track = tu ? tu->value : s.default_track;
      std::string name;
      if (const ProtoField* iid = FindField(sub, 10)) {
        auto it = s.names.find(iid->value);
        if (it == s.names.end()) return fail("name_iid " + std::to_string(iid->value) + " not interned"), out;
        name = it->second;
      } else if (const ProtoField* n = FindField(sub, 23)) {
        name = std::string(n->bytes);
      }
      std::vector<std::string> notes;
      std::map<std::string, std::string> args, split;
      auto field_size = [](size_t n) {  // one-byte tag, length, payload
        size_t len_bytes = 1;
        for (size_t len = n; len >= 0x80; len >>= 7) ++len_bytes;
        return 1 + len_bytes + n;
      };
      size_t split_bytes = 0;  // the cpu_ns/wait_ns annotations' (left out of event_packet_bytes)
      for (const ProtoField* da : FindAll(sub, 4)) {
        ParseMessage(da->bytes, &sub3);
        const ProtoField* k = FindField(sub3, 10);
        const ProtoField* sv = FindField(sub3, 6);
        const ProtoField* uv = FindField(sub3, 3);
        if (!k || (!sv && !uv)) return fail("debug annotation without name or value"), out;
        const std::string v = sv ? std::string(sv->bytes) : std::to_string(uv->value);
        const std::string key(k->bytes);
        if (key == "cpu_ns" || key == "wait_ns") {
          split[key] = v;
          split_bytes += field_size(da->bytes.size());
        } else {
          notes.push_back(v);
        }
        args[key] = v;
      }
      if (!type) return fail("track event without type"), out;
      if (type->value == 1 || type->value == 2) {
        out.event_packet_bytes += field_size(tf.bytes.size()) - split_bytes;
        if (const ProtoField* in = FindField(p, kInternedData)) out.event_packet_bytes -= field_size(in->bytes.size());
        if (const ProtoField* t = FindField(p, kTimestamp)) {
          size_t varint = 1;
          for (uint64_t v = t->value; v >= 0x80; v >>= 7) ++varint;
          out.event_timestamp_bytes += 1 + varint;  // tag and delta
        }
      }
      if (type->value == 1) {
        if (name.empty()) return fail("slice begin without name"), out;
        stacks[track].push_back(name);
        out.max_depth[track] = std::max<uint64_t>(out.max_depth[track], stacks[track].size());
        out.slices[track].push_back({true, name, ts, notes, split});
        ++out.slice_events;
      } else if (type->value == 2) {
        if (stacks[track].empty()) return fail("slice end without begin on track " + std::to_string(track)), out;
        stacks[track].pop_back();
        out.slices[track].push_back({false, "", ts, notes, split});
        ++out.slice_events;
      } else if (type->value == 3) {
        out.instants.push_back({track, name, ts, args});
      } else if (type->value == 4) {
        ++out.counters;  // "CPU %" and the sampler's counters (sampling_test.cc checks their values)
      } else {
        return fail("unexpected track event type " + std::to_string(type->value)), out;
      }
    }
    ++out.packets;
  }
  for (const auto& [track, stack] : stacks) {
    if (!stack.empty()) fail("track " + std::to_string(track) + " ends with " + stack.back() + " open");
  }
  return out;
}

// What the exporter was given: model::Walk on the same dump.
class RecordingSink : public model::TraceSink {
 public:
  struct Thread {
    uint32_t tid;
    std::string name;
    std::vector<SliceEvent> events;
  };
  Status Begin(const model::ExportContext& ctx) override {
    ctx_ = &ctx;
    dump_ns = ctx.dump_ns;
    origin_ns = ctx.origin_ns;
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo& t) override { threads.push_back({t.tid, t.name, {}}); }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t flags) override {
    threads.back().events.push_back({true, exporters::KeyName(*ctx_, key), ts, {}, {}});
    if (flags & model::kSliceStartCut) threads.back().events.back().notes.push_back("entered before the window");
  }
  void Exit(uint64_t, int64_t ts, uint32_t, uint8_t flags) override {
    threads.back().events.push_back({false, "", ts, {}, {}});
    if (flags & model::kSliceOpen) threads.back().events.back().notes.push_back("still running at the dump");
    if (flags & model::kSliceUnwound)
      threads.back().events.back().notes.push_back("exit never came (exception or longjmp)");
  }
  void EndThread(const model::ThreadSummary&) override {}
  Status End() override { return Status::Ok(); }

  std::vector<Thread> threads;
  int64_t dump_ns = 0, origin_ns = 0;

 private:
  const model::ExportContext* ctx_ = nullptr;
};

struct Converted {
  std::string dump, out, bytes;
  Decoded trace;
};

// Records lifecycle-gcc ARGS once per test binary run, converts to Perfetto.
const Converted& ConvertOnce(const std::string& name, const std::vector<std::string>& args) {
  static std::map<std::string, Converted> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Converted c;
  c.dump = RecordLifecycle(name, args);
  if (!c.dump.empty()) {
    c.out = c.dump + ".pftrace";
    RunResult r = Convert(c.dump, "perfetto", c.out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    c.bytes = ReadFile(c.out);
    c.trace = DecodeTrace(c.bytes);
    if (c.trace.slice_events > 0)
      printf("[ perfetto ] %s: %zu bytes, %zu packets, %zu slice events: %.2f bytes/event for the whole file, "
             "%.2f in the event packets without interned names\n",
             name.c_str(), c.bytes.size(), c.trace.packets, c.trace.slice_events,
             static_cast<double>(c.bytes.size()) / static_cast<double>(c.trace.slice_events),
             static_cast<double>(c.trace.event_packet_bytes) / static_cast<double>(c.trace.slice_events));
  }
  return cache.emplace(name, std::move(c)).first->second;
}

const TrackInfo* ThreadTrack(const Decoded& t, uint64_t tid, const std::string& name) {
  for (const auto& tr : t.tracks) {
    if (tr.thread && tr.tid == tid && tr.name == name) return &tr;
  }
  return nullptr;
}

// Slices (name paths) of a track: "outer/middle/thrower" for each begin.
std::vector<std::string> Paths(const std::vector<SliceEvent>& events) {
  std::vector<std::string> stack, out;
  for (const auto& e : events) {
    if (e.begin) {
      stack.push_back(e.name);
      std::string path;
      for (const auto& s : stack) path += (path.empty() ? "" : "/") + s;
      out.push_back(path);
    } else if (!stack.empty()) {
      stack.pop_back();
    }
  }
  return out;
}

int CountSuffix(const std::vector<std::string>& paths, const std::string& suffix) {
  int n = 0;
  for (const auto& p : paths) n += p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0;
  return n;
}

// The checks every converted dump must pass.
void CheckAgainstDump(const Converted& c) {
  ASSERT_FALSE(c.bytes.empty());
  ASSERT_EQ(c.trace.error, "");
  const format::Dump d = MustOpen(c.dump);

  // One process track, then one thread track per thread, children of it.
  ASSERT_FALSE(c.trace.tracks.empty());
  const TrackInfo& proc = c.trace.tracks[0];
  EXPECT_TRUE(proc.process);
  EXPECT_EQ(proc.pid, d.process.pid);
  EXPECT_EQ(proc.name, d.process.name);
  ASSERT_EQ(c.trace.tracks.size(), d.threads.size() + 1);
  for (size_t i = 0; i < d.threads.size(); ++i) {
    const TrackInfo& tr = c.trace.tracks[i + 1];
    EXPECT_TRUE(tr.thread);
    EXPECT_EQ(tr.parent, proc.uuid);
    EXPECT_EQ(tr.pid, d.process.pid);
    EXPECT_EQ(tr.tid, d.threads[i].tid);
    EXPECT_EQ(tr.name, d.threads[i].name);
  }

  // Sequences: the process's, then one per thread; the first packet clears
  // the incremental state, every later one needs it.
  // Threads with CPU readings (and no samples) add a sequence of their own
  // for their "CPU %" counter track.
  size_t cpu_tracks = 0;
  for (const auto& tc : d.cpu) cpu_tracks += tc.readings.size() >= 2 && d.SamplesOf(d.threads[tc.thread_index]) == nullptr;
  EXPECT_EQ(c.trace.counter_tracks.size(), cpu_tracks);
  EXPECT_EQ(c.trace.flags.size(), d.threads.size() + 1 + cpu_tracks);
  for (const auto& [seq, flags] : c.trace.flags) {
    ASSERT_FALSE(flags.empty());
    EXPECT_EQ(flags[0], 1u) << "sequence " << seq;
    for (size_t i = 1; i < flags.size(); ++i) EXPECT_EQ(flags[i], 2u) << "sequence " << seq << " packet " << i;
  }
  for (const auto& [seq, times] : c.trace.times) {
    for (size_t i = 1; i < times.size(); ++i) ASSERT_LE(times[i - 1], times[i]) << "sequence " << seq;
  }
  EXPECT_EQ(c.trace.primary_clock, kMonotonic);

  // The same slices, names and nanosecond times the exporter was given.
  symbolize::Symbolizer sym(d);
  RecordingSink want;
  model::WalkResult res = model::Walk(d, sym, {}, want);
  ASSERT_TRUE(res.status.ok());
  ASSERT_EQ(want.threads.size(), d.threads.size());
  for (size_t i = 0; i < want.threads.size(); ++i) {
    const auto& got = c.trace.slices.count(c.trace.tracks[i + 1].uuid) ? c.trace.slices.at(c.trace.tracks[i + 1].uuid)
                                                                       : std::vector<SliceEvent>{};
    const auto& exp = want.threads[i].events;
    ASSERT_EQ(got.size(), exp.size()) << "thread " << want.threads[i].name;
    int64_t last = want.origin_ns;
    for (size_t j = 0; j < exp.size(); ++j) {
      last = std::max(last, exp[j].ts);  // the exporter clamps times that step back
      ASSERT_EQ(got[j].begin, exp[j].begin) << want.threads[i].name << " event " << j;
      ASSERT_EQ(got[j].name, exp[j].name) << want.threads[i].name << " event " << j;
      ASSERT_EQ(got[j].ts, last) << want.threads[i].name << " event " << j;
      ASSERT_EQ(got[j].notes, exp[j].notes) << want.threads[i].name << " event " << j;
    }
  }

  // The dump: an instant on the process track at the dump time, with its reason.
  ASSERT_EQ(c.trace.instants.size(), 1u);
  const Instant& dump = c.trace.instants[0];
  EXPECT_EQ(dump.track, proc.uuid);
  EXPECT_EQ(dump.name, "lookback dump: " + d.process.reason);
  EXPECT_EQ(dump.args.at("reason"), d.process.reason);
  EXPECT_EQ(dump.ts, std::max(want.dump_ns, want.origin_ns));
}

TEST(Perfetto, ExceptionsDecodeToNestedInternedSlices) {
  const Converted& c = ConvertOnce("perfetto-exceptions", {"exceptions"});
  CheckAgainstDump(c);
  if (HasFatalFailure()) return;
  const format::Dump d = MustOpen(c.dump);
  const TrackInfo* main = nullptr;  // the main thread: tid == pid
  for (const auto& tr : c.trace.tracks) {
    if (tr.thread && tr.tid == d.process.pid) main = &tr;
  }
  ASSERT_NE(main, nullptr);
  const auto paths = Paths(c.trace.slices.at(main->uuid));
  EXPECT_EQ(CountSuffix(paths, "outer/middle/thrower"), 3);
  EXPECT_EQ(CountSuffix(paths, "outer/middle/thrower/leaf_work"), 3);
  EXPECT_EQ(CountSuffix(paths, "after_exceptions"), 1);
}

TEST(Perfetto, ShortThreadsGetTheirOwnTracksAndSequences) {
  const Converted& c = ConvertOnce("perfetto-short-threads", {"short-threads", "3"});
  CheckAgainstDump(c);
  if (HasFatalFailure()) return;
  const format::Dump d = MustOpen(c.dump);
  std::set<uint64_t> uuids;
  for (int i = 0; i < 3; ++i) {
    const std::string name = "short-" + std::to_string(i);
    const format::ThreadInfo* t = FindThread(d, name);
    ASSERT_NE(t, nullptr) << name;
    const TrackInfo* tr = ThreadTrack(c.trace, t->tid, name);
    ASSERT_NE(tr, nullptr) << name;
    uuids.insert(tr->uuid);
    const auto paths = Paths(c.trace.slices.at(tr->uuid));
    EXPECT_EQ(CountSuffix(paths, "thread_body/mid_work/leaf_work"), 2) << name;
  }
  EXPECT_EQ(uuids.size(), 3u);
}

// A busy program (a 10 kHz signal handler over 300 ms of calls: the ring
// wraps, so frames are cut at the window start too).
TEST(Perfetto, BusyProgramMatchesTheDumpAtUnderSixteenBytesPerEvent) {
  const Converted& c = ConvertOnce("perfetto-signals", {"signals"});
  CheckAgainstDump(c);
  if (HasFatalFailure()) return;
  ASSERT_GT(c.trace.slice_events, 10000u);
  // Descriptors, clock snapshots and interned names included.
  EXPECT_LE(static_cast<double>(c.bytes.size()) / static_cast<double>(c.trace.slice_events), 16.0);
}

// Small dumps are dominated by descriptors and interned names; without them,
// their event packets stay under 16 bytes too. The timestamps are deltas
// whose size depends on how far apart the events ran (an ASan build on a
// loaded machine spaces a small program's events wider: 16.7 bytes once):
// they are counted as what a delta under 2 ms costs (4 bytes with its tag),
// or what they took if less, so the bound is on the encoding, not the clock.
// For the same reason the cpu_ns/wait_ns split that a slice of 1 ms or more
// carries is left out (event_packet_bytes): on a loaded machine more of
// these small programs' calls last that long, and the bound failed once in
// a suite run on a 2-core machine.
TEST(Perfetto, EventPacketsStayUnderSixteenBytesPerEvent) {
  for (const auto* name : {"perfetto-exceptions", "perfetto-short-threads"}) {
    const Converted& c = ConvertOnce(name, std::string(name) == "perfetto-exceptions"
                                               ? std::vector<std::string>{"exceptions"}
                                               : std::vector<std::string>{"short-threads", "3"});
    ASSERT_GT(c.trace.slice_events, 0u) << name;
    const double events = static_cast<double>(c.trace.slice_events);
    const double timestamps = std::min(static_cast<double>(c.trace.event_timestamp_bytes), 4.0 * events);
    const double rest = static_cast<double>(c.trace.event_packet_bytes - c.trace.event_timestamp_bytes);
    EXPECT_LE((rest + timestamps) / events, 16.0)
        << name << ": " << c.trace.event_packet_bytes << " bytes, " << c.trace.event_timestamp_bytes
        << " of them timestamps, " << c.trace.slice_events << " events";
  }
}

TEST(Perfetto, ProtocDecodesTheFile) {
  RunResult which = RunProgram({"/bin/sh", "-c", "command -v protoc"});
  if (which.exit_code != 0) GTEST_SKIP() << "protoc not installed";
  for (const auto* name : {"perfetto-exceptions", "perfetto-short-threads"}) {
    const Converted& c = ConvertOnce(name, std::string(name) == "perfetto-exceptions"
                                               ? std::vector<std::string>{"exceptions"}
                                               : std::vector<std::string>{"short-threads", "3"});
    ASSERT_FALSE(c.out.empty());
    RunResult r = RunProgram({"/bin/sh", "-c", "protoc --decode_raw < '" + c.out + "' > /dev/null"});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
  }
}

TEST(Perfetto, UnwritableOutputFailsWithThePath) {
  const Converted& c = ConvertOnce("perfetto-exceptions", {"exceptions"});
  ASSERT_FALSE(c.dump.empty());
  const std::string out = FreshDir("perfetto-unwritable") + "/no-such-dir/out.pftrace";
  RunResult r = Convert(c.dump, "perfetto", out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no-such-dir"), std::string::npos) << r.err;
}

// Odd input straight into the sink: empty threads, flagged frames, no symbols.
TEST(Perfetto, SinkHandlesEmptyThreadsAndFlaggedFrames) {
  format::Dump d;
  d.process.pid = 4242;
  d.process.name = "odd";
  d.process.reason = "test";
  d.threads.resize(3);
  d.threads[0].tid = 1;
  d.threads[1].tid = 70000;
  d.threads[1].name = "wide\ttid";
  d.threads[2].tid = 70000;  // a reused tid
  model::ExportContext ctx;
  ctx.dump = &d;
  ctx.origin_ns = 1000;
  ctx.dump_ns = 500;  // before the first event: clamped to it
  const std::string out = FreshDir("perfetto-odd") + "/odd.pftrace";
  auto sink = exporters::MakePerfettoSink({out});
  ASSERT_TRUE((sink->Begin(ctx)).ok());
  sink->BeginThread(d.threads[0]);  // empty
  sink->EndThread({});
  sink->BeginThread(d.threads[1]);
  sink->Enter(7, 2000, 0, model::kSliceStartCut);
  sink->Enter(8, 1500, 1, 0);  // steps back in time
  sink->Exit(8, 3000, 1, model::kSliceUnwound);
  sink->Exit(7, 4000, 0, model::kSliceOpen);
  sink->EndThread({});
  sink->BeginThread(d.threads[2]);
  sink->Enter(7, 5000, 0, 0);
  sink->Exit(7, 6000, 0, 0);
  sink->EndThread({});
  ASSERT_TRUE((sink->End()).ok());
  const Decoded t = DecodeTrace(ReadFile(out));
  ASSERT_EQ(t.error, "");
  ASSERT_EQ(t.tracks.size(), 4u);
  EXPECT_EQ(t.tracks[2].tid, 70000u);
  EXPECT_EQ(t.tracks[2].name, "wide\ttid");
  EXPECT_EQ(t.slices.count(t.tracks[1].uuid), 0u);
  const auto& ev = t.slices.at(t.tracks[2].uuid);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[0].name, exporters::KeyName(ctx, 7));
  EXPECT_EQ(ev[0].notes, std::vector<std::string>{"entered before the window"});
  EXPECT_EQ(ev[1].ts, 2000);  // clamped
  EXPECT_EQ(ev[2].notes, std::vector<std::string>{"exit never came (exception or longjmp)"});
  EXPECT_EQ(ev[3].notes, std::vector<std::string>{"still running at the dump"});
  EXPECT_EQ(t.slices.at(t.tracks[3].uuid).size(), 2u);
  ASSERT_EQ(t.instants.size(), 1u);
  EXPECT_EQ(t.instants[0].ts, 1000);
}

// Working and waiting (model/cpu_time.h): a slice of 1 ms or more says
// how much of it was on CPU. The event loop's wait_for_event polls for 20 ms
// with nothing to read: mostly waiting, whatever the load.
TEST(Perfetto, LongSlicesSayHowMuchOfThemWasOnCpu) {
  const std::string dir = FreshDir("perfetto-work-wait");
  RunResult run = RunProgram({Cli(), "record", "--dir", dir + "/dumps", "--", Program("event-loop"), "40", "200"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<std::string> dumps = Dumps(dir + "/dumps");
  ASSERT_EQ(dumps.size(), 1u);
  RunResult r = Convert(dumps[0], "perfetto", dir + "/t.pftrace");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Decoded t = DecodeTrace(ReadFile(dir + "/t.pftrace"));
  ASSERT_EQ(t.error, "");
  size_t split = 0, waited = 0;
  for (const auto& [track, events] : t.slices) {
    std::vector<std::string> stack;
    for (const SliceEvent& e : events) {
      if (e.begin) {
        stack.push_back(e.name);
        continue;
      }
      const std::string name = stack.empty() ? "" : stack.back();
      if (!stack.empty()) stack.pop_back();
      if (name != "wait_for_event" || e.split.size() != 2) continue;
      ++split;
      if (std::stoll(e.split.at("wait_ns")) > std::stoll(e.split.at("cpu_ns"))) ++waited;
    }
  }
  ASSERT_GT(split, 0u);
  EXPECT_GT(waited * 2, split) << waited << " of " << split;
}

TEST(Perfetto, SinkReportsAnUnwritablePath) {
  format::Dump d;
  model::ExportContext ctx;
  ctx.dump = &d;
  auto sink = exporters::MakePerfettoSink({"/proc/lookback-no-such/out.pftrace"});
  const Status err = sink->Begin(ctx);
  EXPECT_NE(err.message().find("lookback-no-such"), std::string::npos) << err.message();
}

}  // namespace
}  // namespace lookback::testing
