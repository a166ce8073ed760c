// The Parquet writer (src/parquet/): wire encodings checked byte by byte
// against the specifications' examples, the file's framing, temporary name
// then rename, and files with every feature (nulls, dictionaries, several
// pages and row groups) read back by an independent reader, DuckDB.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "../fleet/duckdb.h"
#include "../integration/harness.h"
#include "parquet/thrift_compact.h"
#include "parquet/writer.h"

namespace lookback::testing {
namespace {

std::string Hex(const std::string& bytes) {
  std::string out;
  char b[4];
  for (unsigned char c : bytes) {
    snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

TEST(ThriftCompact, FieldHeadersUseDeltasAndZigZagVarints) {
  parquet::ThriftWriter t;
  t.I32(1, 1);      // delta 1, i32 (5): 0x15, zigzag(1) = 2
  t.I64(3, -1);     // delta 2, i64 (6): 0x26, zigzag(-1) = 1
  t.Binary(20, "ab");  // delta 17 > 15: type byte 0x08, then zigzag(20) = 40 = 0x28, length 2, bytes
  t.Bool(21, true);    // delta 1, true (1): 0x11
  t.BeginStruct(22);   // delta 1, struct (12): 0x1c
  t.I32(1, 300);       // nested ids restart: 0x15, zigzag(300) = 600 = 0xd8 0x04
  t.EndStruct();       // 0x00
  t.BeginList(23, parquet::ThriftWriter::kI32, 2);  // 0x19, size 2 << 4 | 5 = 0x25
  t.ListI32(0);
  t.ListI32(-2);       // zigzag(-2) = 3
  t.End();
  EXPECT_EQ(Hex(t.bytes()), "1502" "2601" "08" "28" "02" "6162" "11" "1c" "15d804" "00" "19" "25" "00" "03" "00");
}

TEST(ThriftCompact, LongListsCarryTheirSizeAsAVarint) {
  parquet::ThriftWriter t;
  t.BeginList(1, parquet::ThriftWriter::kBinary, 20);
  EXPECT_EQ(Hex(t.bytes()), "19" "f8" "14");
}

TEST(HybridEncoding, BitPacksTheSpecificationsExample) {
  // Encodings.md: 0..7 with bit width 3 bit-pack to 10001000 11000110 11111010.
  const uint32_t v[] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::string out;
  parquet::AppendHybrid(v, 8, 3, &out);
  EXPECT_EQ(Hex(out), "03" "88c6fa");  // header: 1 group << 1 | 1
}

TEST(HybridEncoding, RepeatsBecomeRunsAndShortTailsArePadded) {
  std::vector<uint32_t> v(10, 5);
  v.push_back(1);
  v.push_back(2);
  std::string out;
  parquet::AppendHybrid(v.data(), v.size(), 3, &out);
  // RLE run of 10 fives: (10 << 1) = 0x14, value 0x05; then one bit-packed
  // group (1, 2, zero padding): 0x03, 001 010 000 ... = 0x11 0x00 0x00.
  EXPECT_EQ(Hex(out), "1405" "03" "110000");
}

TEST(HybridEncoding, ALongRunAfterPackedValuesStartsAtAGroupBoundary) {
  std::vector<uint32_t> v = {1, 0, 1, 0, 1, 0, 1, 0};
  v.insert(v.end(), 16, 1);
  std::string out;
  parquet::AppendHybrid(v.data(), v.size(), 1, &out);
  EXPECT_EQ(Hex(out), "03" "55" "20" "01");  // one group 0b01010101, then a run of 16 ones
}

TEST(DeltaBinaryPacked, ConstantStepsTakeNoBitsPerValue) {
  const int64_t v[] = {1, 2, 3, 4, 5};
  std::string out;
  parquet::AppendDeltaBinaryPacked(v, 5, false, &out);
  // Block 128, 4 miniblocks, 5 values, first zigzag(1); min delta zigzag(1),
  // four widths of 0 and no miniblock bytes.
  EXPECT_EQ(Hex(out), "8001" "04" "05" "02" "02" "00000000");
}

TEST(DeltaBinaryPacked, PacksDeltasAboveTheMinimumLsbFirst) {
  // Encodings.md's second example: deltas -2 -2 -2 1 1 1 1, minimum -2, so
  // 0 0 0 3 3 3 3 in 2 bits, the miniblock padded to 32 values.
  const int64_t v[] = {7, 5, 3, 1, 2, 3, 4, 5};
  std::string out;
  parquet::AppendDeltaBinaryPacked(v, 8, false, &out);
  EXPECT_EQ(Hex(out), "8001" "04" "08" "0e" "03" "02000000" "c03f000000000000");
}

TEST(DeltaBinaryPacked, Int32DeltasWrapAt32Bits) {
  // INT32 readers add deltas in 32 bits: from INT32_MAX to INT32_MIN is +1.
  const int64_t v[] = {2147483647, -2147483648LL};
  std::string a, b;
  parquet::AppendDeltaBinaryPacked(v, 2, true, &a);
  const int64_t steps[] = {0, 1};
  parquet::AppendDeltaBinaryPacked(steps, 2, true, &b);
  EXPECT_EQ(a.substr(a.size() - 5), b.substr(b.size() - 5));  // the same block: min delta 1, widths 0
}

TEST(ParquetWriter, FileAppearsOnlyWhenPublished) {
  const std::string dir = FreshDir("parquet-publish");
  const std::string path = dir + "/t.parquet";
  auto w = parquet::FileWriter::Create(path, {{"a", parquet::ColumnType::kInt64}});
  ASSERT_TRUE(w.ok()) << w.error().message;
  w.value()->Int(0, 42);
  ASSERT_TRUE((w.value()->EndRow()).ok());
  EXPECT_FALSE(Exists(path));
  const std::string tmp = dir + "/.t.parquet." + std::to_string(getpid()) + ".tmp";
  EXPECT_TRUE(Exists(tmp));
  ASSERT_TRUE((w.value()->Finish()).ok());
  EXPECT_FALSE(Exists(path));  // complete, but not yet under its name
  ASSERT_TRUE((w.value()->Publish()).ok());
  EXPECT_TRUE(Exists(path));
  EXPECT_EQ(ListFiles(dir), (std::vector<std::string>{"t.parquet"}));
  // PAR1, pages, footer, footer length, PAR1.
  const std::string bytes = ReadAll(path);
  ASSERT_GT(bytes.size(), 12u);
  EXPECT_EQ(bytes.substr(0, 4), "PAR1");
  EXPECT_EQ(bytes.substr(bytes.size() - 4), "PAR1");
  uint32_t footer = 0;
  memcpy(&footer, bytes.data() + bytes.size() - 8, 4);
  EXPECT_LT(footer, bytes.size() - 12);
  EXPECT_GT(footer, 20u);
}

TEST(ParquetWriter, AbandonedFileLeavesNothing) {
  const std::string dir = FreshDir("parquet-abandon");
  {
    auto w = parquet::FileWriter::Create(dir + "/t.parquet", {{"s", parquet::ColumnType::kString}});
    ASSERT_TRUE(w.ok());
    w.value()->String(0, "x");
    ASSERT_TRUE(w.value()->EndRow().ok());
    ASSERT_TRUE((w.value()->Finish()).ok());  // finished but never published: an interrupted export
  }
  EXPECT_TRUE(ListFiles(dir).empty());
}

TEST(ParquetWriter, MissingDirectoryIsAnError) {
  const std::string dir = FreshDir("parquet-missing");
  auto w = parquet::FileWriter::Create(dir + "/no/t.parquet", {{"a", parquet::ColumnType::kInt32}});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.error().message.find("No such file or directory"), std::string::npos) << w.error().message;
}

// Every column kind, nulls, pages and row groups split mid-way, a
// dictionary with more entries than one byte of index: DuckDB reads back
// what was written.
TEST(ParquetWriter, DuckDbReadsBackEveryColumnKind) {
  if (std::string why = DuckDbUnavailable(); !why.empty()) GTEST_SKIP() << why;
  const std::string dir = FreshDir("parquet-duckdb");
  const std::string path = dir + "/all.parquet";
  using parquet::ColumnType;
  parquet::WriterOptions o;
  o.row_group_rows = 1000;
  o.page_rows = 300;
  auto created = parquet::FileWriter::Create(path,
                                             {{"i64", ColumnType::kInt64},
                                              {"i32", ColumnType::kInt32},
                                              {"opt", ColumnType::kInt64, true},
                                              {"name", ColumnType::kString, false, true},
                                              {"text", ColumnType::kString, true},
                                              {"dict_int", ColumnType::kInt32, true, true}},
                                             o);
  ASSERT_TRUE(created.ok()) << created.error().message;
  parquet::FileWriter& w = *created.value();
  const int rows = 2500;
  int64_t sum_i64 = 0, sum_i32 = 0, sum_opt = 0, nulls_opt = 0, sum_dict = 0, text_len = 0, texts = 0;
  for (int i = 0; i < rows; ++i) {
    const int64_t big = (int64_t{1} << 40) * (i % 7) - int64_t{i} * 1000003;  // negatives and wide values
    w.Int(0, big);
    sum_i64 += big;
    w.Int(1, -i);
    sum_i32 += -i;
    if (i % 3 == 0) {
      w.Null(2);
      ++nulls_opt;
    } else {
      w.Int(2, i * 7);
      sum_opt += i * 7;
    }
    w.String(3, "fn_" + std::to_string(i % 300));  // 300 names: 9-bit indices
    if (i % 5 == 0) {
      w.Null(4);
    } else {
      const std::string t(static_cast<size_t>(i % 13), static_cast<char>('a' + i % 26));
      w.String(4, t);
      text_len += static_cast<int64_t>(t.size());
      ++texts;
    }
    if (i % 4 == 1) w.Null(5); else w.Int(5, i % 3), sum_dict += i % 3;
    ASSERT_TRUE((w.EndRow()).ok());
  }
  ASSERT_TRUE((w.Finish()).ok());
  ASSERT_TRUE((w.Publish()).ok());
  const std::string f = "read_parquet('" + path + "')";
  const auto got = DuckDbQueries(
      "", {{"sums", "SELECT count(*), sum(i64), sum(i32), sum(opt), count(*) - count(opt), count(DISTINCT name), "
                    "sum(length(text)), count(text), sum(dict_int) FROM " + f},
           {"row", "SELECT i64, i32, opt, name, text, dict_int FROM " + f + " WHERE i32 = -1234"},
           {"groups", "SELECT count(DISTINCT row_group_id), min(compression), max(compression) FROM parquet_metadata('" +
                          path + "')"},
           {"types", "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM " + f + ") ORDER BY column_name"}},
      dir);
  ASSERT_EQ(got.at("sums").size(), 1u);
  EXPECT_EQ(got.at("sums")[0],
            (std::vector<std::string>{std::to_string(rows), std::to_string(sum_i64), std::to_string(sum_i32),
                                      std::to_string(sum_opt), std::to_string(nulls_opt), "300", std::to_string(text_len),
                                      std::to_string(texts), std::to_string(sum_dict)}));
  const int i = 1234;
  const int64_t big = (int64_t{1} << 40) * (i % 7) - int64_t{i} * 1000003;
  EXPECT_EQ(got.at("row").at(0), (std::vector<std::string>{std::to_string(big), "-1234", std::to_string(i * 7), "fn_34",
                                                           std::string(i % 13, static_cast<char>('a' + i % 26)), "1"}));  // 1234 % 4 = 2: not NULL
  EXPECT_EQ(got.at("groups").at(0), (std::vector<std::string>{"3", "ZSTD", "ZSTD"}));
  EXPECT_EQ(got.at("types"), (Rows{{"dict_int", "INTEGER"},
                                   {"i32", "INTEGER"},
                                   {"i64", "BIGINT"},
                                   {"name", "VARCHAR"},
                                   {"opt", "BIGINT"},
                                   {"text", "VARCHAR"}}));
}

}  // namespace
}  // namespace lookback::testing
