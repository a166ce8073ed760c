// An imported trace as a lookback dump: method keys LB_METHOD_KEY(id) named
// in a NAMES section (as the JVM agent names its methods), timestamps on a
// synthetic 1 GHz clock (one tick per ns, so µs and ns convert exactly), the
// thread CPU clock as the CPU section, and the file's facts as METADATA.
#pragma once

#include <string>

#include "format/dump_builder.h"
#include "import/imported.h"

namespace lookback::import {

// Nesting repairs, counted into `warnings` of the result's metadata:
// exits of frames entered before tracing began get an entry at the thread's
// first timestamp (ART traces start in the middle of calls); an exit of a
// frame below the top closes the frames above it at the same time; an exit
// of nothing open is dropped.
// Takes the trace by value and frees each thread's events once encoded:
// a large trace is not held twice (callers std::move it in).
format::BuiltDump ToDump(ImportedTrace t, const std::string& source);

}  // namespace lookback::import
