// Shared by the exporter tests: a real dump from a real instrumented program,
// and the CLI's `convert` run on it.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "../integration/harness.h"

namespace lookback::testing {

// Records `lifecycle-gcc ARGS` (tests/programs/lifecycle.cc) under `lookback
// record` into a fresh directory named `test` and returns the dump's path
// ("" and a test failure if there is not exactly one dump).
inline std::string RecordLifecycle(const std::string& test, const std::vector<std::string>& args) {
  const std::string dir = FreshDir(test);
  std::vector<std::string> argv = {Cli(), "record", "--dir", dir + "/dumps", "--", Program("lifecycle-gcc")};
  argv.insert(argv.end(), args.begin(), args.end());
  RunResult r = RunProgram(argv, {}, dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  auto dumps = Dumps(dir + "/dumps");
  EXPECT_EQ(dumps.size(), 1u) << r.err;
  return dumps.size() == 1 ? dumps[0] : std::string();
}

// `lookback convert DUMP --to FORMAT -o OUT [extra...]`.
inline RunResult Convert(const std::string& dump, const std::string& format, const std::string& out,
                         const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {Cli(), "convert", dump, "--to", format, "-o", out};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunProgram(argv);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace lookback::testing
