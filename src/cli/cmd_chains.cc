// lookback chains: placeholder while the analysis is written.
#include "cli/commands.h"

namespace lookback::cli {

Runner SetupChains(CLI::App*) {
  return [] { return Fail("chains: not implemented yet"), kExitError; };
}

}  // namespace lookback::cli
