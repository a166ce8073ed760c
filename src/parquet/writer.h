// A minimal Parquet file writer: flat schemas of INT32, INT64 and UTF-8
// strings, required or optional; strings PLAIN, integers
// DELTA_BINARY_PACKED, either dictionary-encoded (RLE_DICTIONARY) on
// request; zstd-compressed data pages (format v1), bounded row groups.
// Debian 12 packages no Arrow/Parquet C++ library; this is what lookback's
// fleet export (`lookback export --to parquet`, docs/fleet.md) needs and no
// more: no nesting, no repetition levels, no page indexes.
//
// Memory is one row group, compressed: rows are buffered column by column
// for one page (`page_rows`), then encoded and compressed into the column's
// pages; the row group is written when it reaches `row_group_rows` or a
// dictionary outgrows `max_dictionary_bytes` (each column chunk: its
// dictionary page, then its data pages). The file is written
// under a temporary name (".NAME.tmp" beside it) and appears under its real
// name only when Publish() renames it, so a reader never sees half a file.
//
// Encodings follow the Parquet format specification (parquet.thrift and
// Encodings.md): definition levels and dictionary indices in the RLE /
// bit-packed hybrid, the footer in the Thrift compact protocol
// (thrift_compact.h).
#pragma once

#include "common/atomic_file.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/cell.h"
#include "common/result.h"
#include "common/status.h"

namespace lookback::parquet {

using ColumnType = CellType;

struct ColumnSpec {
  std::string name;
  ColumnType type = ColumnType::kInt64;
  bool optional = false;    // may hold NULL (definition levels)
  bool dictionary = false;  // RLE_DICTIONARY: for repetitive values (names, hosts, ids)
};

// One value of a row for AppendRow (common/cell.h). Text points into memory
// that lives until AppendRow returns.
using Cell = lookback::Cell;

struct WriterOptions {
  size_t row_group_rows = 1 << 20;
  size_t page_rows = 1 << 14;               // rows per data page: the raw buffers, kept small for the cache
  size_t max_dictionary_bytes = 1 << 20;    // a larger dictionary ends the row group early
  int zstd_level = 1;                       // fast: the export should keep up with the decoder
  std::string created_by = "lookback";
  std::vector<std::pair<std::string, std::string>> key_value;  // file-level metadata
};

// The RLE / bit-packed hybrid encoding of `values` with `bit_width` bits
// each (no length prefix), appended to `out`. Runs of 8 or more equal
// values become RLE runs, the rest bit-packed groups of 8 (the last group
// padded with zeros).
void AppendHybrid(const uint32_t* values, size_t n, int bit_width, std::string* out);

// The DELTA_BINARY_PACKED encoding of `values` (blocks of 128 values in 4
// miniblocks of 32), appended to `out`; `int32`: deltas wrap at 32 bits, as
// an INT32 column's reader adds them.
void AppendDeltaBinaryPacked(const int64_t* values, size_t n, bool int32, std::string* out);

class FileWriter {
 public:
  // Creates the temporary file beside `path`. The error names the path.
  static Result<std::unique_ptr<FileWriter>> Create(const std::string& path, std::vector<ColumnSpec> columns,
                                                    WriterOptions options = {});
  ~FileWriter();  // removes the temporary file unless published
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // One value per column, in column order, then EndRow(). A NULL in a
  // required column is a programming error (the value is written as 0/"").
  void Int(size_t column, int64_t v);
  void String(size_t column, std::string_view v);
  void Null(size_t column);
  // The first write error (later calls do nothing once failed).
  Status EndRow();
  // The same for a whole row at once (one cell per column): what exporters
  // use, one call per row instead of one per value.
  Status AppendRow(std::span<const Cell> cells);

  // Writes the last row group and the footer and closes the file (still
  // under its temporary name).
  Status Finish();
  // Renames the finished file to its real name.
  Status Publish();

  uint64_t rows() const { return total_rows_; }
  uint64_t bytes_written() const { return offset_; }
  const std::string& path() const { return path_; }

 private:
  struct Column;
  struct ChunkMeta;
  FileWriter() = default;
  Status FlushRowGroup();
  Status WriteColumnChunk(Column& c, size_t rows, ChunkMeta* meta);
  Status EncodePages();
  Status AppendPage(std::string* out, int page_type, const std::string& body, int32_t num_values, int encoding,
                    uint64_t* uncompressed, uint64_t* compressed);
  Status Write(const void* data, size_t n);
  std::string Footer() const;

  std::string path_;
  AtomicFile file_;  // the temporary until Publish (common/atomic_file.h)
  int fd_ = -1;      // file_'s fd while writing; -1 once Finish closed it
  WriterOptions options_;
  std::vector<Column> columns_;  // contiguous: every row touches each of them
  std::vector<std::vector<ChunkMeta>> row_groups_;
  std::vector<uint64_t> row_group_rows_;
  size_t group_rows_ = 0, page_rows_ = 0;
  bool over_limit_ = false;  // a dictionary or the strings outgrew their bound: end the row group
  uint64_t total_rows_ = 0;
  uint64_t offset_ = 0;
  Status error_;
  std::string scratch_, compressed_;
  void* zstd_ = nullptr;  // ZSTD_CCtx, reused for every page
};

}  // namespace lookback::parquet
