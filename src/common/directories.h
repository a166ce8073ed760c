// `mkdir -p` for the reader side's outputs (per-thread exporters, the
// Parquet dataset). The runtime has its own (runtime/dump_writer.cc): its
// dump directories are created with mode 0700 and other messages.
#pragma once

#include <string>

#include "common/status.h"

namespace lookback {

// Creates `dir` and its missing parents (mode 0755). An error names the
// directory that could not be created, or says `dir` is not a directory.
Status MakeDirectories(const std::string& dir);

}  // namespace lookback
