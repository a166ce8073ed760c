#include "runtime/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include <csignal>
#include <map>
#include <string>

namespace lookback::rt {
namespace {

std::map<std::string, std::string>* g_env;
const char* FakeEnv(const char* name) {
  auto it = g_env->find(name);
  return it == g_env->end() ? nullptr : it->second.c_str();
}

Config Parse(std::map<std::string, std::string> env, std::vector<ConfigProblem>* problems) {
  g_env = &env;
  return ParseConfig(FakeEnv, problems);
}

TEST(Config, ParsesSizesWithBinarySuffixes) {
  uint64_t v = 0;
  EXPECT_TRUE(ParseSize("65536", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(ParseSize("8M", &v));
  EXPECT_EQ(v, 8u << 20);
  EXPECT_TRUE(ParseSize("512KiB", &v));
  EXPECT_EQ(v, 512u << 10);
  EXPECT_TRUE(ParseSize(" 1g ", &v));
  EXPECT_EQ(v, 1u << 30);
  EXPECT_FALSE(ParseSize("", &v));
  EXPECT_FALSE(ParseSize("abc", &v));
  EXPECT_FALSE(ParseSize("-5M", &v));
  EXPECT_FALSE(ParseSize("99999999999999999999", &v));
}

TEST(Config, ParsesSignalsByNameAndNumber) {
  int s = 0;
  EXPECT_TRUE(ParseSignal("USR1", &s));
  EXPECT_EQ(s, SIGUSR1);
  EXPECT_TRUE(ParseSignal("sigusr2", &s));
  EXPECT_EQ(s, SIGUSR2);
  EXPECT_TRUE(ParseSignal("0", &s));
  EXPECT_EQ(s, 0);
  EXPECT_FALSE(ParseSignal("NOPE", &s));
  EXPECT_FALSE(ParseSignal("999", &s));
}

TEST(Config, DefaultsWhenNothingIsSet) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(c.dir, "lookback-dumps");
  EXPECT_EQ(c.keep_exited, 8u);
  EXPECT_TRUE(c.thread_patterns.empty());
}

TEST(Config, RoundsBufferSizeUpToAPowerOfTwo) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_BUFFER_SIZE", "10M"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.buffer_bytes, 16u << 20);
}

TEST(Config, BadValuesKeepDefaultsAndSayWhy) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_BUFFER_SIZE", "lots"},
                    {"LOOKBACK_MAX_THREADS", "0"},
                    {"LOOKBACK_KEEP_EXITED", "x"},
                    {"LOOKBACK_DUMP_SIGNAL", "SEGV"},
                    {"LOOKBACK_DUMP_AT_EXIT", "maybe"}},
                   &problems);
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_NE(problems[0].message.find("LOOKBACK_BUFFER_SIZE='lots'"), std::string::npos);
  EXPECT_EQ(c.buffer_bytes, 8u << 20);
  EXPECT_EQ(c.max_threads, 256u);
  EXPECT_EQ(c.keep_exited, 8u);
  EXPECT_EQ(c.dump_signal, 0);
  EXPECT_FALSE(c.dump_at_exit);
}

TEST(Config, DumpMemoryIsASizeAndZeroMeansNoLimit) {
  std::vector<ConfigProblem> problems;
  EXPECT_EQ(Parse({}, &problems).dump_memory, 0u);
  EXPECT_EQ(Parse({{"LOOKBACK_DUMP_MEMORY", "64M"}}, &problems).dump_memory, 64u << 20);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(Parse({{"LOOKBACK_DUMP_MEMORY", "lots"}}, &problems).dump_memory, 0u);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("LOOKBACK_DUMP_MEMORY='lots'"), std::string::npos);
}

TEST(Config, SplitsThreadPatternsOnCommas) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_THREADS", "main, worker-*,,io"}}, &problems);
  EXPECT_EQ(c.thread_patterns, (std::vector<std::string>{"main", "worker-*", "io"}));
}

TEST(Config, HostNameIsKeptAsGivenAndEmptyLeavesItToTheRuntime) {
  std::vector<ConfigProblem> problems;
  EXPECT_EQ(Parse({{"LOOKBACK_HOST", "eu-7-42.example"}}, &problems).host, "eu-7-42.example");
  EXPECT_EQ(Parse({{"LOOKBACK_HOST", ""}}, &problems).host, "");  // the runtime asks gethostname()
  EXPECT_EQ(Parse({}, &problems).host, "");
  EXPECT_TRUE(problems.empty());
}

TEST(Config, ExcludeListSplitsOnCommas) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_EXCLUDE", "json::*, *::size,,log_*"}}, &problems);
  EXPECT_EQ(c.exclude, (std::vector<std::string>{"json::*", "*::size", "log_*"}));
  EXPECT_TRUE(problems.empty());
}


TEST(Config, TheBudgetIsAPercentageOrOffAndDefaultsToThreePercent) {
  std::vector<ConfigProblem> problems;
  EXPECT_EQ(Parse({}, &problems).budget_bp, 300u);
  EXPECT_EQ(Parse({{"LOOKBACK_BUDGET", "off"}}, &problems).budget_bp, 0u);
  EXPECT_EQ(Parse({{"LOOKBACK_BUDGET", "2.5%"}}, &problems).budget_bp, 250u);
  EXPECT_TRUE(problems.empty());
  uint32_t bp = 0;
  for (const auto& [text, want] : std::vector<std::pair<std::string, uint32_t>>{
           {"0", 0}, {"0%", 0}, {"1", 100}, {"5%", 500}, {"0.1", 10}, {"0.25%", 25}, {"50", 5000}}) {
    EXPECT_TRUE(ParseBudget(text, &bp)) << text;
    EXPECT_EQ(bp, want) << text;
    EXPECT_EQ(BudgetText(bp), want == 0 ? "off" : text.back() == '%' ? text : text + "%") << text;
  }
  for (const char* bad : {"", "lots", "0.05", "51", "3.333", "-1", "3.", ".5", "1e2"}) EXPECT_FALSE(ParseBudget(bad, &bp)) << bad;
  Config c = Parse({{"LOOKBACK_BUDGET", "lots"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("LOOKBACK_BUDGET='lots' is not off or a percentage from 0.1 to 50"), std::string::npos);
  EXPECT_EQ(c.budget_bp, 300u);
}

TEST(Config, TheHistoryFloorIsADurationOrOffAndDefaultsToTwoSecondsOfAnEightMiBRing) {
  std::vector<ConfigProblem> problems;
  EXPECT_EQ(Parse({}, &problems).history_ns, 2000000000u);
  EXPECT_EQ(Parse({{"LOOKBACK_HISTORY", "2s"}}, &problems).history_ns, 2000000000u);
  EXPECT_EQ(Parse({{"LOOKBACK_HISTORY", "500ms"}}, &problems).history_ns, 500000000u);
  EXPECT_EQ(Parse({{"LOOKBACK_HISTORY", "off"}}, &problems).history_ns, 0u);
  // The default holds a busy thread to the same rate whatever its ring: a
  // smaller ring, the same share of 2 s; a larger one, 2 s. An explicit
  // value is taken as it is.
  EXPECT_EQ(Parse({{"LOOKBACK_BUFFER_SIZE", "64K"}}, &problems).history_ns, 15625000u);
  EXPECT_EQ(Parse({{"LOOKBACK_BUFFER_SIZE", "4K"}}, &problems).history_ns, 976562u);
  EXPECT_EQ(Parse({{"LOOKBACK_BUFFER_SIZE", "32M"}}, &problems).history_ns, 2000000000u);
  EXPECT_EQ(Parse({{"LOOKBACK_BUFFER_SIZE", "64K"}, {"LOOKBACK_HISTORY", "1s"}}, &problems).history_ns, 1000000000u);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(HistoryText(2000000000u), "2s");
  EXPECT_EQ(HistoryText(500000000u), "500ms");
  EXPECT_EQ(HistoryText(15625000u), "15ms");
  EXPECT_EQ(HistoryText(976562u), "976us");
  EXPECT_EQ(HistoryText(0), "off");
  for (const char* bad : {"forever", "10ms", "2h", "-1s"}) {
    problems.clear();
    EXPECT_EQ(Parse({{"LOOKBACK_HISTORY", bad}}, &problems).history_ns, 2000000000u) << bad;
    ASSERT_EQ(problems.size(), 1u) << bad;
    EXPECT_NE(problems[0].message.find("is not off or a duration from 100ms to 1h"), std::string::npos) << bad;
    EXPECT_NE(problems[0].message.find("using the default, 2s"), std::string::npos) << problems[0].message;
  }
}

// Every variable the runtime reads can be set from a config file too: the
// file's names are checked against kConfigVariables, and LOOKBACK_HISTORY
// was once read from the environment but refused in a file.
std::vector<std::string>* g_asked;
const char* RecordingEnv(const char* name) {
  g_asked->push_back(name);
  return nullptr;
}

TEST(Config, EveryVariableTheRuntimeReadsIsAcceptedInAConfigFile) {
  std::vector<std::string> asked;
  g_asked = &asked;
  std::vector<ConfigProblem> problems;
  ParseConfig(RecordingEnv, &problems);
  ASSERT_GT(asked.size(), 20u);
  for (const std::string& name : asked) {
    // Set by `lookback attach` for the library it loads, not a user's setting.
    if (name == "LOOKBACK_ATTACHED") continue;
    bool known = false;
    for (const char* const* v = kConfigVariables; *v; ++v) known = known || name == *v;
    EXPECT_TRUE(known) << name << " is read but not in kConfigVariables";
  }
}

TEST(Config, ParsesDurationsWithUnitsAndBareMilliseconds) {
  uint64_t ns = 0;
  EXPECT_TRUE(ParseDuration("100ms", &ns));
  EXPECT_EQ(ns, 100000000u);
  EXPECT_TRUE(ParseDuration("250", &ns));
  EXPECT_EQ(ns, 250000000u);
  EXPECT_TRUE(ParseDuration("2s", &ns));
  EXPECT_EQ(ns, 2000000000u);
  EXPECT_TRUE(ParseDuration("500us", &ns));
  EXPECT_EQ(ns, 500000u);
  EXPECT_TRUE(ParseDuration("1m", &ns));
  EXPECT_EQ(ns, 60000000000u);
  EXPECT_FALSE(ParseDuration("soon", &ns));
  EXPECT_FALSE(ParseDuration("ms", &ns));
  EXPECT_FALSE(ParseDuration("-5ms", &ns));
}

TEST(Config, WatchesTakeTheDurationAfterTheLastColon) {
  std::vector<Watch> w;
  std::string why;
  ASSERT_TRUE(ParseWatches("ui:100ms, ns::render*:2s", &w, &why)) << why;
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].pattern, "ui");
  EXPECT_EQ(w[0].threshold_ns, 100000000u);
  EXPECT_EQ(w[1].pattern, "ns::render*");
  EXPECT_EQ(w[1].threshold_ns, 2000000000u);
  EXPECT_FALSE(ParseWatches("ui", &w, &why));
  EXPECT_FALSE(ParseWatches("ui:0", &w, &why));
  EXPECT_FALSE(ParseWatches(":100ms", &w, &why));
}

TEST(Config, RateLimitAppliesToAutomaticDetectorsOrToTheOnesNamed) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_RATE_LIMIT", "3/h"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kStall)], 3u);
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kSlowCall)], 3u);
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kExplicit)], 0u) << "explicit requests stay unlimited";
  c = Parse({{"LOOKBACK_RATE_LIMIT", "stall=1, explicit=5"}, {"LOOKBACK_COOLDOWN", "slow-call=0"}}, &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kStall)], 1u);
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kSlowScope)], 12u);
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kExplicit)], 5u);
  EXPECT_EQ(c.cooldown_ns[static_cast<size_t>(Detector::kSlowCall)], 0u);
  EXPECT_EQ(c.cooldown_ns[static_cast<size_t>(Detector::kStall)], 10000000000u);
  c = Parse({{"LOOKBACK_RATE_LIMIT", "bogus=1"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("bogus"), std::string::npos);
  EXPECT_EQ(c.rate_limit[static_cast<size_t>(Detector::kStall)], 12u) << "a bad value keeps the defaults";
}

TEST(Config, SamplingIsOffByDefaultAndTakesAModeIntervalsAndASignal) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({}, &problems);
  EXPECT_EQ(c.sample_mode, 0);
  EXPECT_EQ(c.sample_interval_ns, 1000000u);
  EXPECT_EQ(c.state_interval_ns, 10000000u);
  EXPECT_EQ(c.sample_signal, SIGURG);
  c = Parse({{"LOOKBACK_SAMPLE", "wall"}, {"LOOKBACK_SAMPLE_INTERVAL", "500us"}, {"LOOKBACK_STATE_INTERVAL", "0"},
             {"LOOKBACK_SAMPLE_SIGNAL", "RTMIN+3"}},
            &problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.sample_mode, 2);
  EXPECT_EQ(c.sample_interval_ns, 500000u);
  EXPECT_EQ(c.state_interval_ns, 0u);  // never polled
  EXPECT_EQ(c.sample_signal, SIGRTMIN + 3);
  EXPECT_EQ(Parse({{"LOOKBACK_SAMPLE", "1"}}, &problems).sample_mode, 1);  // on = thread CPU time
  EXPECT_EQ(Parse({{"LOOKBACK_SAMPLE", "cpu"}}, &problems).sample_mode, 1);
}

TEST(Config, BadSamplingValuesKeepDefaultsAndSayWhy) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_SAMPLE", "often"}, {"LOOKBACK_SAMPLE_INTERVAL", "10us"},
                    {"LOOKBACK_STATE_INTERVAL", "1h"}, {"LOOKBACK_SAMPLE_SIGNAL", "KILL"}},
                   &problems);
  EXPECT_EQ(c.sample_mode, 0);
  EXPECT_EQ(c.sample_interval_ns, 1000000u);
  EXPECT_EQ(c.state_interval_ns, 10000000u);
  EXPECT_EQ(c.sample_signal, SIGURG);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].message.find("is not cpu, wall, 1 or 0"), std::string::npos);
  EXPECT_NE(problems[1].message.find("100us to 10s"), std::string::npos);
}

TEST(Config, ConfigFileIsReadAndTheEnvironmentOverridesIt) {
  const std::string path = std::string(LOOKBACK_TEST_TMP) + "/config-" + std::to_string(getpid()) + ".conf";
  mkdir(LOOKBACK_TEST_TMP, 0755);
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs("# comment\nstall = ui:200ms\nSLOW-SCOPE = frame:50ms  # trailing comment\nwindow = 5s\nnot_a_setting = 1\n", f);
  fclose(f);
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_CONFIG", path}, {"LOOKBACK_WINDOW", "2s"}}, &problems);
  unlink(path.c_str());
  ASSERT_EQ(c.stall.size(), 1u);
  EXPECT_EQ(c.stall[0].threshold_ns, 200000000u);
  ASSERT_EQ(c.slow_scope.size(), 1u);
  EXPECT_EQ(c.slow_scope[0].pattern, "frame");
  EXPECT_EQ(c.window_ns, 2000000000u) << "the environment wins";
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find(":5:"), std::string::npos) << problems[0].message;
  problems.clear();
  Parse({{"LOOKBACK_CONFIG", path + ".missing"}}, &problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].message.find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace lookback::rt
