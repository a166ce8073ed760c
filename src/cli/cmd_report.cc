// lookback report: placeholder while the analysis is written.
#include "cli/commands.h"

namespace lookback::cli {

Runner SetupReport(CLI::App*) {
  return [] { return Fail("report: not implemented yet"), kExitError; };
}

}  // namespace lookback::cli
