// Nanoscope's text traces (github.com/uber/nanoscope; what lookback's
// nanoscope exporter writes too): a file per thread, a line per event,
// "<ns>:<method>" on entry and "<ns>:POP" on exit, timestamps in
// CLOCK_MONOTONIC ns; beside a thread file NAME, optionally NAME.timer (a
// sample per line, comma separated: wall ns, thread CPU ns, then counters)
// and NAME.state ("<ns>:<state>" per scheduler state change).
//
// Untrusted input: a line that is not "<ns>:<text>" is an Error naming the
// file and the offset; a POP with nothing open and a malformed side-file
// line are warnings.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "import/imported.h"

namespace lookback::import {

struct NanoscopeFile {
  std::string name;  // the thread file's name: "<tid>-<thread name>.txt" gives both
  std::string text;
  std::string timer, state;  // the side files' text ("" when absent)
};

Result<ImportedTrace> ParseNanoscope(const std::vector<NanoscopeFile>& files);

// A Nanoscope trace on disk: a directory of thread files (side files beside
// them), or one thread file.
Result<std::vector<NanoscopeFile>> ReadNanoscope(const std::string& path);

// True if `text` starts like a Nanoscope thread file ("<digits>:").
bool LooksLikeNanoscope(std::string_view text);

}  // namespace lookback::import
