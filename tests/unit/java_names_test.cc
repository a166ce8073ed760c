// Java method names: the agent's PrettyMethod (src/frontends/jvm/
// method_names.h) and the ART exporter's inverse (src/exporters/java_names.h)
// round-trip every descriptor shape.
#include <gtest/gtest.h>

#include "exporters/java_names.h"
#include "frontends/jvm/method_names.h"

namespace lookback::testing {
namespace {

TEST(JavaNames, PrettyMethodSpellsTypesAsArtDoes) {
  EXPECT_EQ(jvm::PrettyMethod("com/example/Foo", "bar", "(Ljava/lang/String;I)V"),
            "void com.example.Foo.bar(java.lang.String, int)");
  EXPECT_EQ(jvm::PrettyMethod("a/B$C", "<init>", "([[JZ)V"), "void a.B$C.<init>(long[][], boolean)");
  EXPECT_EQ(jvm::PrettyMethod("X", "f", "()[Ljava/lang/Object;"), "java.lang.Object[] X.f()");
}

TEST(JavaNames, MalformedDescriptorIsKeptVerbatim) {
  EXPECT_EQ(jvm::PrettyMethod("X", "f", "(Q)V"), "X.f(Q)V");
  EXPECT_EQ(jvm::PrettyMethod("X", "f", "(I"), "X.f(I");
  EXPECT_EQ(jvm::PrettyMethod("X", "f", "(Ljava/lang/String)V"), "X.f(Ljava/lang/String)V");
}

TEST(JavaNames, ArtSplitInvertsPrettyMethod) {
  for (const char* desc : {"()V", "(I)I", "(Ljava/lang/String;I)V", "([[JZ)[Ljava/lang/Object;", "(BCDFJSZ)D",
                           "(La/B$C;[La/B;)La/B$C;"}) {
    const std::string pretty = jvm::PrettyMethod("com/example/Outer$Inner", "run", desc);
    exporters::JavaMethodName n;
    ASSERT_TRUE(exporters::SplitJavaMethod(pretty, &n)) << pretty;
    EXPECT_EQ(n.cls, "com.example.Outer$Inner");
    EXPECT_EQ(n.name, "run");
    EXPECT_EQ(n.descriptor, desc);
  }
}

TEST(JavaNames, ArtSplitRejectsNativeNames) {
  exporters::JavaMethodName n;
  EXPECT_FALSE(exporters::SplitJavaMethod("foo(int)", &n));
  EXPECT_FALSE(exporters::SplitJavaMethod("void std::vector<int, std::allocator<int> >::push_back(int const&)", &n));
  EXPECT_FALSE(exporters::SplitJavaMethod("main", &n));
}

}  // namespace
}  // namespace lookback::testing

// Modified UTF-8 (the JVM's strings) to UTF-8: a surrogate pair becomes its
// 4-byte character, U+0000 and unpaired halves U+FFFD, UTF-8 is unchanged.
TEST(JavaNames, ModifiedUtf8BecomesUtf8) {
  using lookback::jvm::HasModifiedUtf8;
  using lookback::jvm::Utf8FromModified;
  const std::string rocket_pair = "\xED\xA0\xBD\xED\xBA\x80";  // U+1F680 as D83D DE80
  EXPECT_TRUE(HasModifiedUtf8("w" + rocket_pair));
  EXPECT_EQ(Utf8FromModified("w" + rocket_pair + "x"), "w\xF0\x9F\x9A\x80x");
  EXPECT_EQ(Utf8FromModified("a\xC0\x80" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(Utf8FromModified("\xED\xA0\xBD" "z"), "\xEF\xBF\xBD" "z");          // a high half alone
  EXPECT_EQ(Utf8FromModified("\xED\xBA\x80"), "\xEF\xBF\xBD");                    // a low half alone
  EXPECT_EQ(Utf8FromModified("\xED\xA0"), "\xED\xA0");                            // cut short: kept
  const std::string utf8 = "caf\xC3\xA9 \xE2\x82\xAC \xED\x9F\xBF \xF0\x9F\x9A\x80";  // é, €, U+D7FF, U+1F680
  EXPECT_FALSE(HasModifiedUtf8(utf8));
  EXPECT_EQ(Utf8FromModified(utf8), utf8);
  EXPECT_EQ(lookback::jvm::PrettyMethod("p/R" + rocket_pair, "m", "()V"), "void p.R\xF0\x9F\x9A\x80.m()");
}
