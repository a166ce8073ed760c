#include "parquet/writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "parquet/thrift_compact.h"

namespace lookback::parquet {
namespace {

// parquet.thrift enums.
enum ParquetType : int32_t { kInt32Type = 1, kInt64Type = 2, kByteArrayType = 6 };
enum Repetition : int32_t { kRequired = 0, kOptional = 1 };
enum Encoding : int32_t { kPlain = 0, kRle = 3, kDeltaBinaryPacked = 5, kRleDictionary = 8 };
enum PageType : int32_t { kDataPage = 0, kDictionaryPage = 2 };
constexpr int32_t kCodecZstd = 6;
constexpr int32_t kConvertedUtf8 = 0;
constexpr char kMagic[4] = {'P', 'A', 'R', '1'};
// Bounded memory: plain strings also end a row group at 64 MiB (their u32
// offsets stay far from overflowing).
constexpr size_t kMaxStringBytes = 64u << 20;

int32_t PhysicalType(ColumnType t) {
  switch (t) {
    case ColumnType::kInt32: return kInt32Type;
    case ColumnType::kInt64: return kInt64Type;
    case ColumnType::kString: return kByteArrayType;
  }
  return kByteArrayType;
}

// Dictionary columns: indices; strings: PLAIN; integers: deltas, bit-packed
// (ids and timestamps grow by small steps: a few bits a value before zstd).
int32_t DataEncoding(const ColumnSpec& spec) {
  if (spec.dictionary) return kRleDictionary;
  return spec.type == ColumnType::kString ? kPlain : kDeltaBinaryPacked;
}

void PutLe(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

int BitWidth(uint32_t max_value) {
  int w = 0;
  while (max_value != 0) {
    ++w;
    max_value >>= 1;
  }
  return w;
}

}  // namespace

void AppendHybrid(const uint32_t* values, size_t n, int bit_width, std::string* out) {
  const int value_bytes = (bit_width + 7) / 8;
  size_t i = 0;
  auto run_at = [&](size_t at) {
    size_t r = 1;
    while (at + r < n && values[at + r] == values[at]) ++r;
    return r;
  };
  while (i < n) {
    const size_t run = run_at(i);
    if (run >= 8) {
      PutVarint(out, static_cast<uint64_t>(run) << 1);
      PutLe(out, values[i], value_bytes);
      i += run;
      continue;
    }
    // Bit-packed groups of 8 real values, until a long run starts at a group
    // boundary; only the very last group may be padded (the reader stops at
    // the page's value count).
    size_t groups = 0;
    size_t end = i;
    while (end < n) {
      if (end != i && run_at(end) >= 8) break;
      end = std::min(n, end + 8);
      ++groups;
      if (end - i != groups * 8) break;  // a short last group: the end of the data
    }
    PutVarint(out, (static_cast<uint64_t>(groups) << 1) | 1);
    // Values LSB first; 8 values of `bit_width` bits fill exactly `bit_width` bytes.
    uint64_t acc = 0;
    int bits = 0;
    for (size_t k = i; k < i + groups * 8; ++k) {
      acc |= static_cast<uint64_t>(k < end ? values[k] : 0) << bits;
      bits += bit_width;
      while (bits >= 8) {
        out->push_back(static_cast<char>(acc & 0xFF));
        acc >>= 8;
        bits -= 8;
      }
    }
    i = end;
  }
}

void AppendDeltaBinaryPacked(const int64_t* values, size_t n, bool int32, std::string* out) {
  // Header: block size, miniblocks per block, value count, first value.
  constexpr size_t kBlock = 128, kMiniblocks = 4, kMini = kBlock / kMiniblocks;
  PutVarint(out, kBlock);
  PutVarint(out, kMiniblocks);
  PutVarint(out, n);
  auto zigzag = [](int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); };
  PutVarint(out, n == 0 ? 0 : zigzag(values[0]));
  uint64_t deltas[kBlock];
  for (size_t at = 1; at < n; at += kBlock) {
    const size_t count = std::min(kBlock, n - at);
    // Deltas wrap like the reader's additions do (two's complement).
    int64_t min_delta = std::numeric_limits<int64_t>::max();
    for (size_t k = 0; k < count; ++k) {
      int64_t d = static_cast<int64_t>(static_cast<uint64_t>(values[at + k]) - static_cast<uint64_t>(values[at + k - 1]));
      if (int32) d = static_cast<int32_t>(static_cast<uint32_t>(d));  // an INT32 reader adds in 32 bits
      deltas[k] = static_cast<uint64_t>(d);
      min_delta = std::min(min_delta, d);
    }
    PutVarint(out, zigzag(min_delta));
    int widths[kMiniblocks] = {};
    for (size_t m = 0; m < kMiniblocks; ++m) {
      uint64_t any = 0;
      for (size_t k = m * kMini; k < std::min(count, (m + 1) * kMini); ++k) {
        deltas[k] -= static_cast<uint64_t>(min_delta);
        if (int32) deltas[k] = static_cast<uint32_t>(deltas[k]);
        any |= deltas[k];
      }
      widths[m] = any == 0 ? 0 : 64 - __builtin_clzll(any);
      out->push_back(static_cast<char>(widths[m]));
    }
    // Miniblocks with values, each padded to 32 values (zeros); none for
    // unused ones. 32 values of w bits are 4w bytes.
    std::fill(deltas + count, deltas + kBlock, 0);
    for (size_t m = 0; m < kMiniblocks && m * kMini < count; ++m) {
      const int w = widths[m];
      if (w == 0) continue;
      const size_t base = out->size();
      out->resize(base + 4 * static_cast<size_t>(w));
      char* p = out->data() + base;
      uint64_t acc = 0;
      int bits = 0;
      for (size_t k = m * kMini; k < (m + 1) * kMini; ++k) {
        const uint64_t v = deltas[k];
        acc |= v << bits;  // bits < 64
        if (bits + w < 64) {
          bits += w;
          continue;
        }
        memcpy(p, &acc, 8);  // x86-64: little-endian, as the format wants
        p += 8;
        const int used = 64 - bits;  // bits of v that fit
        acc = used == 64 ? 0 : v >> used;
        bits = w - used;
      }
      for (; bits > 0; bits -= 8, acc >>= 8) *p++ = static_cast<char>(static_cast<uint8_t>(acc));
    }
  }
}

struct FileWriter::Column {
  ColumnSpec spec;
  std::vector<int64_t> ints;          // non-dictionary integer values (non-null only)
  std::string strings;                // non-dictionary strings, PLAIN (u32 length + bytes)
  std::vector<uint32_t> string_ends;  // end offset in `strings` of each value
  std::vector<uint32_t> indices;      // dictionary columns: each non-null value's index
  std::vector<uint32_t> defined;      // optional columns: 1 per row with a value, 0 per NULL
  std::unordered_map<std::string, uint32_t> string_dict;
  std::unordered_map<int64_t, uint32_t> int_dict;
  // The hot path of integer dictionaries without hashing: the value seen
  // last (ids repeat row after row), and a table for small non-negative
  // values (function ids, depths, flags), holding index + 1.
  static constexpr int64_t kSmall = 1 << 16;
  int64_t last_value = 0;
  uint32_t last_index = 0;
  bool has_last = false;
  std::vector<uint32_t> small;
  std::string dict_plain;  // the dictionary page's values, in index order
  uint32_t dict_size = 0;
  std::vector<int64_t> dict_ints;  // integer dictionaries' values, in index order (for statistics)
  // The row group's data pages so far, encoded and compressed (headers
  // included): the raw buffers above hold one page at most, so they stay in
  // the cache, and the row group costs what it compresses to.
  std::string pages;
  uint64_t uncompressed = 0, compressed = 0;  // of `pages`
  int64_t min = std::numeric_limits<int64_t>::max(), max = std::numeric_limits<int64_t>::min();
  uint64_t nulls = 0;

  // After a page is encoded.
  void ClearPage() {
    ints.clear();
    strings.clear();
    string_ends.clear();
    indices.clear();
    defined.clear();
  }
  // After a row group is written.
  void Clear() {
    ClearPage();
    pages.clear();
    uncompressed = compressed = 0;
    min = std::numeric_limits<int64_t>::max();
    max = std::numeric_limits<int64_t>::min();
    string_dict.clear();
    int_dict.clear();
    has_last = false;
    std::fill(small.begin(), small.end(), 0u);
    dict_plain.clear();
    dict_size = 0;
    dict_ints.clear();
    nulls = 0;
  }
  int int_bytes() const { return spec.type == ColumnType::kInt32 ? 4 : 8; }
};

struct FileWriter::ChunkMeta {
  uint64_t start = 0, data_page = 0, dictionary_page = 0, uncompressed = 0, compressed = 0, values = 0, nulls = 0;
  bool has_dictionary = false, has_stats = false;
  int64_t min = 0, max = 0;
};

Result<std::unique_ptr<FileWriter>> FileWriter::Create(const std::string& path, std::vector<ColumnSpec> columns,
                                                       WriterOptions options) {
  std::unique_ptr<FileWriter> w(new FileWriter());
  w->path_ = path;
  w->options_ = std::move(options);
  if (w->options_.page_rows == 0) w->options_.page_rows = 1;
  if (w->options_.row_group_rows == 0) w->options_.row_group_rows = 1;
  for (auto& spec : columns) {
    Column& c = w->columns_.emplace_back();
    c.spec = std::move(spec);
    // A page's worth up front: no copying as the buffers grow.
    const size_t cap = std::min(w->options_.row_group_rows, w->options_.page_rows);
    if (c.spec.dictionary) c.indices.reserve(cap);
    else if (c.spec.type != ColumnType::kString) c.ints.reserve(cap);
    if (c.spec.optional) c.defined.reserve(cap);
  }
  // Hidden and this process's own (common/atomic_file.h): two exports into
  // one dataset never write through each other's temporaries, and engines
  // skip the file until it is published.
  if (Status s = w->file_.Create(path); !s.ok()) return Error{s.message()};
  w->fd_ = w->file_.ReleaseFd();
  w->zstd_ = ZSTD_createCCtx();
  if (w->zstd_ == nullptr) return Error{"cannot create a zstd context"};
  if (Status s = w->Write(kMagic, 4); !s.ok()) return Error{s.message()};
  return w;
}

FileWriter::~FileWriter() {
  if (fd_ >= 0) close(fd_);  // file_ removes the temporary unless published
  ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_));
}

void FileWriter::Int(size_t column, int64_t v) {
  Column& c = columns_[column];
  if (c.spec.optional) c.defined.push_back(1);
  if (!c.spec.dictionary) {
    c.ints.push_back(v);
    return;
  }
  if (c.has_last && c.last_value == v) {
    c.indices.push_back(c.last_index);
    return;
  }
  uint32_t index;
  if (v >= 0 && v < Column::kSmall) {
    if (static_cast<size_t>(v) >= c.small.size()) c.small.resize(static_cast<size_t>(v) + 1, 0u);
    uint32_t& slot = c.small[static_cast<size_t>(v)];
    if (slot == 0) {
      PutLe(&c.dict_plain, static_cast<uint64_t>(v), c.int_bytes());
      c.dict_ints.push_back(v);
      slot = ++c.dict_size;
      over_limit_ = over_limit_ || c.dict_plain.size() > options_.max_dictionary_bytes;
    }
    index = slot - 1;
  } else {
    auto [it, added] = c.int_dict.try_emplace(v, c.dict_size);
    if (added) {
      PutLe(&c.dict_plain, static_cast<uint64_t>(v), c.int_bytes());
      c.dict_ints.push_back(v);
      ++c.dict_size;
      over_limit_ = over_limit_ || c.dict_plain.size() > options_.max_dictionary_bytes;
    }
    index = it->second;
  }
  c.has_last = true;
  c.last_value = v;
  c.last_index = index;
  c.indices.push_back(index);
}

void FileWriter::String(size_t column, std::string_view v) {
  Column& c = columns_[column];
  if (c.spec.optional) c.defined.push_back(1);
  if (!c.spec.dictionary) {
    PutLe(&c.strings, v.size(), 4);
    c.strings.append(v);
    c.string_ends.push_back(static_cast<uint32_t>(c.strings.size()));
    over_limit_ = over_limit_ || c.strings.size() > kMaxStringBytes;
    return;
  }
  auto it = c.string_dict.find(std::string(v));
  if (it == c.string_dict.end()) {
    it = c.string_dict.emplace(std::string(v), c.dict_size).first;
    PutLe(&c.dict_plain, v.size(), 4);
    c.dict_plain.append(v);
    ++c.dict_size;
    over_limit_ = over_limit_ || c.dict_plain.size() > options_.max_dictionary_bytes;
  }
  c.indices.push_back(it->second);
}

void FileWriter::Null(size_t column) {
  Column& c = columns_[column];
  if (!c.spec.optional) {  // keep the columns aligned; the caller broke its own schema
    if (c.spec.type == ColumnType::kString) String(column, ""); else Int(column, 0);
    return;
  }
  c.defined.push_back(0);
  ++c.nulls;
}

Status FileWriter::AppendRow(std::span<const Cell> cells) {
  const size_t n = std::min(cells.size(), columns_.size());
  for (size_t i = 0; i < n; ++i) {
    const Cell& v = cells[i];
    Column& c = columns_[i];
    // The common cases inline (a plain integer, a dictionary's last value
    // again): this loop runs for every value of every row.
    if (v.kind == Cell::kInt) {
      if (!c.spec.dictionary) {
        if (c.spec.optional) c.defined.push_back(1);
        c.ints.push_back(v.i);
        continue;
      }
      uint32_t index;
      if (c.has_last && c.last_value == v.i) {
        index = c.last_index;
      } else if (v.i >= 0 && static_cast<uint64_t>(v.i) < c.small.size() && c.small[static_cast<size_t>(v.i)] != 0) {
        index = c.small[static_cast<size_t>(v.i)] - 1;
        c.last_value = v.i;
        c.last_index = index;
        c.has_last = true;
      } else {
        Int(i, v.i);  // a new value: the dictionary grows
        continue;
      }
      if (c.spec.optional) c.defined.push_back(1);
      c.indices.push_back(index);
    } else if (v.kind == Cell::kText) {
      String(i, v.s);
    } else {
      Null(i);
    }
  }
  return EndRow();
}

Status FileWriter::EndRow() {
  if (!error_.ok()) return error_;
  ++group_rows_;
  ++total_rows_;
  if (++page_rows_ >= options_.page_rows) error_ = EncodePages();
  if (error_.ok() && (group_rows_ >= options_.row_group_rows || over_limit_)) error_ = FlushRowGroup();
  return error_;
}

Status FileWriter::Write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = write(fd_, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Status::Error("cannot write '" + file_.temp_path() + "': " + strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
    offset_ += static_cast<uint64_t>(w);
  }
  return Status::Ok();
}

Status FileWriter::AppendPage(std::string* out, int page_type, const std::string& body, int32_t num_values,
                                   int encoding, uint64_t* uncompressed, uint64_t* compressed) {
  const size_t bound = ZSTD_compressBound(body.size());
  if (compressed_.size() < bound) compressed_.resize(bound);
  const size_t n = ZSTD_compressCCtx(static_cast<ZSTD_CCtx*>(zstd_), compressed_.data(), bound, body.data(), body.size(),
                                     options_.zstd_level);
  if (ZSTD_isError(n)) return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(n));
  if (body.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) return Status::Error("page too large");
  ThriftWriter h;
  h.I32(1, page_type);
  h.I32(2, static_cast<int32_t>(body.size()));
  h.I32(3, static_cast<int32_t>(n));
  if (page_type == kDataPage) {
    h.BeginStruct(5);
    h.I32(1, num_values);
    h.I32(2, encoding);
    h.I32(3, kRle);  // definition levels
    h.I32(4, kRle);  // repetition levels (none: flat schema)
    h.EndStruct();
  } else {
    h.BeginStruct(7);
    h.I32(1, num_values);
    h.I32(2, kPlain);
    h.EndStruct();
  }
  h.End();
  *uncompressed += h.bytes().size() + body.size();
  *compressed += h.bytes().size() + n;
  out->append(h.bytes());
  out->append(compressed_.data(), n);
  return Status::Ok();
}

Status FileWriter::EncodePages() {
  const size_t rows = page_rows_;
  page_rows_ = 0;
  if (rows == 0) return Status::Ok();
  for (Column& c : columns_) {
    std::string& body = scratch_;
    body.clear();
    size_t present = rows;
    if (c.spec.optional) {
      std::string levels;
      AppendHybrid(c.defined.data(), rows, 1, &levels);
      PutLe(&body, levels.size(), 4);
      body += levels;
      present = static_cast<size_t>(std::count(c.defined.begin(), c.defined.end(), 1u));
    }
    if (c.spec.dictionary) {
      // Indices refer to the dictionary as it is now; later pages may use more bits.
      const int index_width = BitWidth(c.dict_size > 0 ? c.dict_size - 1 : 0);
      body.push_back(static_cast<char>(index_width));
      AppendHybrid(c.indices.data(), present, index_width, &body);
    } else if (c.spec.type == ColumnType::kString) {
      body.append(c.strings);
    } else {
      AppendDeltaBinaryPacked(c.ints.data(), present, c.spec.type == ColumnType::kInt32, &body);
      if (present > 0) {  // statistics in one tight pass, not a compare per value appended
        const auto [lo, hi] = std::minmax_element(c.ints.begin(), c.ints.end());
        c.min = std::min(c.min, *lo);
        c.max = std::max(c.max, *hi);
      }
    }
    if (Status s = AppendPage(&c.pages, kDataPage, body, static_cast<int32_t>(rows), DataEncoding(c.spec),
                              &c.uncompressed, &c.compressed);
        !s.ok())
      return s;
    c.ClearPage();
  }
  return Status::Ok();
}

Status FileWriter::WriteColumnChunk(Column& c, size_t rows, ChunkMeta* meta) {
  meta->start = offset_;
  meta->values = rows;
  meta->nulls = c.nulls;
  if (c.spec.dictionary && !c.dict_ints.empty()) {
    const auto [lo, hi] = std::minmax_element(c.dict_ints.begin(), c.dict_ints.end());
    c.min = *lo;
    c.max = *hi;
  }
  meta->has_stats = c.spec.type != ColumnType::kString && c.min <= c.max;
  meta->min = c.min;
  meta->max = c.max;
  if (c.spec.dictionary) {  // the dictionary page first, then the data pages that use it
    meta->has_dictionary = true;
    meta->dictionary_page = offset_;
    std::string page;
    if (Status s = AppendPage(&page, kDictionaryPage, c.dict_plain, static_cast<int32_t>(c.dict_size), kPlain,
                              &meta->uncompressed, &meta->compressed);
        !s.ok())
      return s;
    if (Status s = Write(page.data(), page.size()); !s.ok()) return s;
  }
  meta->data_page = offset_;
  meta->uncompressed += c.uncompressed;
  meta->compressed += c.compressed;
  return Write(c.pages.data(), c.pages.size());
}

Status FileWriter::FlushRowGroup() {
  if (group_rows_ == 0) return Status::Ok();
  if (Status s = EncodePages(); !s.ok()) return s;
  std::vector<ChunkMeta> metas(columns_.size());
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (Status s = WriteColumnChunk(columns_[i], group_rows_, &metas[i]); !s.ok()) return s;
    columns_[i].Clear();
  }
  over_limit_ = false;
  row_groups_.push_back(std::move(metas));
  row_group_rows_.push_back(group_rows_);
  group_rows_ = 0;
  return Status::Ok();
}

std::string FileWriter::Footer() const {
  ThriftWriter t;
  t.I32(1, 1);  // format version
  t.BeginList(2, ThriftWriter::kStruct, columns_.size() + 1);
  t.BeginListStruct();  // the root: a group of every column
  t.Binary(4, "schema");
  t.I32(5, static_cast<int32_t>(columns_.size()));
  t.EndStruct();
  for (const Column& c : columns_) {
    t.BeginListStruct();
    t.I32(1, PhysicalType(c.spec.type));
    t.I32(3, c.spec.optional ? kOptional : kRequired);
    t.Binary(4, c.spec.name);
    if (c.spec.type == ColumnType::kString) {
      t.I32(6, kConvertedUtf8);
      t.BeginStruct(10);  // LogicalType union: STRING
      t.BeginStruct(1);
      t.EndStruct();
      t.EndStruct();
    }
    t.EndStruct();
  }
  t.I64(3, static_cast<int64_t>(total_rows_));
  t.BeginList(4, ThriftWriter::kStruct, row_groups_.size());
  for (size_t g = 0; g < row_groups_.size(); ++g) {
    const auto& metas = row_groups_[g];
    uint64_t uncompressed = 0, compressed = 0;
    for (const auto& m : metas) uncompressed += m.uncompressed, compressed += m.compressed;
    t.BeginListStruct();
    t.BeginList(1, ThriftWriter::kStruct, metas.size());
    for (size_t i = 0; i < metas.size(); ++i) {
      const ChunkMeta& m = metas[i];
      const ColumnSpec& spec = columns_[i].spec;
      t.BeginListStruct();  // ColumnChunk
      t.I64(2, static_cast<int64_t>(m.start));
      t.BeginStruct(3);  // ColumnMetaData
      t.I32(1, PhysicalType(spec.type));
      const bool levels = spec.optional;
      t.BeginList(2, ThriftWriter::kI32, (m.has_dictionary ? 2 : 1) + (levels ? 1 : 0));
      t.ListI32(DataEncoding(spec));
      if (m.has_dictionary) t.ListI32(kPlain);
      if (levels) t.ListI32(kRle);
      t.BeginList(3, ThriftWriter::kBinary, 1);
      t.ListBinary(spec.name);
      t.I32(4, kCodecZstd);
      t.I64(5, static_cast<int64_t>(m.values));
      t.I64(6, static_cast<int64_t>(m.uncompressed));
      t.I64(7, static_cast<int64_t>(m.compressed));
      t.I64(9, static_cast<int64_t>(m.data_page));
      if (m.has_dictionary) t.I64(11, static_cast<int64_t>(m.dictionary_page));
      t.BeginStruct(12);  // Statistics: null_count, and min/max of integers (lets engines skip row groups)
      t.I64(3, static_cast<int64_t>(m.nulls));
      if (m.has_stats) {
        std::string lo, hi;
        const int bytes = spec.type == ColumnType::kInt32 ? 4 : 8;
        PutLe(&hi, static_cast<uint64_t>(m.max), bytes);
        PutLe(&lo, static_cast<uint64_t>(m.min), bytes);
        t.Binary(5, hi);
        t.Binary(6, lo);
      }
      t.EndStruct();
      t.EndStruct();  // ColumnMetaData
      t.EndStruct();  // ColumnChunk
    }
    t.I64(2, static_cast<int64_t>(uncompressed));
    t.I64(3, static_cast<int64_t>(row_group_rows_[g]));
    t.I64(5, static_cast<int64_t>(metas.empty() ? 0 : metas[0].start));
    t.I64(6, static_cast<int64_t>(compressed));
    t.I16(7, static_cast<int16_t>(g));
    t.EndStruct();
  }
  if (!options_.key_value.empty()) {
    t.BeginList(5, ThriftWriter::kStruct, options_.key_value.size());
    for (const auto& [k, v] : options_.key_value) {
      t.BeginListStruct();
      t.Binary(1, k);
      t.Binary(2, v);
      t.EndStruct();
    }
  }
  t.Binary(6, options_.created_by);
  t.End();
  return t.bytes();
}

Status FileWriter::Finish() {
  if (error_.ok()) error_ = FlushRowGroup();
  if (!error_.ok()) return error_;
  const std::string footer = Footer();
  std::string tail;
  PutLe(&tail, footer.size(), 4);
  tail.append(kMagic, 4);
  if (Status s = Write(footer.data(), footer.size()); !s.ok()) return error_ = s;
  if (Status s = Write(tail.data(), tail.size()); !s.ok()) return error_ = s;
  if (close(fd_) != 0) error_ = Status::Error("cannot write '" + file_.temp_path() + "': " + strerror(errno));
  fd_ = -1;
  return error_;
}

Status FileWriter::Publish() {
  if (!error_.ok()) return error_;
  if (fd_ >= 0) return Status::Error("Publish() before Finish()");
  if (Status s = file_.Commit(); !s.ok()) return error_ = s;
  return Status::Ok();
}

}  // namespace lookback::parquet
