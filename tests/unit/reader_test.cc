// The reader on damaged input: clear errors with offsets, never a crash.
#include "format/reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>

#include "test_util.h"

namespace lookback::testing {
namespace {

std::vector<uint8_t> RealDump() {
  OnFreshThread([] {
    for (uint64_t i = 0; i < 300; ++i) Emit({(i & 1) != 0, 0x55d0c0de1000ull + (i / 2 % 7) * 16, 1000 + i * 50});
  });
  std::string path = DumpNow();
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Reader, ReadsADumpWrittenByTheRecorder) {
  auto bytes = RealDump();
  auto d = format::Dump::Parse(bytes);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  EXPECT_EQ(d.value().version, format::kDumpVersion);
  EXPECT_EQ(d.value().process.reason, "unit test");
  EXPECT_FALSE(d.value().threads.empty());
  EXPECT_GT(d.value().clock.ticks, 0u);
  EXPECT_FALSE(d.value().modules.empty());
}

TEST(Reader, RejectsEveryTruncationWithAnOffset) {
  auto bytes = RealDump();
  for (size_t n = 0; n < bytes.size(); n += (n < 256 ? 1 : 61)) {
    auto d = format::Dump::Parse({bytes.data(), n});
    ASSERT_FALSE(d.ok()) << "prefix of " << n << " bytes parsed";
    EXPECT_FALSE(d.error().message.empty());
  }
}

TEST(Reader, RejectsForeignFiles) {
  const std::string text = "this is not a dump, it is a text file long enough to have a header........";
  auto d = format::Dump::Parse({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("not a lookback dump"), std::string::npos);
}

TEST(Reader, SurvivesRandomCorruption) {
  auto bytes = RealDump();
  std::mt19937_64 rng(1234);
  for (int k = 0; k < 3000; ++k) {
    auto copy = bytes;
    const int flips = 1 + static_cast<int>(rng() % 8);
    for (int f = 0; f < flips; ++f) copy[rng() % copy.size()] = static_cast<uint8_t>(rng());
    auto d = format::Dump::Parse(copy);
    if (!d.ok()) continue;
    // Whatever parsed must decode without reading out of bounds.
    for (const auto& t : d.value().threads) model::DecodeThread(d.value(), t, [](const model::Event&) {});
  }
}

TEST(Reader, FuzzRegressionInputsGiveClearErrors) {
  const std::string dir = std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/fuzz-regressions";
  int files = 0;
  for (const char* name : {"magic-only.lbk", "section-past-end.lbk", "thread-records-overflow.lbk", "module-count-huge.lbk"}) {
    auto d = format::Dump::Open(dir + "/" + name);
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_FALSE(d.error().message.empty()) << name;
    ++files;
  }
  EXPECT_EQ(files, 4);
}

TEST(Reader, RejectsANewerFormatWithAClearMessage) {
  auto bytes = RealDump();
  bytes[format::kHdrMinReader] = 9;  // needs reader version 9
  auto d = format::Dump::Parse(bytes);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("needs reader version 9"), std::string::npos) << d.error().message;
}

TEST(Reader, RejectsTruncationAtEveryRecordBoundary) {
  auto bytes = RealDump();
  for (size_t n = 64; n < bytes.size(); n += 8) {
    auto d = format::Dump::Parse({bytes.data(), n});
    ASSERT_FALSE(d.ok()) << n;
    EXPECT_NE(d.error().message.find("truncated"), std::string::npos) << d.error().message;
  }
}

// A dump recorded with `lookback record --sample` (tests/programs/sampling.cc,
// 4 KiB rings, a sample every 5 ms): also a fuzzer seed.
std::vector<uint8_t> SampledDump() {
  std::ifstream f(std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/corpus/seed-7-samples.lbk", std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// `bytes` parsed with one byte of the first section of `type` changed:
// `offset` counts from the section's payload.
lookback::Result<format::Dump> WithPayloadByte(const std::vector<uint8_t>& bytes, format::SectionType type, size_t offset,
                                     uint8_t value);

// Byte offset of the first section of `type`, or 0.
size_t SectionOffset(const std::vector<uint8_t>& b, uint32_t type) {
  auto u32 = [&](size_t at) { return uint32_t{b[at]} | uint32_t{b[at + 1]} << 8 | uint32_t{b[at + 2]} << 16 | uint32_t{b[at + 3]} << 24; };
  auto u64 = [&](size_t at) { return uint64_t{u32(at)} | uint64_t{u32(at + 4)} << 32; };
  for (size_t off = format::kFileHeaderSize; off + 16 <= b.size(); off = (off + 16 + u64(off + 8) + 7) & ~size_t{7}) {
    if (u32(off) == type) return off;
  }
  return 0;
}

lookback::Result<format::Dump> WithPayloadByte(const std::vector<uint8_t>& bytes, format::SectionType type, size_t offset,
                                     uint8_t value) {
  const size_t at = SectionOffset(bytes, static_cast<uint32_t>(type));
  EXPECT_NE(at, 0u);
  auto copy = bytes;
  copy.at(at + 16 + offset) = value;
  return format::Dump::Parse(copy);
}

TEST(Reader, SamplesAttachToTheThreadTheyFollow) {
  const auto bytes = SampledDump();
  ASSERT_FALSE(bytes.empty());
  auto d = format::Dump::Parse(bytes);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  ASSERT_EQ(d.value().samples.size(), d.value().threads.size());
  for (const auto& t : d.value().threads) {
    const format::ThreadSamples* s = d.value().SamplesOf(t);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->tid, t.tid);
    EXPECT_EQ(s->interval_ns, 5000000u);
    EXPECT_FALSE(s->samples.empty());
  }
  format::ThreadInfo stranger;
  EXPECT_EQ(d.value().SamplesOf(stranger), nullptr);  // not one of the dump's threads
}

TEST(Reader, DamagedSamplesSectionsGiveClearErrors) {
  const auto bytes = SampledDump();
  const size_t at = SectionOffset(bytes, static_cast<uint32_t>(format::SectionType::kSamples));
  ASSERT_NE(at, 0u);
  auto with = [&](size_t offset, uint8_t value) { return WithPayloadByte(bytes, format::SectionType::kSamples, offset, value); };
  auto no_fields = with(16, 0);  // fields per sample
  ASSERT_FALSE(no_fields.ok());
  EXPECT_NE(no_fields.error().message.find("samples have 0 fields"), std::string::npos) << no_fields.error().ToString();
  auto too_many = with(23, 0x7f);  // sample count's high byte
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("do not fit their section"), std::string::npos) << too_many.error().ToString();
  auto other_thread = with(0, static_cast<uint8_t>(bytes[at + 16] + 1));  // tid
  ASSERT_FALSE(other_thread.ok());
  EXPECT_NE(other_thread.error().message.find("do not follow that thread's section"), std::string::npos);
  for (size_t n = 0; n < bytes.size(); n += 97) EXPECT_FALSE(format::Dump::Parse({bytes.data(), n}).ok());
}

// event-loop 20 60 with 4 KiB rings and --stall-idle 'sleep_*' (format 6):
// CPU readings for every thread; also a fuzzer seed.
std::vector<uint8_t> CpuDump() {
  std::ifstream f(std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/corpus/seed-9-cpu.lbk", std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(Reader, CpuReadingsAttachToTheThreadTheyFollowInOrder) {
  const auto bytes = CpuDump();
  ASSERT_FALSE(bytes.empty());
  auto d = format::Dump::Parse(bytes);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  const format::Dump& dump = d.value();
  EXPECT_EQ(dump.version, 6);
  EXPECT_EQ(dump.metadata.at(format::metadata::kStallIdle), "sleep_*");
  ASSERT_FALSE(dump.cpu.empty());
  for (const auto& c : dump.cpu) {
    ASSERT_LT(c.thread_index, dump.threads.size());
    EXPECT_EQ(dump.threads[c.thread_index].tid, c.tid);
    EXPECT_EQ(c.interval_ns, 10000000u);
    for (size_t i = 1; i < c.readings.size(); ++i) {
      EXPECT_GE(c.readings[i].tsc, c.readings[i - 1].tsc);
      EXPECT_GE(c.readings[i].cpu_ns, c.readings[i - 1].cpu_ns);
    }
  }
}

TEST(Reader, DamagedCpuSectionsGiveClearErrors) {
  const auto bytes = CpuDump();
  const size_t at = SectionOffset(bytes, static_cast<uint32_t>(format::SectionType::kCpu));
  ASSERT_NE(at, 0u);
  auto with = [&](size_t offset, uint8_t value) { return WithPayloadByte(bytes, format::SectionType::kCpu, offset, value); };
  auto too_many = with(19, 0x7f);  // reading count's high byte
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.error().message.find("CPU readings that do not fit"), std::string::npos) << too_many.error().ToString();
  auto other_thread = with(0, static_cast<uint8_t>(bytes[at + 16] + 1));  // tid
  ASSERT_FALSE(other_thread.ok());
  EXPECT_NE(other_thread.error().message.find("do not follow that thread's section"), std::string::npos);
  // A reading whose CPU time runs backwards is dropped, not believed.
  auto copy = bytes;
  const size_t second_cpu = at + 16 + 24 + 16 + 8;  // the second reading's CPU time
  auto parsed = format::Dump::Parse(copy);
  ASSERT_TRUE(parsed.ok());
  const size_t readings = parsed.value().cpu.front().readings.size();
  ASSERT_GE(readings, 2u);
  ASSERT_GT(parsed.value().cpu.front().readings[0].cpu_ns, 0u);  // the main thread ran before its first reading
  {
    for (int b = 0; b < 8; ++b) copy[second_cpu + b] = 0;
    auto back = format::Dump::Parse(copy);
    ASSERT_TRUE(back.ok()) << back.error().ToString();
    EXPECT_EQ(back.value().cpu.front().readings.size(), readings - 1);
  }
  for (size_t n = 0; n < bytes.size(); n += 97) EXPECT_FALSE(format::Dump::Parse({bytes.data(), n}).ok());
}

TEST(Reader, OpenReportsMissingFiles) {
  auto d = format::Dump::Open("/nonexistent/dump.lbk");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace lookback::testing

TEST(ReaderBudget, ParsesTheBudgetsMetadataAndNamesABadLine) {
  namespace md = lookback::format::metadata;
  lookback::format::BudgetInfo b;
  std::map<std::string, std::string> m = {
      {md::kBudget, "2.5%"},
      {md::kBudgetCostPs, "10500 1800"},
      {md::kBudgetPassShedPs, "230"},
      {md::kBudgetThreads, "101 250 3000000 0\n102 9000 60000000 40000000\n"},
      {md::kBudgetShed, "55aa7be9a440 1000 0 39891044 11 101\n80000000000001 2000 5000 797618 0 102\n"},
  };
  ASSERT_FALSE(lookback::format::ParseBudgetMetadata(m, &b).has_value());
  EXPECT_EQ(b.percent, "2.5%");
  EXPECT_EQ(b.cost_ps, 10500u);
  EXPECT_EQ(b.filtered_cost_ps, 1800u);
  EXPECT_EQ(b.pass_shed_cost_ps, 230u);
  ASSERT_EQ(b.threads.size(), 2u);
  EXPECT_EQ(b.threads[1].estimate_bp, 9000u);
  EXPECT_EQ(b.threads[1].filtered_per_s, 40000000u);
  ASSERT_EQ(b.shed.size(), 2u);
  EXPECT_EQ(b.shed[0].key, 0x55aa7be9a440u);
  EXPECT_EQ(b.shed[0].until_ns, 0u);
  EXPECT_EQ(b.shed[1].key, 0x80000000000001u);
  EXPECT_EQ(b.shed[1].mean_ns, 0u);
  EXPECT_TRUE(b.ShedAt(0x55aa7be9a440u, 1000));
  EXPECT_FALSE(b.ShedAt(0x55aa7be9a440u, 999));
  EXPECT_TRUE(b.ShedAt(0x80000000000001u, 4999));
  EXPECT_FALSE(b.ShedAt(0x80000000000001u, 5000));  // back by then

  // Dumps of runtimes without a budget: off, nothing shed.
  lookback::format::BudgetInfo none;
  EXPECT_FALSE(lookback::format::ParseBudgetMetadata({}, &none).has_value());
  EXPECT_EQ(none.percent, "off");
  EXPECT_TRUE(none.shed.empty());

  for (const char* bad : {"55aa 1000 0 1 1",           // a field short
                          "55aa 1000 0 1 1 7 8",       // one too many
                          "xyz 1000 0 1 1 7",          // not hex
                          "ffffffffffffff00 1 0 1 1 7",  // a key of 2^56 or more
                          "55aa -1 0 1 1 7"}) {
    lookback::format::BudgetInfo out;
    auto err = lookback::format::ParseBudgetMetadata({{md::kBudgetShed, bad}}, &out);
    ASSERT_TRUE(err.has_value()) << bad;
    EXPECT_NE(err->message.find("budget.shed has a bad line"), std::string::npos) << err->message;
  }
  // Back before it was shed (runtimes before 2026-11-29, when one tick shed
  // and brought back the same function): a shed of no duration, and the
  // dump still opens.
  {
    lookback::format::BudgetInfo early;
    ASSERT_FALSE(lookback::format::ParseBudgetMetadata({{md::kBudgetShed, "55aa 1000 999 1 1 7"}}, &early).has_value());
    ASSERT_EQ(early.shed.size(), 1u);
    EXPECT_EQ(early.shed[0].until_ns, 1000u);
    EXPECT_FALSE(early.ShedAt(0x55aau, 1000));
  }
  lookback::format::BudgetInfo out;
  EXPECT_TRUE(lookback::format::ParseBudgetMetadata({{md::kBudgetCostPs, "ten"}}, &out).has_value());
  EXPECT_TRUE(lookback::format::ParseBudgetMetadata({{md::kBudgetThreads, "1 2"}}, &out).has_value());
}
