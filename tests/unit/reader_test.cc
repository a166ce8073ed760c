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

TEST(Reader, OpenReportsMissingFiles) {
  auto d = format::Dump::Open("/nonexistent/dump.lbk");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace lookback::testing
