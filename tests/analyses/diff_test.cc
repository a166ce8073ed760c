// `lookback diff` and analyses::DiffReports: `timing` against `timing
// slower` (tests/programs/timing.cc), where only fast_parse changes: 15 calls
// of 2 ms become 15 calls of 6 ms, +60 ms of self time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "../integration/harness.h"
#include "timing_recording.h"
#include "analyses/report.h"
#include "format/reader.h"
#include "model/clock_model.h"

namespace lookback::testing {
namespace {


// Nominal lengths: 3 x (30 + 5 x F + 10) + 2 x 20 ms, F = 2 ms, or 6 ms slower.
const Recording& BeforeRun() {
  static const Recording r = RecordTiming("diff_before", {}, 190);
  return r;
}
const Recording& AfterRun() {
  static const Recording r = RecordTiming("diff_after", {"slower"}, 250);
  return r;
}
const std::string& Before() { return BeforeRun().path; }
// fast_parse gains at least 85.5 - (33 + slack A) ms of self and inclusive
// time; any other function moves by at most the larger slack (plus a few ms
// of hook and sleep jitter). When the first is surely larger, the ranking is
// guaranteed; otherwise a starved run could legitimately reorder it.
bool RankingIsSafe() {
  const double a = static_cast<double>(BeforeRun().slack_ns), b = static_cast<double>(AfterRun().slack_ns);
  return 52.5 * kMs - a > std::max(a, b) + 4 * kMs;
}
const std::string& After() { return AfterRun().path; }

RunResult Diff(const std::string& a, const std::string& b, const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {Cli(), "diff", a, b};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return RunProgram(argv);
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

std::vector<std::string> Fields(const std::string& line) {  // names here hold no comma
  std::vector<std::string> out(1);
  for (char c : line) {
    if (c == ',') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

TEST(DiffTest, ReportsFastParseAsTheFunctionThatGotSlower) {
  const double slack_a = static_cast<double>(BeforeRun().slack_ns), slack_b = static_cast<double>(AfterRun().slack_ns);
  RunResult r = Diff(Before(), After(), {"--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_GE(lines.size(), 3u) << r.out;
  const auto header = Fields(lines[0]);
  ASSERT_EQ(header[0], "function");
  ASSERT_EQ(header[7], "self_delta_ns");
  size_t row = 1;
  while (row < lines.size() && Fields(lines[row])[0] != "fast_parse") ++row;
  ASSERT_LT(row, lines.size()) << r.out;
  if (RankingIsSafe()) {
    EXPECT_EQ(row, 1u) << "fast_parse is not first\n" << r.out;
  }
  auto top = Fields(lines[row]);
  EXPECT_EQ(top[3], "15");  // calls before
  EXPECT_EQ(top[4], "15");  // calls after
  // Before: 30 ms, between 95% and 110% + its slack; after: 90 ms, the same way.
  const double a_lo = 30 * kMs * 0.95, a_hi = 30 * kMs * 1.10 + slack_a;
  const double b_lo = 90 * kMs * 0.95, b_hi = 90 * kMs * 1.10 + slack_b;
  const double delta = std::stod(top[7]);
  EXPECT_GE(delta, b_lo - a_hi) << r.out;
  EXPECT_LE(delta, b_hi - a_lo) << r.out;
  EXPECT_GE(std::stod(top[8]), b_lo / a_hi - 1) << "relative change of self, ~+200%";
  EXPECT_LE(std::stod(top[8]), b_hi / a_lo - 1) << "relative change of self, ~+200%";
  EXPECT_GE(std::stod(top[14]), b_lo / 15) << "average per call after, ~6 ms";
  EXPECT_LE(std::stod(top[14]), b_hi / 15) << "average per call after, ~6 ms";
  // Nothing else moved by more than what the machine could add.
  for (size_t i = 1; i < lines.size(); ++i) {
    if (i == row) continue;
    auto f = Fields(lines[i]);
    EXPECT_LT(std::abs(std::stod(f[7])), std::max(slack_a, slack_b) + 4 * kMs) << lines[i];
  }
}

TEST(DiffTest, TableShowsTheChangeWithUnitsFirst) {
  if (!RankingIsSafe()) GTEST_SKIP() << "five runs of timing starved too much for a ranking to be certain";
  RunResult r = Diff(Before(), After(), {"--top", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  size_t header = 0;
  while (header < lines.size() && lines[header].find("FUNCTION") == std::string::npos) ++header;
  ASSERT_LT(header + 1, lines.size()) << r.out;
  const std::string& first = lines[header + 1];
  EXPECT_NE(first.find("fast_parse"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(first, std::regex(R"(^ +\+\d+\.\d ms +\+\d+(\.\d)?% )"))) << first;  // "+60.1 ms  +200%"
  EXPECT_NE(r.out.find("more (--top N)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\033'), std::string::npos) << "colour on a pipe";
}

TEST(DiffTest, InclusiveTimeMovesUpTheCallers) {
  if (!RankingIsSafe()) GTEST_SKIP() << "five runs of timing starved too much for a ranking to be certain";
  RunResult r = Diff(Before(), After(), {"--format", "csv", "--sort", "inclusive", "--top", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;
  std::vector<std::string> names;
  for (size_t i = 1; i < lines.size(); ++i) names.push_back(Fields(lines[i])[0]);
  std::sort(names.begin(), names.end());
  // fast_parse's +60 ms are in the inclusive time of everything above it.
  EXPECT_EQ(names, (std::vector<std::string>{"fast_parse", "handle_request", "main", "render"})) << r.out;
}

TEST(DiffTest, ADumpAgainstItselfChangesNothing) {
  RunResult r = Diff(Before(), Before(), {"--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("\"self_delta_ns\": -"), std::string::npos);
  size_t zeros = 0;
  for (size_t at = 0; (at = r.out.find("\"self_delta_ns\": 0,", at)) != std::string::npos; ++at) ++zeros;
  EXPECT_EQ(zeros, 9u) << r.out;
  EXPECT_EQ(Diff(Before(), After(), {"--sort", "name"}).exit_code, 2);
  EXPECT_EQ(Diff(Before(), "/nonexistent.lbk", {}).exit_code, 1);
}

TEST(DiffTest, MatchesFunctionsByNameAndSumsRowsOfTheSameName) {
  auto row = [](const std::string& name, uint64_t key, int64_t self, int64_t incl, uint64_t calls) {
    analyses::FunctionStats f;
    f.name = name;
    f.key = key;
    f.self_ns = self;
    f.inclusive_ns = incl;
    f.calls = f.outer_calls = calls;
    return f;
  };
  analyses::Report a, b;
  a.functions = {row("parse", 0x1000, 100, 300, 2), row("old", 0x2000, 50, 50, 1)};
  // Another build: other addresses; parse in two modules (summed), old gone, new added.
  b.functions = {row("parse", 0x7000, 150, 400, 2), row("parse", 0x9000, 50, 100, 1), row("new", 0x8000, 80, 80, 4)};
  auto d = analyses::DiffReports(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].name, "parse");  // +100 self
  EXPECT_EQ(d[0].self_delta(), 100);
  EXPECT_EQ(d[0].inclusive_delta(), 200);
  EXPECT_EQ(d[0].calls_b, 3u);
  EXPECT_EQ(d[0].avg_a, 150);
  EXPECT_EQ(d[0].avg_b, 166);
  EXPECT_DOUBLE_EQ(analyses::FunctionDiff::Relative(d[0].self_a, d[0].self_b), 1.0);
  EXPECT_EQ(d[1].name, "new");  // +80
  EXPECT_FALSE(d[1].in_a);
  EXPECT_TRUE(std::isinf(analyses::FunctionDiff::Relative(d[1].self_a, d[1].self_b)));
  EXPECT_EQ(d[2].name, "old");  // -50
  EXPECT_FALSE(d[2].in_b);
  EXPECT_EQ(d[2].self_delta(), -50);
  auto by_avg = analyses::DiffReports(a, b, analyses::DiffSortKey::kCalls);
  EXPECT_EQ(by_avg[0].name, "new");  // +4 calls
}

}  // namespace
}  // namespace lookback::testing
