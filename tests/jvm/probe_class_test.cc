// The probe class the agent defines (src/frontends/jvm/probe_class.h): the
// bytes javac built, and the one edit the agent makes to them on JDKs with
// virtual threads. Every JVM test defines the class for real; these check
// what those tests cannot on a JDK 17 machine.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "frontends/jvm/classfile.h"
#include "frontends/jvm/probe_class.h"

namespace lookback::jvm {
namespace {

struct Shape {
  std::string name;
  std::set<std::string> methods, fields, utf8;
};

Shape Parse(const std::vector<uint8_t>& bytes) {
  Shape s;
  auto parsed = ClassFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()));
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().ToString());
  if (!parsed.ok()) return s;
  const ClassFile& cf = parsed.value();
  s.name = std::string(cf.cp.ClassName(cf.this_class).value_or(""));
  for (const Member& m : cf.methods) {
    s.methods.insert(std::string(*cf.cp.Utf8(m.name_index)) + std::string(*cf.cp.Utf8(m.descriptor_index)));
  }
  for (const Member& f : cf.fields) s.fields.insert(std::string(*cf.cp.Utf8(f.name_index)));
  for (size_t i = 1; i < cf.cp.count(); ++i) {
    if (auto u = cf.cp.Utf8(static_cast<uint16_t>(i))) s.utf8.insert(std::string(*u));
  }
  return s;
}

TEST(ProbeClass, HasWhatTheRewrittenClassesAndTheAgentCall) {
  const Shape s = Parse(ProbeClassBytes(false));
  EXPECT_EQ(s.name, kProbeClass);
  for (const char* m : {"enter(I)V", "exit(I)V", "enterNative(I)V", "exitNative(I)V", "layout(I)J", "bind(J)V",
                        "renaming(Ljava/lang/Thread;Ljava/lang/String;)Ljava/lang/String;"}) {
    EXPECT_TRUE(s.methods.count(m)) << m;
  }
  EXPECT_TRUE(s.fields.count(kProbeOnField));
  EXPECT_TRUE(s.fields.count(kProbeDirectField));
  EXPECT_TRUE(s.utf8.count("currentThread"));
}

TEST(ProbeClass, OnJdksWithVirtualThreadsItAsksForTheCarrierThread) {
  const Shape s = Parse(ProbeClassBytes(true));
  EXPECT_EQ(s.name, kProbeClass);
  EXPECT_TRUE(s.utf8.count("currentCarrierThread"));
  EXPECT_FALSE(s.utf8.count("currentThread"));
  EXPECT_EQ(s.methods, Parse(ProbeClassBytes(false)).methods);
}

TEST(ProbeClass, ReplacingAUtf8ConstantInATruncatedPoolChangesNothing) {
  const std::vector<uint8_t> whole = ProbeClassBytes(false);
  for (size_t cut : {size_t{0}, size_t{9}, size_t{10}, size_t{40}, whole.size() / 4}) {
    std::vector<uint8_t> bytes(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
    const std::vector<uint8_t> before = bytes;
    // A pool cut short is malformed, and is not edited, wherever the name lies.
    EXPECT_FALSE(ReplaceUtf8Constant(&bytes, "currentThread", "currentCarrierThread")) << cut;
    EXPECT_EQ(bytes, before) << cut;
  }
  std::vector<uint8_t> bytes = whole;
  EXPECT_FALSE(ReplaceUtf8Constant(&bytes, "noSuchName", "x"));
  EXPECT_EQ(bytes, whole);
}

}  // namespace
}  // namespace lookback::jvm
