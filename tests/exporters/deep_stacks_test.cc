// A recursion thousands of frames deep (tests/programs/deep_recursion.cc), as a
// runaway recursion or a StackOverflowError leaves in a dump: the readers whose
// output repeats a stack per line stay bounded. Before, `convert --to folded`
// built every stack's full path in memory (23 GB and killed at depth 100,000)
// and `chains` indented every frame by its depth (825 MB of text at 23,000).
#include <regex>

#include "export_fixture.h"

namespace lookback::testing {
namespace {

constexpr int kDepth = 5000;

std::string RecordDeepRecursion(const std::string& dir) {
  const RunResult r = RunProgram({Cli(), "record", "-q", "--budget", "off", "--dir", dir + "/dumps", "--",
                                  Program("deep-recursion"), std::to_string(kDepth)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("depth 5000"), std::string::npos) << r.out;
  const auto dumps = Dumps(dir + "/dumps");
  EXPECT_EQ(dumps.size(), 1u) << r.err;
  return dumps.empty() ? "" : dumps[0];
}

TEST(DeepStacks, FoldedMergesFramesPastItsDepthLimitIntoOneFrame) {
  const std::string dir = FreshDir("deep-folded");
  const std::string dump = RecordDeepRecursion(dir);
  ASSERT_FALSE(dump.empty());
  const RunResult c = Convert(dump, "folded", dir + "/out.folded");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  const std::string text = ReadFile(dir + "/out.folded");
  EXPECT_LT(text.size(), 20u << 20) << "the file grew with the square of the depth";
  std::istringstream in(text);
  size_t deepest = 0, lines = 0;
  uint64_t deeper_ns = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const size_t frames = static_cast<size_t>(std::count(line.begin(), line.end(), ';'));  // the label is not one
    deepest = std::max(deepest, frames);
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line.substr(0, 200);
    if (line.find(";[frames deeper than 1024] ") != std::string::npos) {
      deeper_ns += std::stoull(line.substr(space + 1));
    }
  }
  EXPECT_EQ(deepest, 1024u + 1) << "1,024 frames, then the one merged frame";
  // bottom()'s spin and the dives and helpers below depth 1,024 are there, as one frame's self time.
  EXPECT_GT(deeper_ns, 0u);
  EXPECT_NE(text.find(";main;dive(int);dive(int);dive(int);"), std::string::npos) << text.substr(0, 300);
}

TEST(DeepStacks, ChainsTextCountsARecursionInOneLineAndJsonKeepsEveryFrame) {
  const std::string dir = FreshDir("deep-chains");
  const std::string dump = RecordDeepRecursion(dir);
  ASSERT_FALSE(dump.empty());
  const RunResult text = RunProgram({Cli(), "chains", "--top", "3", dump});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_LT(text.out.size(), 64u << 10) << text.out.substr(0, 2000);
  // main, the first dive, one line for the run, the run's last dive, its leaf.
  EXPECT_TRUE(std::regex_search(text.out, std::regex(R"(\.\.\. 4,99\d more frames of dive\(int\) \(recursion\))")))
      << text.out;
  const RunResult json = RunProgram({Cli(), "chains", "--format", "json", "--top", "1", dump});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const std::regex depth(R"("depth": (\d+))");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(json.out, m, depth)) << json.out.substr(0, 500);
  EXPECT_GE(std::stoi(m[1].str()), kDepth);
}

}  // namespace
}  // namespace lookback::testing
