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
