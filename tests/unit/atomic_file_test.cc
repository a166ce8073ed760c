// AtomicFile (src/common/atomic_file.h): the one way the reader-side tools
// replace a file. A reader sees the old file or the whole new one, never a
// part; whatever fails, no temporary is left behind.
#include "common/atomic_file.h"

#include "../scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace lookback {
namespace {

namespace fs = std::filesystem;

std::string FreshDir(const std::string& name) { return testing::ScratchDir(name); }

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t Entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

TEST(AtomicFile, TheTargetKeepsItsOldContentUntilTheCommitReplacesItWhole) {
  const std::string dir = FreshDir("atomic-commit");
  const std::string target = dir + "/out.txt";
  std::ofstream(target) << "old";
  AtomicFile f;
  ASSERT_TRUE((f.Create(target)).ok());
  EXPECT_EQ(f.temp_path(), dir + "/.out.txt." + std::to_string(getpid()) + ".tmp");
  ASSERT_EQ(write(f.fd(), "new content", 11), 11);
  EXPECT_EQ(Read(target), "old");  // not yet
  EXPECT_TRUE((f.Commit()).ok());
  EXPECT_EQ(Read(target), "new content");
  EXPECT_EQ(Entries(dir), 1u);  // no temporary left
}

TEST(AtomicFile, AnAbandonedWriteLeavesNothingAndTheTargetUntouched) {
  const std::string dir = FreshDir("atomic-abandon");
  const std::string target = dir + "/out.txt";
  {
    AtomicFile f;
    ASSERT_TRUE((f.Create(target)).ok());
    ASSERT_EQ(write(f.fd(), "half", 4), 4);
  }  // destroyed without a commit
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(Entries(dir), 0u);
}

TEST(AtomicFile, ALeftoverOfACrashedWriterOfThisPidIsReplaced) {
  const std::string dir = FreshDir("atomic-leftover");
  const std::string target = dir + "/out.txt";
  std::ofstream(AtomicFile::TempPathFor(target)) << "stale";
  AtomicFile f;
  ASSERT_TRUE((f.Create(target)).ok());
  ASSERT_EQ(write(f.fd(), "fresh", 5), 5);
  EXPECT_TRUE((f.Commit()).ok());
  EXPECT_EQ(Read(target), "fresh");
  EXPECT_EQ(Entries(dir), 1u);
}

TEST(AtomicFile, AnUnwritableDirectoryIsOneClearErrorAndNothingIsRemoved) {
  const std::string dir = FreshDir("atomic-unwritable");
  const std::string target = dir + "/missing-dir/out.txt";
  AtomicFile f;
  const Status err = f.Create(target);
  EXPECT_NE(err.message().find("cannot create '" + AtomicFile::TempPathFor(target) + "'"), std::string::npos)
      << err.message();
  EXPECT_FALSE((f.Commit()).ok());
  EXPECT_EQ(Entries(dir), 0u);
}

TEST(AtomicFile, AFailedRenameRemovesTheTemporaryAndSaysWhy) {
  const std::string dir = FreshDir("atomic-rename");
  const std::string target = dir + "/is-a-dir";
  fs::create_directories(target + "/inside");  // rename over a non-empty directory fails
  AtomicFile f;
  ASSERT_TRUE((f.Create(target)).ok());
  const Status err = f.Commit();
  EXPECT_NE(err.message().find("cannot write '" + target + "'"), std::string::npos) << err.message();
  EXPECT_FALSE(fs::exists(f.temp_path()));
  EXPECT_TRUE(fs::is_directory(target + "/inside"));
}

}  // namespace
}  // namespace lookback
