// A fresh, empty directory per test process under the build tree, removed
// when the test program ends with every test passed and named on stderr when
// one failed (then it is what a reader needs). Without the sweep each suite
// run left ~2 GB of dumps behind, and repeated runs filled the disk that CI
// later ran on.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace lookback::testing {

class ScratchSweeper : public ::testing::EmptyTestEventListener {
 public:
  void Add(const std::string& dir) { dirs_.push_back(dir); }
  void OnTestProgramEnd(const ::testing::UnitTest& unit) override {
    if (!unit.Passed()) {
      for (const auto& d : dirs_) fprintf(stderr, "kept for the failure: %s\n", d.c_str());
      return;
    }
    for (const auto& d : dirs_) {
      std::error_code ec;  // one a test removed itself, or cannot remove, stays as it is
      std::filesystem::remove_all(d, ec);
    }
  }

 private:
  std::vector<std::string> dirs_;
};

// Appended to gtest's listeners (which then own it) on first use, so test
// programs need no main of their own.
inline ScratchSweeper& Sweeper() {
  static ScratchSweeper* s = [] {
    auto* l = new ScratchSweeper;
    ::testing::UnitTest::GetInstance()->listeners().Append(l);
    return l;
  }();
  return *s;
}

// LOOKBACK_TEST_TMP/<name>.<pid>: ctest runs tests as parallel processes,
// some sharing a name, so one directory per process.
inline std::string ScratchDir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::path(LOOKBACK_TEST_TMP) / (name + "." + std::to_string(getpid()));
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (!ec) std::filesystem::create_directories(dir, ec);
  if (ec) ADD_FAILURE() << "cannot make an empty " << dir << ": " << ec.message();
  Sweeper().Add(dir.string());
  return dir.string();
}

}  // namespace lookback::testing
