// Test harness for integration tests: run real programs (under `lookback
// record` or linked with liblookback), collect their dumps, decode them.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "format/reader.h"
#include "model/decoder.h"

namespace lookback::testing {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out, err;
};

// Runs argv in `cwd` with extra environment variables; waits at most
// `timeout_s` seconds (then kills it and fails the test).
RunResult RunProgram(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
              const std::string& cwd = "", int timeout_s = 120);

// A fresh empty directory under the build tree, named after the test (and
// this process, as ctest runs tests in parallel processes).
std::string FreshDir(const std::string& name);
std::vector<std::string> ListFiles(const std::string& dir);  // sorted names, hidden included
std::vector<std::string> Dumps(const std::string& dir);      // full paths of *.lbk

std::string Cli();                                // path of the lookback CLI
std::string Program(const std::string& name);     // path of a test program

struct TEvent {
  bool exit;
  uint64_t key;
  bool operator==(const TEvent&) const = default;
};

// tid -> events (entries/exits only), from a dump, via the reader library.
std::map<uint32_t, std::vector<TEvent>> DumpEvents(const format::Dump& d);
// tid -> events from a ground-truth file written by tests/programs/ground_truth.h.
std::map<uint32_t, std::vector<TEvent>> GroundTruth(const std::string& path);

format::Dump MustOpen(const std::string& path);

// A program started in the background whose stdout the test reads (`out`;
// nullptr if it could not be started), with extra environment variables.
struct Background {
  pid_t pid = -1;
  FILE* out = nullptr;
};
Background StartReadingStdout(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});
const format::ThreadInfo* FindThread(const format::Dump& d, const std::string& name);

}  // namespace lookback::testing
