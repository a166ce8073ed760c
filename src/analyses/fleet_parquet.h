// The Parquet sink of the fleet tables (`lookback export --to parquet`;
// fleet_sqlite.h is the other): dumps appended to a Parquet dataset, one
// directory per fleet table (analyses/fleet.h), Hive-partitioned by program
// and day:
//
//   OUT/calls/program=jank/day=2026-11-24/part-<dump_id>.parquet
//
// Appending never rewrites: each dump adds one file per table it has rows
// for, named after its dump_id, so a dump already in the dataset is
// recognised and skipped. A dump's files are written under temporary names
// and renamed only once all of them are complete, its `dumps` file last: an
// interrupted export leaves no partial file visible, and a dump listed in
// `dumps` has all its rows. docs/fleet.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "analyses/fleet.h"
#include "parquet/writer.h"

namespace lookback::analyses {

class ParquetDataset : public fleet::DatasetSink {
 public:
  // `out` exists (the caller creates it, so its error comes first).
  ParquetDataset(std::string out, size_t row_group_rows) : out_(std::move(out)), row_group_rows_(row_group_rows) {}

  Result<Start> BeginDump(const fleet::DumpIdentity& id) override;
  Status Row(fleet::Table t, std::span<const fleet::Value> values) override;
  Status EndDump(bool ok) override;

  uint64_t files() const { return files_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string PathOf(fleet::Table t) const;

  std::string out_;
  size_t row_group_rows_;
  fleet::DumpIdentity id_;
  std::unique_ptr<parquet::FileWriter> writers_[fleet::kTableCount];
  uint64_t files_ = 0, bytes_ = 0;
};

// The Parquet columns of a table (partition keys left out: they are in the
// path).
std::vector<parquet::ColumnSpec> ParquetColumns(fleet::Table t);

}  // namespace lookback::analyses
