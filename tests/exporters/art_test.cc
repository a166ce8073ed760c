// `lookback convert --to art` on dumps of real programs, re-read with the
// independent parser in art_reader.h; the call trees rebuilt from the file
// must be the ones the dump decodes to (model::DecodeThread +
// model::CallMatcher).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "art_reader.h"
#include "export_fixture.h"
#include "exporters/exporters.h"
#include "model/clock_model.h"
#include "model/decoder.h"
#include "model/walk.h"
#include "symbolize/symbolizer.h"

namespace lookback::testing {
namespace {

struct Converted {
  std::string dump, out;
  ArtTrace trace;
  size_t bytes = 0;
};

const Converted& ConvertOnce(const std::string& name, const std::vector<std::string>& args) {
  static std::map<std::string, Converted> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  Converted c;
  c.dump = RecordLifecycle(name, args);
  if (!c.dump.empty()) {
    c.out = c.dump + ".trace";
    RunResult r = Convert(c.dump, "art", c.out);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string bytes = ReadFile(c.out);
    c.bytes = bytes.size();
    c.trace = ParseArtTrace(bytes);
  }
  return cache.emplace(name, std::move(c)).first->second;
}

bool EndsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string BaseName(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// Whether an ART method line fits a demangled C++ name (class/name/signature
// split as art.cc documents).
bool NameFits(const std::string& full, const std::string& module, const ArtMethod& m) {
  if (full.find('(') == std::string::npos) return m.name == full && m.signature == "()" && m.cls == module;
  if (!EndsWith(full, m.name + m.signature)) return false;
  return m.cls == module || full.find(m.cls + "::" + m.name + m.signature) != std::string::npos;
}

struct Expected {
  std::string name;
  const symbolize::Symbol* sym;
  int64_t start_ns, end_ns;
  uint32_t depth;
  uint8_t flags;
};

// The ART thread id of a dump thread: its tid, or a substitute named "(tid N)".
uint32_t ArtThreadId(const ArtTrace& t, const format::ThreadInfo& th) {
  for (const auto& [id, name] : t.threads) {
    if ((id == th.tid && name == th.name) || name == th.name + " (tid " + std::to_string(th.tid) + ")") return id;
  }
  return ~0u;
}

void CheckAgainstDump(const Converted& c) {
  ASSERT_FALSE(c.out.empty());
  const ArtTrace& t = c.trace;
  ASSERT_EQ(t.error, "");
  const format::Dump d = MustOpen(c.dump);
  const model::ClockModel clock(d.clock);
  symbolize::Symbolizer sym(d);

  // Key and header.
  EXPECT_EQ(t.version, 3);
  EXPECT_EQ(t.options.at("clock"), "dual");
  EXPECT_EQ(t.options.at("data-file-overflow"), "false");
  EXPECT_EQ(t.options.at("vm"), "art");
  EXPECT_EQ(t.options.at("pid"), std::to_string(d.process.pid));
  EXPECT_EQ(t.options.at("num-method-calls"), std::to_string(t.records.size()));
  EXPECT_EQ(t.data_offset, 32);
  EXPECT_EQ(c.bytes, t.key_size + 32 + 14 * t.records.size());
  EXPECT_EQ(t.threads.size(), d.threads.size());
  for (const auto& [id, m] : t.methods) {
    EXPECT_EQ(id % 4, 0u) << "method id " << id;
    EXPECT_NE(id, 0u);
  }
  uint32_t max_wall = 0;
  for (const auto& r : t.records) {
    ASSERT_TRUE(t.methods.count(r.method)) << "record with unknown method " << r.method;
    ASSERT_TRUE(t.threads.count(r.thread)) << "record with unknown thread " << r.thread;
    EXPECT_LE(r.cpu_us, r.wall_us);  // CPU time since the thread's first record: never more than the wall time
    max_wall = std::max(max_wall, r.wall_us);
  }
  EXPECT_EQ(t.options.at("elapsed-time-usec"), std::to_string(max_wall));

  // The origin: the first event of any thread, as the records count from it.
  int64_t origin = INT64_MAX;
  for (const auto& th : d.threads) {
    bool first = true;
    model::DecodeThread(d, th, [&](const model::Event& e) {
      if (first && (e.kind == model::EventKind::kEnter || e.kind == model::EventKind::kExit)) {
        first = false;
        origin = std::min(origin, clock.MonotonicNs(e.tsc));
      }
    });
  }
  ASSERT_NE(origin, INT64_MAX);
  if (d.process.dump_realtime_ns != 0) {
    const int64_t dump_ns = clock.MonotonicNs(d.process.dump_tsc);
    const uint64_t want = (d.process.dump_realtime_ns - static_cast<uint64_t>(dump_ns - origin)) / 1000;
    EXPECT_LE(std::max(t.start_us, want) - std::min(t.start_us, want), 1u);
  }

  // Per thread: the same calls, nesting, exits and times as the model's.
  for (const auto& th : d.threads) {
    const uint32_t id = ArtThreadId(t, th);
    ASSERT_NE(id, ~0u) << "thread " << th.tid << " " << th.name << " missing from *threads";
    std::vector<ArtFrame> got;
    ASSERT_EQ(RebuildCalls(t, id, &got), "") << th.name;

    std::vector<Expected> want;
    model::CallMatcher m(&symbolize::Symbolizer::FunctionOf, &sym);
    auto emit = [&](const model::Frame& f) {
      want.push_back({sym.Name(f.key), &sym.Lookup(f.key), clock.MonotonicNs(f.start_tsc), clock.MonotonicNs(f.end_tsc),
                      f.depth, f.flags});
    };
    model::DecodeThread(d, th, [&](const model::Event& e) { m.OnEvent(e, emit); });
    m.Finish(th.exit_tsc != 0 ? th.exit_tsc : th.snapshot_tsc, emit);
    // Frames cut at the window start sit at depth 0 in the matcher and below
    // the others in the file: compare depths only without them.
    const bool cut = std::any_of(want.begin(), want.end(), [](const Expected& e) { return e.flags & model::kFrameStartCut; });

    ASSERT_EQ(got.size(), want.size()) << th.name;
    for (size_t i = 0; i < want.size(); ++i) {
      const Expected& w = want[i];
      const ArtFrame& g = got[i];
      const ArtMethod& am = t.methods.at(g.method);
      const std::string module = BaseName(w.sym->module);
      ASSERT_TRUE(NameFits(w.name, module, am))
          << th.name << " frame " << i << ": " << w.name << " vs " << am.cls << " | " << am.name << " | " << am.signature;
      if (!cut) {
        EXPECT_EQ(g.depth, w.depth) << th.name << " frame " << i << " " << w.name;
      }
      EXPECT_EQ(g.exit_action, (w.flags & model::kFrameUnwound) ? 2u : 1u) << th.name << " frame " << i;
      const auto us = [&](int64_t ns) { return static_cast<int64_t>(std::max<int64_t>(0, ns - origin) / 1000); };
      EXPECT_LE(std::abs(us(w.start_ns) - static_cast<int64_t>(g.start_us)), 1) << th.name << " frame " << i;
      EXPECT_LE(std::abs(us(w.end_ns) - static_cast<int64_t>(g.end_us)), 1) << th.name << " frame " << i;
    }
  }
}

// Name paths of a thread's calls ("outer/middle/thrower"), rebuilt from the records.
std::vector<std::string> Paths(const ArtTrace& t, uint32_t thread) {
  std::vector<std::string> stack, out;
  for (const auto& r : t.records) {
    if (r.thread != thread) continue;
    if (r.action == 0) {
      stack.push_back(t.methods.at(r.method).name);
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
  return static_cast<int>(std::count_if(paths.begin(), paths.end(), [&](const std::string& p) { return EndsWith(p, suffix); }));
}

TEST(Art, ExceptionsRebuildToTheDumpsCallTree) {
  const Converted& c = ConvertOnce("art-exceptions", {"exceptions"});
  CheckAgainstDump(c);
  if (HasFatalFailure()) return;
  const format::Dump d = MustOpen(c.dump);
  const format::ThreadInfo* main = nullptr;
  for (const auto& th : d.threads) {
    if (th.tid == d.process.pid) main = &th;
  }
  ASSERT_NE(main, nullptr);
  const auto paths = Paths(c.trace, ArtThreadId(c.trace, *main));
  EXPECT_EQ(CountSuffix(paths, "outer/middle/thrower"), 3);
  EXPECT_EQ(CountSuffix(paths, "outer/middle/thrower/leaf_work"), 3);
  EXPECT_EQ(CountSuffix(paths, "after_exceptions"), 1);
  // C functions: the module as class, "()" as signature.
  bool found = false;
  for (const auto& [id, m] : c.trace.methods) {
    if (m.name != "thrower") continue;
    found = true;
    EXPECT_EQ(m.cls, "lifecycle-gcc");
    EXPECT_EQ(m.signature, "()");
    EXPECT_TRUE(m.file == "lifecycle.cc" || m.file == "lifecycle-gcc") << m.file;
  }
  EXPECT_TRUE(found);
}

TEST(Art, ShortThreadsRebuildToTheDumpsCallTrees) {
  const Converted& c = ConvertOnce("art-short-threads", {"short-threads", "3"});
  CheckAgainstDump(c);
  if (HasFatalFailure()) return;
  const format::Dump d = MustOpen(c.dump);
  for (int i = 0; i < 3; ++i) {
    const std::string name = "short-" + std::to_string(i);
    const format::ThreadInfo* th = FindThread(d, name);
    ASSERT_NE(th, nullptr) << name;
    EXPECT_EQ(CountSuffix(Paths(c.trace, ArtThreadId(c.trace, *th)), "thread_body/mid_work/leaf_work"), 2) << name;
  }
  // C++ names split into class, name and signature (printed for the record).
  int cpp = 0;
  for (const auto& [id, m] : c.trace.methods) {
    if (m.cls == "lifecycle-gcc") continue;
    ++cpp;
    printf("[ art ] %#x  class=%s  name=%s  signature=%s  file=%s:%ld\n", id, m.cls.c_str(), m.name.c_str(),
           m.signature.c_str(), m.file.c_str(), m.line);
  }
  EXPECT_GT(cpp, 0);
}

// The records the exporter should write for what it is given (model::Walk):
// µs since the origin, never stepping back within a thread.
class ExpectedRecords : public model::TraceSink {
 public:
  struct Rec {
    uint32_t tid;
    uint64_t key;
    uint32_t action;
    uint32_t us;
  };
  Status Begin(const model::ExportContext& ctx) override {
    origin_ = ctx.origin_ns;
    return Status::Ok();
  }
  void BeginThread(const format::ThreadInfo& t) override {
    thread_ = &t;
    last_ = 0;
  }
  void Enter(uint64_t key, int64_t ts, uint32_t, uint8_t) override { Add(key, 0, ts); }
  void Exit(uint64_t key, int64_t ts, uint32_t, uint8_t flags) override {
    Add(key, (flags & model::kSliceUnwound) ? 2 : 1, ts);
  }
  void EndThread(const model::ThreadSummary&) override {}
  Status End() override { return Status::Ok(); }

  std::vector<Rec> records;
  std::vector<const format::ThreadInfo*> threads;

 private:
  void Add(uint64_t key, uint32_t action, int64_t ts) {
    last_ = std::max<uint32_t>(last_, static_cast<uint32_t>(std::max<int64_t>(0, ts - origin_) / 1000));
    if (threads.empty() || threads.back() != thread_) threads.push_back(thread_);
    records.push_back({thread_->tid, key, action, last_});
  }
  const format::ThreadInfo* thread_ = nullptr;
  int64_t origin_ = 0;
  uint32_t last_ = 0;
};

// A busy program (a 10 kHz signal handler over 300 ms of calls): the ring
// wraps, frames are cut at the window start, timestamps sometimes step back,
// a million records. Checked record by record against model::Walk, what the
// exporter is given.
TEST(Art, BusyProgramWritesTheWalkRecordByRecord) {
  const Converted& c = ConvertOnce("art-signals", {"signals"});
  ASSERT_FALSE(c.out.empty());
  ASSERT_EQ(c.trace.error, "");
  const format::Dump d = MustOpen(c.dump);
  symbolize::Symbolizer sym(d);
  ExpectedRecords want;
  ASSERT_TRUE(model::Walk(d, sym, {}, want).status.ok());
  ASSERT_GT(want.records.size(), 10000u);
  ASSERT_EQ(c.trace.records.size(), want.records.size());
  std::map<uint32_t, uint32_t> ids;  // tid -> ART thread id
  for (const auto* th : want.threads) ids[th->tid] = ArtThreadId(c.trace, *th);
  for (size_t i = 0; i < want.records.size(); ++i) {
    const auto& w = want.records[i];
    const ArtRecord& g = c.trace.records[i];
    ASSERT_EQ(g.thread, ids.at(w.tid)) << "record " << i;
    ASSERT_EQ(g.action, w.action) << "record " << i;
    ASSERT_EQ(g.wall_us, w.us) << "record " << i;
    ASSERT_LE(g.cpu_us, g.wall_us) << "record " << i;
    const symbolize::Symbol& s = sym.Lookup(w.key);
    ASSERT_TRUE(NameFits(s.name, BaseName(s.module), c.trace.methods.at(g.method))) << "record " << i << ": " << s.name;
  }
  for (const auto& [id, name] : c.trace.threads) {
    std::vector<ArtFrame> frames;
    EXPECT_EQ(RebuildCalls(c.trace, id, &frames), "") << name;
  }
}

TEST(Art, UnwritableOutputFailsWithThePath) {
  const Converted& c = ConvertOnce("art-exceptions", {"exceptions"});
  ASSERT_FALSE(c.dump.empty());
  const std::string out = FreshDir("art-unwritable") + "/no-such-dir/out.trace";
  RunResult r = Convert(c.dump, "art", out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("no-such-dir"), std::string::npos) << r.err;
}

// Odd input straight into the sink: empty threads, wide and reused tids,
// flagged frames, no symbols.
TEST(Art, SinkHandlesOddThreadsAndFlaggedFrames) {
  format::Dump d;
  d.process.pid = 4242;
  d.threads.resize(4);
  d.threads[0].tid = 5;
  d.threads[1].tid = 70000;  // does not fit 16 bits
  d.threads[1].name = "wide\ttid";
  d.threads[2].tid = 5;  // reused
  d.threads[3].tid = 1;  // would collide with a substitute id
  model::ExportContext ctx;
  ctx.dump = &d;
  ctx.origin_ns = 1'000'000;
  const std::string out = FreshDir("art-odd") + "/odd.trace";
  auto sink = exporters::MakeArtSink({out});
  ASSERT_TRUE((sink->Begin(ctx)).ok());
  for (const auto& th : d.threads) {
    sink->BeginThread(th);
    if (th.tid == 70000) {
      sink->Enter(7, 2'000'000, 0, model::kSliceStartCut);
      sink->Enter(8, 1'500'000, 1, 0);  // steps back in time
      sink->Exit(8, 3'000'000, 1, model::kSliceUnwound);
      sink->Exit(7, 4'000'000, 0, model::kSliceOpen);
    }
    sink->EndThread({});
  }
  ASSERT_TRUE((sink->End()).ok());
  const ArtTrace t = ParseArtTrace(ReadFile(out));
  ASSERT_EQ(t.error, "");
  ASSERT_EQ(t.threads.size(), 4u);
  EXPECT_EQ(t.threads.at(5), "thread");
  EXPECT_EQ(t.threads.at(1), "thread");
  uint32_t wide = 0, reused = 0;
  for (const auto& [id, name] : t.threads) {
    if (name == "wide tid (tid 70000)") wide = id;
    if (name == "thread (tid 5)") reused = id;
  }
  ASSERT_NE(wide, 0u);
  ASSERT_NE(reused, 0u);
  EXPECT_NE(wide, reused);
  std::vector<ArtFrame> frames;
  ASSERT_EQ(RebuildCalls(t, wide, &frames), "");
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].exit_action, 2u);
  EXPECT_EQ(frames[0].start_us, 1000u);  // clamped to the previous record
  EXPECT_EQ(frames[1].exit_action, 1u);
  EXPECT_EQ(frames[1].end_us, 3000u);
  EXPECT_EQ(t.methods.at(frames[1].method).name, exporters::KeyName(ctx, 7));
}

TEST(Art, SinkReportsAnUnwritablePath) {
  format::Dump d;
  model::ExportContext ctx;
  ctx.dump = &d;
  auto sink = exporters::MakeArtSink({"/proc/lookback-no-such/out.trace"});
  const Status err = sink->Begin(ctx);
  EXPECT_NE(err.message().find("lookback-no-such"), std::string::npos) << err.message();
}

}  // namespace
}  // namespace lookback::testing
