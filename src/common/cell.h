// One value of a table row, as the fleet tables (analyses/fleet.h) hand rows
// to their sinks (SQLite, Parquet). Defined here, below both, so the tables
// do not depend on a storage format and rows reach the Parquet writer
// without a copy.
#pragma once

#include <cstdint>
#include <string_view>

namespace lookback {

enum class CellType : uint8_t { kInt32, kInt64, kString };  // a column's type

// Text points into memory that lives until the sink's call returns.
struct Cell {
  enum Kind : uint8_t { kNull, kInt, kText } kind = kNull;
  int64_t i = 0;
  std::string_view s;
  static Cell Int(int64_t v) { return {kInt, v, {}}; }
  static Cell Text(std::string_view v) { return {kText, 0, v}; }
  static Cell OptionalText(std::string_view v) { return v.empty() ? Cell{} : Text(v); }
  static Cell Null() { return {}; }
};

}  // namespace lookback
