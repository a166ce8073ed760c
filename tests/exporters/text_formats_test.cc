// Golden end-to-end tests for the text exporters (nanoscope, chrome, folded)
// on real programs, with timestamps, tids and pids normalised away, plus the
// invariants each format promises. Set LOOKBACK_UPDATE_GOLDEN=1 to rewrite
// the golden files after an intended change (then review the diff).
#include <regex>
#include <set>

#include "export_fixture.h"

namespace lookback::testing {
namespace {

std::string Golden(const std::string& name) { return std::string(LOOKBACK_SOURCE_DIR) + "/tests/data/golden/" + name; }

void CompareWithGolden(const std::string& name, const std::string& actual) {
  if (getenv("LOOKBACK_UPDATE_GOLDEN")) {
    std::ofstream(Golden(name)) << actual;
    return;
  }
  const std::string expected = ReadFile(Golden(name));
  ASSERT_FALSE(expected.empty()) << "missing golden file " << Golden(name) << " (LOOKBACK_UPDATE_GOLDEN=1 writes it)";
  EXPECT_EQ(actual, expected) << "output differs from " << Golden(name);
}

// The dump of a real program: exceptions thrown through three frames (so the
// output also shows repaired exits under clang and gcc alike).
// ctest runs tests as separate processes in parallel: one directory per test.
std::string ExceptionsDump() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return RecordLifecycle(std::string("golden-exceptions-") + info->test_suite_name() + "-" + info->name(), {"exceptions"});
}

TEST(Nanoscope, MatchesGoldenAndIsBalancedAndOrdered) {
  const std::string out = FreshDir("nanoscope-out") + "/trace";
  RunResult r = Convert(ExceptionsDump(), "nanoscope", out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto files = ListFiles(out);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("-lifecycle-gcc.txt"), std::string::npos) << files[0];
  std::istringstream in(ReadFile(out + "/" + files[0]));
  std::string line, normalised;
  int64_t last = 0;
  int depth = 0;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    ASSERT_NE(colon, std::string::npos) << line;
    const int64_t ts = std::stoll(line.substr(0, colon));
    EXPECT_GE(ts, last) << "timestamps must not decrease";
    last = ts;
    const std::string what = line.substr(colon + 1);
    depth += what == "POP" ? -1 : 1;
    ASSERT_GE(depth, 0) << "more pops than pushes";
    normalised += "T:" + what + "\n";
  }
  EXPECT_EQ(depth, 0) << "pushes and pops must balance";
  CompareWithGolden("nanoscope-exceptions.txt", normalised);
}

TEST(Chrome, MatchesGoldenWithBalancedBeginEnd) {
  const std::string out = FreshDir("chrome-out") + "/trace.json";
  RunResult r = Convert(ExceptionsDump(), "chrome", out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string json = ReadFile(out);
  ASSERT_EQ(json.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  ASSERT_NE(json.find("\n]}\n"), std::string::npos);
  // One event per line: normalise pid/tid/ts, keep phases, names and args.
  std::istringstream in(json);
  std::string line, normalised;
  int depth = 0;
  double last_ts = -1e18;
  const std::regex ids("\"(pid|tid)\":[0-9]+");
  const std::regex ts("\"ts\":(-?[0-9]+\\.[0-9]{3})");
  while (std::getline(in, line)) {
    if (line.find("\"ph\"") == std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(line, m, ts) && line.find("\"ph\":\"i\"") == std::string::npos) {
      const double t = std::stod(m[1]);
      EXPECT_GE(t, last_ts);
      last_ts = t;
    }
    if (line.find("\"ph\":\"B\"") != std::string::npos) ++depth;
    if (line.find("\"ph\":\"E\"") != std::string::npos) --depth;
    ASSERT_GE(depth, 0);
    std::string n = std::regex_replace(line, ids, "\"$1\":N");
    n = std::regex_replace(n, ts, "\"ts\":T");
    if (!n.empty() && n[0] == ',') n.erase(0, 1);
    normalised += n + "\n";
  }
  EXPECT_EQ(depth, 0);
  CompareWithGolden("chrome-exceptions.txt", normalised);
}

TEST(Folded, MatchesGoldenStacks) {
  const std::string out = FreshDir("folded-out") + "/stacks.txt";
  RunResult r = Convert(ExceptionsDump(), "folded", out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream in(ReadFile(out));
  std::string line;
  std::set<std::string> stacks;
  const std::regex thread_root("^lifecycle-gcc \\([0-9]+\\)");
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    EXPECT_GT(std::stoll(line.substr(sp + 1)), 0) << line;
    stacks.insert(std::regex_replace(line.substr(0, sp), thread_root, "lifecycle-gcc (TID)"));
  }
  std::string normalised;
  for (const auto& s : stacks) normalised += s + "\n";
  CompareWithGolden("folded-exceptions.txt", normalised);
}

TEST(Convert, WindowKeepsOnlyTheLastPart) {
  // main checks its mode (lambda calls), then sleeps 300 ms in long_call and
  // exits. The last 100 ms before the dump hold long_call, clipped at the
  // window start, and none of the calls made before the sleep.
  const std::string dump = RecordLifecycle("window", {"sleep", "300"});
  const std::string out = FreshDir("window-out") + "/trace";
  RunResult r = Convert(dump, "nanoscope", out, {"--window", "-100ms.."});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("begun before the window"), std::string::npos) << r.err;
  const std::string text = ReadFile(out + "/" + ListFiles(out)[0]);
  EXPECT_NE(text.find(":long_call"), std::string::npos) << text;
  EXPECT_NE(text.find(":after_sleep"), std::string::npos) << text;
  EXPECT_EQ(text.find("lambda"), std::string::npos) << "calls from before the window leaked in:\n" << text;
  RunResult all = Convert(dump, "nanoscope", out + "-all");
  EXPECT_NE(ReadFile(out + "-all/" + ListFiles(out + "-all")[0]).find("lambda"), std::string::npos);
}

TEST(Convert, CorruptDumpIsAClearErrorAndWritesNothing) {
  const std::string dir = FreshDir("convert-corrupt");
  std::string bytes = ReadFile(ExceptionsDump());  // before FreshDir: a name of its own
  bytes.resize(bytes.size() - 20);  // mid-way through the last thread's records
  std::ofstream(dir + "/cut.lbk", std::ios::binary) << bytes;
  RunResult r = Convert(dir + "/cut.lbk", "chrome", dir + "/out.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_EQ(ListFiles(dir), std::vector<std::string>{"cut.lbk"}) << "a failed convert must leave nothing";
  // verify names the damage and still decodes what is there.
  RunResult v = RunProgram({Cli(), "verify", dir + "/cut.lbk"});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.out.find("problem: truncated: header says"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("events decoded"), std::string::npos) << v.out;
  // A foreign file is not salvaged.
  std::ofstream(dir + "/text.lbk") << "this is a text file, not a dump, but long enough to have a header............";
  RunResult f = RunProgram({Cli(), "verify", dir + "/text.lbk"});
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.out.find("BROKEN: not a lookback dump"), std::string::npos) << f.out;
}

TEST(Convert, UnknownFormatIsAUsageError) {
  RunResult r = Convert(ExceptionsDump(), "svg", "/tmp/never-written");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown format 'svg'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace lookback::testing
