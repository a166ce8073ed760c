// lookback export --to parquet DUMP_OR_DIR... -o OUT/: dumps appended to a
// Parquet dataset, one directory per fleet table (analyses/fleet.h),
// Hive-partitioned by program and day:
//
//   OUT/calls/program=jank/day=2026-11-24/part-<dump_id>.parquet
//
// Appending never rewrites: each dump adds one file per table it has rows
// for, named after its dump_id, so a dump already in the dataset is
// recognised and skipped. A dump's files are written under temporary names
// and renamed only once all of them are complete, its `dumps` file last: an
// interrupted export leaves no partial file visible, and a dump listed in
// `dumps` has all its rows. docs/fleet.md.
#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include "analyses/fleet.h"
#include "cli/commands.h"
#include "cli/fleet_input.h"
#include "parquet/writer.h"

namespace lookback::cli {
namespace {

namespace fleet = analyses::fleet;

struct ExportOptions {
  FleetInput in;
  std::string to, out;
  size_t row_group_rows = 1 << 20;
};

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

std::string MakeDirs(const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string dir = path.substr(0, at);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return "cannot create '" + dir + "': " + strerror(errno);
  }
  return "";
}

class ParquetDataset : public FleetTarget {
 public:
  ParquetDataset(std::string out, size_t row_group_rows) : out_(std::move(out)), row_group_rows_(row_group_rows) {}

  Start BeginDump(const fleet::DumpIdentity& id, std::string* error) override {
    id_ = id;
    for (auto& w : writers_) w.reset();
    struct stat st;
    if (stat(PathOf(fleet::kDumps).c_str(), &st) == 0) return Start::kAlreadyThere;
    (void)error;  // nothing can fail before the first row: files are created then
    return Start::kExport;
  }

  std::string Row(fleet::Table t, std::span<const fleet::Value> values) override {
    std::unique_ptr<parquet::FileWriter>& w = writers_[t];
    if (!w) {  // a table's file exists only when the dump has rows for it
      const std::string path = PathOf(t);
      if (std::string err = MakeDirs(path.substr(0, path.rfind('/'))); !err.empty()) return err;
      parquet::WriterOptions wo;
      wo.row_group_rows = row_group_rows_;
      wo.created_by = "lookback version 0.1.0";
      wo.key_value = {{"lookback.schema_version", std::to_string(fleet::kSchemaVersion)},
                      {"lookback.table", fleet::TableOf(t).name}};
      auto created = parquet::FileWriter::Create(path, fleet::ParquetColumns(t), wo);
      if (!created.ok()) return created.error().message;
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

  std::string EndDump(bool ok) override {
    if (!ok) {
      for (auto& w : writers_) w.reset();  // their temporary files go with them
      return "";
    }
    for (auto& w : writers_) {
      if (w) {
        if (std::string err = w->Finish(); !err.empty()) return err;
      }
    }
    // `dumps` last: once a dump is listed, all its rows are there.
    for (int t = fleet::kTableCount - 1; t >= 0; --t) {
      if (std::unique_ptr<parquet::FileWriter>& w = writers_[t]) {
        if (std::string err = w->Publish(); !err.empty()) return err;
        bytes_ += w->bytes_written();
        ++files_;
        w.reset();
      }
    }
    return "";
  }

  uint64_t files() const { return files_; }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string PathOf(fleet::Table t) const {
    return fmt::format("{}/{}/program={}/day={}/part-{:016x}.parquet", out_, fleet::TableOf(t).name,
                       HiveEscape(id_.program), HiveEscape(id_.day), static_cast<uint64_t>(id_.dump_id));
  }

  std::string out_;
  size_t row_group_rows_;
  fleet::DumpIdentity id_;
  std::unique_ptr<parquet::FileWriter> writers_[fleet::kTableCount];
  uint64_t files_ = 0, bytes_ = 0;
};

int Run(const ExportOptions& o) {
  if (o.to != "parquet") return Fail("unknown --to '" + o.to + "' (parquet)"), kExitUsage;
  if (o.row_group_rows == 0) return Fail("--row-group-rows must be at least 1"), kExitUsage;
  std::string out = o.out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (std::string err = MakeDirs(out); !err.empty()) return Fail(err), kExitError;
  ParquetDataset dataset(out, o.row_group_rows);
  const int rc = ExportFleet(o.in, dataset, "exporting to Parquet");
  if (!o.in.quiet && dataset.files() > 0)
    fprintf(stderr, "lookback: wrote %llu file(s), %s bytes, under %s/\n", static_cast<unsigned long long>(dataset.files()),
            fmt::format("{}", dataset.bytes()).c_str(), out.c_str());
  return rc;
}

}  // namespace

Runner SetupExport(CLI::App* sub) {
  auto o = std::make_shared<ExportOptions>();
  AddFleetOptions(sub, &o->in);
  sub->add_option("--to", o->to, "Output format: parquet")->required();
  sub->add_option("-o,--output", o->out, "The dataset directory (created; appended to if it exists)")->required();
  sub->add_option("--row-group-rows", o->row_group_rows, "Rows per Parquet row group (default 1048576): bounds memory");
  sub->footer("Tables: dumps, threads, functions, calls, samples, thread_states, signature_matches, each under "
              "OUT/<table>/program=<program>/day=<YYYY-MM-DD>/. Exit status 3: some dumps could not be read and were "
              "skipped. See docs/fleet.md.");
  return [o] { return Run(*o); };
}

}  // namespace lookback::cli
