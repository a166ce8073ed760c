// The probe class the agent defines (src/frontends/jvm/probe_class.h): the
// bytes javac built, and the one edit the agent makes to them on JDKs with
// virtual threads. Every JVM test defines the class for real; these check
// what those tests cannot on a JDK 17 machine.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "frontends/jvm/bytecode.h"
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
  for (const char* m : {"enter(I)Z", "exit(IZ)V", "enterNative(I)V", "exitNative(I)V", "layout(I)J", "bind(J)V",
                        "renaming(Ljava/lang/Thread;Ljava/lang/String;)Ljava/lang/String;"}) {
    EXPECT_TRUE(s.methods.count(m)) << m;
  }
  EXPECT_TRUE(s.fields.count(kProbeOnField));
  EXPECT_TRUE(s.utf8.count("currentThread"));
}

// C1 inlines a callee of at most C1MaxInlineSize (35) bytes of bytecode, or
// any @ForceInline one, into code that profiles every branch; C2 inlines one
// of at most FreqInlineSize (325) bytes at a hot call site, which a probe in
// a hot method always is. enter must be called by C1 and both inlined by C2:
// a copy of enter and exit with their guard tests in every probe of C1's
// code doubled its size on javac and cost 1.3x in wall time
// (LookbackProbe.java, docs/jvm.md). exit, which reads no guard since it
// follows its entry's decision, is a few tests and a call.
TEST(ProbeClass, EnterIsInlinedByC2ButCalledByC1) {
  const std::vector<uint8_t> bytes = ProbeClassBytes(false);
  auto parsed = ClassFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()));
  ASSERT_TRUE(parsed.ok());
  const ClassFile& cf = parsed.value();
  size_t checked = 0;
  for (const Member& m : cf.methods) {
    const std::string name(*cf.cp.Utf8(m.name_index));
    if (name != "enter" && name != "exit") continue;
    for (const Attribute& a : m.attributes) {
      const std::string_view attribute = cf.AttributeName(a);
      if (attribute == "RuntimeVisibleAnnotations" || attribute == "RuntimeInvisibleAnnotations") {
        ADD_FAILURE() << name << " is annotated (@ForceInline would put it into C1's code at every probe)";
      }
      if (attribute != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      ASSERT_TRUE(code.ok());
      if (name == "enter") {
        EXPECT_GT(code.value().code.size(), 35u) << name << ": C1 would inline it";
      }
      EXPECT_LE(code.value().code.size(), 325u) << name << ": C2 would not inline it";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2u);
}

// What the probe calls to write a record itself: each method within C2's
// limit for a hot call (FreqInlineSize, 325 bytes of bytecode), so that C2
// inlines the whole path into every probe. One `write` of 468 bytes was
// called instead, and cost Java Listing 1 about 2 ns a trace point.
TEST(ProbeClass, TheWritePathIsInlinedByC2) {
  const std::vector<uint8_t> bytes = ProbeClassBytes(false);
  auto parsed = ClassFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()));
  ASSERT_TRUE(parsed.ok());
  const ClassFile& cf = parsed.value();
  const std::set<std::string> path = {"write", "timed", "untimed", "excluded", "filtered"};
  std::set<std::string> seen;
  for (const Member& m : cf.methods) {
    const std::string name(*cf.cp.Utf8(m.name_index));
    if (!path.count(name)) continue;
    for (const Attribute& a : m.attributes) {
      if (cf.AttributeName(a) != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      ASSERT_TRUE(code.ok());
      EXPECT_LE(code.value().code.size(), 325u) << name << ": C2 would call it, not inline it";
      seen.insert(name);
    }
  }
  EXPECT_EQ(seen, path);
}

// The interpreter runs every probe of code not yet compiled, and pays a frame
// for each call a probe makes: with a helper for the fold test and Unsafe's
// address-only getByte(long) (a Java wrapper around the native), a recorded
// call under -Xint cost twice as much (LookbackProbe.java). So on their way to
// the natives, enter and exit call nothing but LookbackProbe's own natives,
// `write` (the records they write themselves: not called while WRITES is false),
// and Unsafe's (Object, long) accessors, which are natives themselves.
TEST(ProbeClass, EnterAndExitCallNoJavaHelperOnTheirWayToTheNatives) {
  const std::vector<uint8_t> bytes = ProbeClassBytes(false);
  auto parsed = ClassFile::Parse(std::span<const uint8_t>(bytes.data(), bytes.size()));
  ASSERT_TRUE(parsed.ok());
  const ClassFile& cf = parsed.value();
  std::set<std::string> natives;
  for (const Member& m : cf.methods) {
    if (m.access_flags & 0x0100) natives.insert(std::string(*cf.cp.Utf8(m.name_index)));  // ACC_NATIVE
  }
  size_t checked = 0;
  for (const Member& m : cf.methods) {
    const std::string name(*cf.cp.Utf8(m.name_index));
    if (name != "enter" && name != "exit") continue;
    for (const Attribute& a : m.attributes) {
      if (cf.AttributeName(a) != "Code") continue;
      auto code = CodeAttribute::Parse(a.info);
      ASSERT_TRUE(code.ok());
      const std::vector<uint8_t>& c = code.value().code;
      auto insns = DecodeInstructions(std::span<const uint8_t>(c.data(), c.size()));
      ASSERT_TRUE(insns.ok());
      size_t calls = 0;
      for (const Insn& in : insns.value()) {
        if (in.op < kOpInvokevirtual || in.op > kOpInvokedynamic) continue;
        ++calls;
        const uint16_t ref = ReadU2(std::span<const uint8_t>(c.data(), c.size()), in.offset + 1);
        const std::string owner(cf.cp.RefClassName(ref).value_or("?"));
        const auto nt = cf.cp.RefNameAndType(ref);
        ASSERT_TRUE(nt.has_value()) << name << " at " << in.offset;
        const std::string callee(nt->first), descriptor(nt->second);
        if (owner == kProbeClass) {
          EXPECT_TRUE(natives.count(callee) || callee == "write")
              << name << " calls " << callee << ", a Java helper the interpreter pays a frame for";
        } else {
          EXPECT_EQ(owner, "jdk/internal/misc/Unsafe") << name << " calls " << owner << "." << callee;
          EXPECT_EQ(descriptor.rfind("(Ljava/lang/Object;J", 0), 0u)
              << name << " calls Unsafe." << callee << descriptor
              << ": the address-only form is a Java wrapper around the (Object, long) native";
        }
      }
      EXPECT_GE(calls, 2u) << name << ": the guard's read and the natives";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2u);
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
