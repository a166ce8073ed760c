// The fixed sections round-trip (format/sections.h): each struct, filled
// with values that differ in every field, encoded by the writer's encoder
// and decoded by the reader, comes back equal. A field added to one side and
// not the other, or read in another order, fails here.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "format/encode.h"
#include "format/reader.h"
#include "format/sections.h"

namespace lookback::testing {
namespace {

// A dump of the given (type, payload) sections after a header, as the
// writer lays them out (FORMAT.md).
std::vector<uint8_t> DumpOf(const std::vector<std::pair<format::SectionType, std::string>>& sections) {
  std::string body;
  for (const auto& [type, payload] : sections) {
    std::string p = payload;
    format::PadTo8(&p);
    body += format::SectionHeader(type, payload.size()) + p;
  }
  const std::string all =
      format::EncodeFileHeader(format::kMinReaderVersion, static_cast<uint32_t>(sections.size()),
                               format::kFileHeaderSize + body.size()) +
      body;
  return {all.begin(), all.end()};
}

format::ProcessInfo SomeProcess() {
  format::ProcessInfo p;
  p.pid = 101, p.ppid = 102, p.dump_seq = 103;
  p.dump_tsc = 0x1111222233334444ull, p.dump_realtime_ns = 0x5555666677778888ull, p.dump_monotonic_ns = 0x99990000aaaabbbbull;
  p.name = "proc", p.exe = "/bin/proc", p.cmdline = std::string("proc\0-x", 7), p.reason = "because";
  return p;
}

format::ClockInfo SomeClock() {
  format::ClockInfo k;
  k.ticks = 2600000000ull, k.ns = 1000000000ull, k.ref_tsc = 7, k.ref_monotonic_ns = 8, k.ref_realtime_ns = 9;
  k.tsc_low_bits = format::kTscLowBits, k.uncertainty_ppb = 123;
  return k;
}

TEST(Sections, EveryFixedSectionReadsBackWhatWasWritten) {
  const format::ProcessInfo p = SomeProcess();
  const format::ClockInfo k = SomeClock();
  std::vector<format::ModuleInfo> mods(2);
  mods[0].bias = 1, mods[0].lo = 2, mods[0].hi = 3, mods[0].build_id = std::string("\x01\x02\x00\xff", 4), mods[0].path = "/a";
  mods[1].bias = 4, mods[1].lo = 5, mods[1].hi = 6, mods[1].path = "/lib/b.so";
  const std::vector<std::pair<uint64_t, std::string>> names = {{0x10, "first"}, {0x20, "void C.m(int)"}};
  format::StatsInfo st;
  st.untraced_memory = 1, st.untraced_pattern = 2, st.reclaimed = 3, st.invalid_keys = 4, st.buffer_bytes = 5;
  format::ThreadInfo th;
  th.tid = 21, th.flags = format::kThreadExited, th.capacity = 1024, th.first_index = 22, th.record_count = 0, th.lost = 23,
  th.start_tsc = 24, th.exit_tsc = 25, th.snapshot_tsc = 26, th.name = "worker-with-a-long-name";
  const std::vector<std::pair<std::string, std::string>> metadata = {{"a.b", "1"}, {"note.x", "free text"}};
  const std::vector<std::pair<uint64_t, uint64_t>> cpu = {{100, 5}, {200, 7}, {300, 7}};
  format::TriggerInfo t;
  t.detector = "stall", t.tid = 11, t.signal = 12, t.tsc = 13, t.measured_ns = 14, t.threshold_ns = 15, t.window_ns = 16,
  t.suppressed = 17, t.subject = "ui";

  const std::vector<uint8_t> bytes = DumpOf({{format::SectionType::kProcess, format::EncodeProcess(p)},
                                             {format::SectionType::kClock, format::EncodeClock(k)},
                                             {format::SectionType::kModules, format::EncodeModules(mods)},
                                             {format::SectionType::kNames, format::EncodeNames(names)},
                                             {format::SectionType::kStats, format::EncodeStats(st)},
                                             {format::SectionType::kTrigger, format::EncodeTrigger(t)},
                                             {format::SectionType::kThread, format::EncodeThread(th)},
                                             {format::SectionType::kCpu, format::EncodeCpu(th.tid, 10000000, cpu)},
                                             {format::SectionType::kMetadata, format::EncodeMetadata(metadata)}});
  auto parsed = format::Dump::Parse(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.error().ToString();
  const format::Dump& d = parsed.value();

  EXPECT_EQ(d.process.pid, p.pid);
  EXPECT_EQ(d.process.ppid, p.ppid);
  EXPECT_EQ(d.process.dump_seq, p.dump_seq);
  EXPECT_EQ(d.process.dump_tsc, p.dump_tsc);
  EXPECT_EQ(d.process.dump_realtime_ns, p.dump_realtime_ns);
  EXPECT_EQ(d.process.dump_monotonic_ns, p.dump_monotonic_ns);
  EXPECT_EQ(d.process.name, p.name);
  EXPECT_EQ(d.process.exe, p.exe);
  EXPECT_EQ(d.process.cmdline, p.cmdline);
  EXPECT_EQ(d.process.reason, p.reason);

  EXPECT_EQ(d.clock.ticks, k.ticks);
  EXPECT_EQ(d.clock.ns, k.ns);
  EXPECT_EQ(d.clock.ref_tsc, k.ref_tsc);
  EXPECT_EQ(d.clock.ref_monotonic_ns, k.ref_monotonic_ns);
  EXPECT_EQ(d.clock.ref_realtime_ns, k.ref_realtime_ns);
  EXPECT_EQ(d.clock.tsc_low_bits, k.tsc_low_bits);
  EXPECT_EQ(d.clock.uncertainty_ppb, k.uncertainty_ppb);

  ASSERT_EQ(d.modules.size(), mods.size());
  for (size_t i = 0; i < mods.size(); ++i) {
    EXPECT_EQ(d.modules[i].bias, mods[i].bias);
    EXPECT_EQ(d.modules[i].lo, mods[i].lo);
    EXPECT_EQ(d.modules[i].hi, mods[i].hi);
    EXPECT_EQ(d.modules[i].build_id, mods[i].build_id);
    EXPECT_EQ(d.modules[i].path, mods[i].path);
  }

  ASSERT_EQ(d.names.size(), names.size());
  for (const auto& [key, name] : names) EXPECT_EQ(d.names.at(key), name);

  EXPECT_EQ(d.stats.untraced_memory, st.untraced_memory);
  EXPECT_EQ(d.stats.untraced_pattern, st.untraced_pattern);
  EXPECT_EQ(d.stats.reclaimed, st.reclaimed);
  EXPECT_EQ(d.stats.invalid_keys, st.invalid_keys);
  EXPECT_EQ(d.stats.buffer_bytes, st.buffer_bytes);

  ASSERT_TRUE(d.trigger.has_value());
  EXPECT_EQ(d.trigger->detector, t.detector);
  EXPECT_EQ(d.trigger->tid, t.tid);
  EXPECT_EQ(d.trigger->signal, t.signal);
  EXPECT_EQ(d.trigger->tsc, t.tsc);
  EXPECT_EQ(d.trigger->measured_ns, t.measured_ns);
  EXPECT_EQ(d.trigger->threshold_ns, t.threshold_ns);
  EXPECT_EQ(d.trigger->window_ns, t.window_ns);
  EXPECT_EQ(d.trigger->suppressed, t.suppressed);
  EXPECT_EQ(d.trigger->subject, t.subject);

  ASSERT_EQ(d.threads.size(), 1u);
  format::ThreadInfo got = d.threads[0];
  EXPECT_EQ(got.tid, th.tid);
  EXPECT_EQ(got.flags, th.flags);
  EXPECT_EQ(got.capacity, th.capacity);
  EXPECT_EQ(got.first_index, th.first_index);
  EXPECT_EQ(got.record_count, th.record_count);
  EXPECT_EQ(got.lost, th.lost);
  EXPECT_EQ(got.start_tsc, th.start_tsc);
  EXPECT_EQ(got.exit_tsc, th.exit_tsc);
  EXPECT_EQ(got.snapshot_tsc, th.snapshot_tsc);
  EXPECT_EQ(got.name, th.name);
  for (const auto& [k, v] : metadata) EXPECT_EQ(d.metadata.at(k), v);
  ASSERT_EQ(d.cpu.size(), 1u);
  EXPECT_EQ(d.cpu[0].tid, th.tid);
  EXPECT_EQ(d.cpu[0].interval_ns, 10000000u);
  ASSERT_EQ(d.cpu[0].readings.size(), cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    EXPECT_EQ(d.cpu[0].readings[i].tsc, cpu[i].first);
    EXPECT_EQ(d.cpu[0].readings[i].cpu_ns, cpu[i].second);
  }

  // And what was read encodes to the very bytes that were written.
  EXPECT_EQ(format::EncodeThread(got), format::EncodeThread(th));
  EXPECT_EQ(format::EncodeProcess(d.process), format::EncodeProcess(p));
  EXPECT_EQ(format::EncodeClock(d.clock), format::EncodeClock(k));
  EXPECT_EQ(format::EncodeModules(d.modules), format::EncodeModules(mods));
  EXPECT_EQ(format::EncodeStats(d.stats), format::EncodeStats(st));
  EXPECT_EQ(format::EncodeTrigger(*d.trigger), format::EncodeTrigger(t));
}

// Every encoded payload is exactly what the reader consumes: one byte short
// and the reader says so, rather than reading past a field.
TEST(Sections, ATruncatedFixedSectionIsAnErrorNotAGuess) {
  const std::string process = format::EncodeProcess(SomeProcess());
  const std::string clock = format::EncodeClock(SomeClock());
  for (const auto& [type, payload] :
       std::vector<std::pair<format::SectionType, std::string>>{{format::SectionType::kProcess, process},
                                                                {format::SectionType::kClock, clock}}) {
    std::vector<std::pair<format::SectionType, std::string>> sections = {
        {format::SectionType::kProcess, process}, {format::SectionType::kClock, clock}};
    for (auto& s : sections) {
      if (s.first == type) s.second.pop_back();
    }
    auto parsed = format::Dump::Parse(DumpOf(sections));
    EXPECT_FALSE(parsed.ok()) << "section type " << static_cast<uint32_t>(type) << " read with a byte missing";
  }
}

}  // namespace
}  // namespace lookback::testing
