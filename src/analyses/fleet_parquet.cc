#include "analyses/fleet_parquet.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cctype>

#include "common/directories.h"

namespace lookback::analyses {
namespace {

// Hive escaping of a partition value: anything but [A-Za-z0-9._-] as %XX
// (Spark, Trino and DuckDB unescape it).
std::string HiveEscape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if (isalnum(c) || c == '.' || c == '_' || c == '-') out.push_back(static_cast<char>(c));
    else out += fmt::format("%{:02X}", c);
  }
  return out.empty() ? "__HIVE_DEFAULT_PARTITION__" : out;
}

}  // namespace

std::vector<parquet::ColumnSpec> ParquetColumns(fleet::Table t) {
  std::vector<parquet::ColumnSpec> cols;
  for (const fleet::ColumnDef& c : fleet::TableOf(t).columns) {
    if (c.partition) continue;
    cols.push_back({c.name, c.type, c.nullable, c.dictionary});
  }
  return cols;
}

Result<fleet::DatasetSink::Start> ParquetDataset::BeginDump(const fleet::DumpIdentity& id) {
  id_ = id;
  for (auto& w : writers_) w.reset();
  struct stat st;
  if (stat(PathOf(fleet::kDumps).c_str(), &st) == 0) return Start::kAlreadyThere;
  return Start::kExport;  // nothing can fail before the first row: files are created then
}

Status ParquetDataset::Row(fleet::Table t, std::span<const fleet::Value> values) {
  std::unique_ptr<parquet::FileWriter>& w = writers_[t];
  if (!w) {  // a table's file exists only when the dump has rows for it
    const std::string path = PathOf(t);
    if (Status s = MakeDirectories(path.substr(0, path.rfind('/'))); !s.ok()) return s;
    parquet::WriterOptions wo;
    wo.row_group_rows = row_group_rows_;
    wo.created_by = "lookback version 0.1.0";
    wo.key_value = {{"lookback.schema_version", std::to_string(fleet::kSchemaVersion)},
                    {"lookback.table", fleet::TableOf(t).name}};
    auto created = parquet::FileWriter::Create(path, ParquetColumns(t), wo);
    if (!created.ok()) return Status::Error(created.error().message);
    w = std::move(created.value());
  }
  if (t != fleet::kDumps) return w->AppendRow(values);  // only `dumps` has partition keys
  std::vector<fleet::Value> kept;                          // one row per dump
  const auto& cols = fleet::TableOf(t).columns;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!cols[i].partition) kept.push_back(values[i]);  // the others are in the path
  }
  return w->AppendRow(kept);
}

Status ParquetDataset::EndDump(bool ok) {
  if (!ok) {
    for (auto& w : writers_) w.reset();  // their temporary files go with them
    return Status::Ok();
  }
  for (auto& w : writers_) {
    if (w) {
      if (Status s = w->Finish(); !s.ok()) return s;
    }
  }
  // `dumps` last: once a dump is listed, all its rows are there.
  for (int t = fleet::kTableCount - 1; t >= 0; --t) {
    if (std::unique_ptr<parquet::FileWriter>& w = writers_[t]) {
      if (Status s = w->Publish(); !s.ok()) return s;
      bytes_ += w->bytes_written();
      ++files_;
      w.reset();
    }
  }
  return Status::Ok();
}

std::string ParquetDataset::PathOf(fleet::Table t) const {
  return fmt::format("{}/{}/program={}/day={}/part-{:016x}.parquet", out_, fleet::TableOf(t).name,
                     HiveEscape(id_.program), HiveEscape(id_.day), static_cast<uint64_t>(id_.dump_id));
}

}  // namespace lookback::analyses
