// The shed memory's file (src/frontends/jvm/shed_memory_file.h): what the
// agent writes it reads back, and anything else is refused whole, with a
// reason, so that a damaged file never leaves a method without its probes.
#include "frontends/jvm/shed_memory_file.h"

#include <gtest/gtest.h>

namespace lookback::jvm {
namespace {

RememberedMethod Method(std::string cls, std::string name, std::string desc, uint32_t runs) {
  RememberedMethod m;
  m.cls = std::move(cls);
  m.name = std::move(name);
  m.descriptor = std::move(desc);
  m.calls_per_s = 14000;
  m.mean_ns = 107;
  m.runs_left = runs;
  return m;
}

TEST(ShedMemoryFile, WhatIsWrittenIsReadBackWithNamesThatHoldSpacesAndDescriptorsThatHoldSemicolons) {
  const std::vector<RememberedMethod> in = {
      Method("org/mozilla/javascript/ScriptableObject", "checkValidAttributes", "(I)V", 16),
      Method("a/Kotlin$Test", "my test name", "(Ljava/lang/String;[Ljava/util/List;)Ljava/lang/Object;", 1)};
  std::string error;
  const auto out = ParseShedMemory(FormatShedMemory(0xabc, in), 0xabc, &error);
  ASSERT_TRUE(out) << error;
  ASSERT_EQ(out->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*out)[i].cls, in[i].cls);
    EXPECT_EQ((*out)[i].name, in[i].name);
    EXPECT_EQ((*out)[i].descriptor, in[i].descriptor);
    EXPECT_EQ((*out)[i].calls_per_s, 14000u);
    EXPECT_EQ((*out)[i].mean_ns, 107u);
    EXPECT_EQ((*out)[i].runs_left, in[i].runs_left);
  }
}

TEST(ShedMemoryFile, NamesItCannotStoreAreLeftOutNotWrittenAsAnotherMethod) {
  const std::vector<RememberedMethod> in = {Method("a/B", "x;y", "(I)V", 16), Method("a/B", "line\nbreak", "(I)V", 16),
                                            Method("a/B", "ok", "I", 16), Method("a/B", "ok", "(I)V", 0),
                                            Method("a/B", "ok", "(I)V", 17), Method("a/B", "kept", "(I)V", 3)};
  std::string error;
  const auto out = ParseShedMemory(FormatShedMemory(7, in), 7, &error);
  ASSERT_TRUE(out) << error;
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].name, "kept");
}

TEST(ShedMemoryFile, ADamagedForeignOrTornFileIsRefusedWholeWithAReason) {
  const std::string good = FormatShedMemory(5, {Method("a/B", "m", "(I)V", 16), Method("a/C", "n", "()V", 2)});
  std::string error;
  ASSERT_TRUE(ParseShedMemory(good, 5, &error)) << error;
  const std::vector<std::pair<std::string, uint64_t>> bad = {
      {good, 6},                                         // another program's
      {good.substr(0, good.size() - 1), 5},              // torn: the last line has no end
      {"lookback-shed-memory 2 " + good.substr(23), 5},  // another version
      {"", 5},
      {"lookback-shed-memory 1 \n", 5},
      {"lookback-shed-memory 1 5\n0 1 1 a/B;m;(I)V\n", 5},    // no runs left
      {"lookback-shed-memory 1 5\n99 1 1 a/B;m;(I)V\n", 5},   // more runs than any run writes
      {"lookback-shed-memory 1 5\n16 x 1 a/B;m;(I)V\n", 5},
      {"lookback-shed-memory 1 5\n16 1 1 a/B;m;I\n", 5},      // not a method descriptor
      {"lookback-shed-memory 1 5\n16 1 1 a/B;(I)V\n", 5},     // no name
      {"lookback-shed-memory 1 5\n16 1 1 ;m;(I)V\n", 5},      // no class
      {"lookback-shed-memory 1 5\n16 1 1 a/B;m;\n", 5},
      {"lookback-shed-memory 1 5\n16 1 1 a/B;m;(I)V", 5},
      {"lookback-shed-memory 1 5\n16 99999999999999999999999 1 a/B;m;(I)V\n", 5},
  };
  for (const auto& [text, hash] : bad) {
    SCOPED_TRACE(text);
    error.clear();
    EXPECT_FALSE(ParseShedMemory(text, hash, &error));
    EXPECT_FALSE(error.empty());
  }
}

TEST(ShedMemoryFile, AnEmptyMemoryIsAFileWithItsHeaderOnly) {
  std::string error;
  const auto out = ParseShedMemory(FormatShedMemory(9, {}), 9, &error);
  ASSERT_TRUE(out) << error;
  EXPECT_TRUE(out->empty());
}

}  // namespace
}  // namespace lookback::jvm
