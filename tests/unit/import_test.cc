// The importers' building blocks without the CLI: the dump builder through
// the real reader and decoder, and the ART parser on every prefix of a
// device trace (tests/data/android).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "format/dump_builder.h"
#include "format/reader.h"
#include "import/art_trace.h"
#include "import/nanoscope.h"
#include "import/to_dump.h"
#include "model/decoder.h"

namespace lookback {
namespace {

// `bytes` must outlive the Dump (it points into them).
format::Dump Parse(const std::string& bytes) {
  auto d = format::Dump::Parse({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().ToString());
  return d.ok() ? std::move(d.value()) : format::Dump();
}

std::vector<format::BuiltEvent> Decoded(const format::Dump& d, const format::ThreadInfo& t) {
  std::vector<format::BuiltEvent> out;
  const model::DecodeStats st = model::DecodeThread(d, t, [&](const model::Event& e) {
    out.push_back({e.kind == model::EventKind::kExit, e.key, e.tsc});
  });
  EXPECT_EQ(st.undecodable_prefix, 0u);
  EXPECT_EQ(st.unknown_records, 0u);
  EXPECT_EQ(st.backwards, 0u);
  return out;
}

TEST(DumpBuilder, EventsDecodeExactlyAcrossEpochsAndMoreKeyBasesThanSlots) {
  format::BuiltDump b;
  b.pid = 7;
  b.process_name = "app";
  format::BuiltThread& t = b.threads.emplace_back();
  t.tid = 7;
  t.name = "main";
  // Six key bases (the writer has four slots) and TSCs that cross many
  // 2^28 epochs, with a gap of hours.
  uint64_t tsc = 1'000'000'000;
  for (int i = 0; i < 600; ++i) {
    const uint64_t key = (uint64_t{static_cast<uint64_t>(i % 6) + 1} << 32) | static_cast<uint64_t>(i);
    t.events.push_back({false, key, tsc});
    tsc += (i == 300) ? uint64_t{3600} * 1'000'000'000 : 150'000'000;
    t.events.push_back({true, key, tsc});
    tsc += 1;
  }
  t.cpu = {{1'000'000'000, 5}, {tsc, 10}};
  b.names[1] = "one";
  b.metadata["import.format"] = "test";
  const std::string bytes = format::EncodeDump(b);
  const format::Dump d = Parse(bytes);
  ASSERT_EQ(d.threads.size(), 1u);
  EXPECT_EQ(d.threads[0].tid, 7u);
  EXPECT_EQ(d.threads[0].name, "main");
  EXPECT_EQ(d.process.name, "app");
  EXPECT_EQ(d.names.at(1), "one");
  EXPECT_EQ(d.metadata.at("import.format"), "test");
  ASSERT_EQ(d.cpu.size(), 1u);
  EXPECT_EQ(d.cpu[0].readings.size(), 2u);
  const auto got = Decoded(d, d.threads[0]);
  ASSERT_EQ(got.size(), t.events.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].exit, t.events[i].exit) << i;
    ASSERT_EQ(got[i].key, t.events[i].key) << i;
    ASSERT_EQ(got[i].tsc, t.events[i].tsc) << i;
  }
}

std::string DeviceTrace(const char* name) {
  std::ifstream in(std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/android/" + name, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ArtTraceParser, EveryPrefixOfADeviceTraceIsAnErrorOrReadsWithAWarning) {
  for (const char* name : {"basic.trace", "basic-api10.trace", "exception.trace"}) {
    const std::string whole = DeviceTrace(name);
    ASSERT_GT(whole.size(), 500u) << name;
    const size_t key_end = whole.find("*end\n") + 5;
    for (size_t n = 0; n < whole.size(); ++n) {
      auto t = import::ParseArtTrace({reinterpret_cast<const uint8_t*>(whole.data()), n});
      if (n < key_end + 32) {
        // The key or the binary header (32 bytes in these files, records
        // after it) is incomplete: nothing to read.
        ASSERT_FALSE(t.ok()) << name << " cut at " << n;
        EXPECT_LE(t.error().offset, n) << name << " cut at " << n;
      } else {
        ASSERT_TRUE(t.ok()) << name << " cut at " << n << ": " << t.error().ToString();
        if (n == whole.size()) {
          EXPECT_TRUE(t.value().warnings.empty()) << name;
        }
        // A last record cut off is a warning (ImportArt.TraceCutShort...).
        // Its dump reads back.
        const std::string bytes = format::EncodeDump(import::ToDump(t.value(), name));
        Parse(bytes);
      }
    }
  }
}

TEST(ArtTraceParser, MethodIdsWithTheirActionBitsNameJavaMethods) {
  const std::string whole = DeviceTrace("basic.trace");
  auto t = import::ParseArtTrace({reinterpret_cast<const uint8_t*>(whole.data()), whole.size()});
  ASSERT_TRUE(t.ok());
  // 0x62ae8a48  com/test/android/traceview/Basic  foo  ()V
  EXPECT_EQ(t.value().methods.at(0x62ae8a48 >> 2), "void com.test.android.traceview.Basic.foo()");
  EXPECT_EQ(t.value().clock, "dual");
  EXPECT_EQ(t.value().realtime_at_zero_ns % 1000, 0u);
  EXPECT_GT(t.value().realtime_at_zero_ns, uint64_t{1'300'000'000} * 1'000'000'000);  // recorded in 2013
}

TEST(NanoscopeParser, PopWithNothingOpenIsAWarningAndABadLineAnError) {
  auto ok = import::ParseNanoscope({{"1-main.txt", "5:POP\n10:void A.b()\n20:POP\n", "", ""}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok.value().warnings.size(), 1u);
  ASSERT_EQ(ok.value().threads.size(), 1u);
  EXPECT_EQ(ok.value().threads[0].events.size(), 2u);
  auto bad = import::ParseNanoscope({{"1-main.txt", "10:void A.b()\n:POP\n", "", ""}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().offset, 14u);
}

// A version 2 trace (ART's single clock, 10-byte records), written here from
// the layout in art_trace.h, in both layouts.
std::string V2Trace(bool streaming, const char* clock) {
  auto put = [](std::string* out, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
  };
  const std::string method = "0x4\tcom.example.Feed\tbind\t(ILjava/lang/String;)V\tFeed.java\n";
  std::string key = std::string("*version\n2\nclock=") + clock + "\nvm=art\npid=300\n*threads\n300\tmain\n*methods\n";
  std::string out;
  if (!streaming) out = key + method + "*end\n";
  put(&out, 0x574f4c53, 4);
  put(&out, streaming ? 0xF2 : 2, 2);
  put(&out, 16, 2);
  put(&out, 1'700'000'000'000'000, 8);
  if (streaming) {
    put(&out, 0, 2), put(&out, 2, 1), put(&out, 300, 2), put(&out, 4, 2);
    out += "main";
    put(&out, 0, 2), put(&out, 1, 1), put(&out, method.size(), 2);
    out += method;
  }
  put(&out, 300, 2), put(&out, 0x4 | 0, 4), put(&out, 10, 4);  // enter at 10 µs
  put(&out, 300, 2), put(&out, 0x4 | 1, 4), put(&out, 25, 4);  // exit at 25 µs
  if (streaming) {
    key += "*end\n";
    put(&out, 0, 2), put(&out, 3, 1), put(&out, key.size(), 4);
    out += key;
  }
  return out;
}

TEST(ArtTraceParser, VersionTwoSingleClockTracesInBothLayouts) {
  for (bool streaming : {false, true}) {
    for (const char* clock : {"wall", "thread-cpu"}) {
      SCOPED_TRACE(std::string(streaming ? "streaming " : "") + clock);
      const std::string bytes = V2Trace(streaming, clock);
      auto t = import::ParseArtTrace({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
      ASSERT_TRUE(t.ok()) << t.error().ToString();
      EXPECT_TRUE(t.value().warnings.empty()) << t.value().warnings[0].ToString();
      EXPECT_EQ(t.value().clock, clock);
      EXPECT_EQ(t.value().pid, 300u);
      EXPECT_EQ(t.value().methods.at(1), "void com.example.Feed.bind(int, java.lang.String)");
      ASSERT_EQ(t.value().threads.size(), 1u);
      const import::ImportedThread& th = t.value().threads[0];
      EXPECT_EQ(th.name, "main");
      EXPECT_TRUE(th.cpu.empty());
      ASSERT_EQ(th.events.size(), 2u);
      EXPECT_EQ(th.events[1].time_ns - th.events[0].time_ns, 15'000u);
      EXPECT_EQ(t.value().realtime_at_zero_ns, std::string(clock) == "wall" ? uint64_t{1'700'000'000'000'000'000} : 0u);
      const std::string dump = format::EncodeDump(import::ToDump(t.value(), "v2.trace"));
      const format::Dump d = Parse(dump);
      ASSERT_EQ(d.threads.size(), 1u);
      EXPECT_NE(d.threads[0].flags & format::kThreadMain, 0u);
    }
  }
}

}  // namespace
}  // namespace lookback
