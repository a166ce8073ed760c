// What `lookback sql` and `lookback export` share: many dumps in, the fleet
// tables (analyses/fleet.h) out. Arguments are dumps or directories (searched
// recursively for *.lbk, in name order); a dump that cannot be read is named
// on stderr and skipped, the others exported, and the outcome says so
// (kPartial).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analyses/fleet.h"
#include "cli/opened_dump.h"

namespace lookback::cli {

struct FleetInput : DumpSelection {
  std::vector<std::string> paths;  // dumps and directories
  std::string signatures;
  bool quiet = false;
};

// Declares the options `sql` and `export` share (the dumps, --thread,
// --window, --symbols, --signatures, -q) on `sub`.
void AddFleetOptions(CLI::App* sub, FleetInput* in);

// Exports every dump to `target` (analyses/fleet_sqlite.h,
// fleet_parquet.h). kPartial when some dumps were skipped (each named on
// stderr), kError when none could be exported or the target failed, kUsage
// for bad options.
Outcome ExportFleet(const FleetInput& in, analyses::fleet::DatasetSink& target, const char* verb);

}  // namespace lookback::cli
