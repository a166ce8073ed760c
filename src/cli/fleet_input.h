// What `lookback sql` and `lookback export` share: many dumps in, the fleet
// tables (analyses/fleet.h) out. Arguments are dumps or directories (searched
// recursively for *.lbk, in name order); a dump that cannot be read is named
// on stderr and skipped, the others exported, and the exit status says so
// (kExitPartial).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "analyses/fleet.h"
#include "cli/opened_dump.h"

namespace lookback::cli {

// A destination for whole dumps: it sees where each dump begins and ends, so
// it can make a dump's rows visible all at once, or not at all.
class FleetTarget : public analyses::fleet::TableSink {
 public:
  enum class Start { kExport, kAlreadyThere };
  // Before a dump's first row. kAlreadyThere skips it (appending the same
  // dump twice); an error skips it too and is reported.
  virtual Start BeginDump(const analyses::fleet::DumpIdentity& id, std::string* error) = 0;
  // After its last row: `ok` false drops what it wrote. "" or an error.
  virtual std::string EndDump(bool ok) = 0;
};

struct FleetInput : DumpSelection {
  std::vector<std::string> paths;  // dumps and directories
  std::string signatures;
  bool quiet = false;
};

// Declares the options `sql` and `export` share (the dumps, --thread,
// --window, --symbols, --signatures, -q) on `sub`.
void AddFleetOptions(CLI::App* sub, FleetInput* in);

// Exports every dump to `target`. Returns kExitOk, kExitPartial when some
// dumps were skipped (each named on stderr), kExitError when none could be
// exported or the target failed, kExitUsage for bad options.
int ExportFleet(const FleetInput& in, FleetTarget& target, const char* verb);

}  // namespace lookback::cli
