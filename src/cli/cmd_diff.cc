// lookback diff: placeholder while the analysis is written.
#include "cli/commands.h"

namespace lookback::cli {

Runner SetupDiff(CLI::App*) {
  return [] { return Fail("diff: not implemented yet"), kExitError; };
}

}  // namespace lookback::cli
