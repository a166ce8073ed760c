#include "runtime/config.h"

#include <gtest/gtest.h>

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

TEST(Config, SplitsThreadPatternsOnCommas) {
  std::vector<ConfigProblem> problems;
  Config c = Parse({{"LOOKBACK_THREADS", "main, worker-*,,io"}}, &problems);
  EXPECT_EQ(c.thread_patterns, (std::vector<std::string>{"main", "worker-*", "io"}));
}

}  // namespace
}  // namespace lookback::rt
