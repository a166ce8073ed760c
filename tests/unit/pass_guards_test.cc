// The registry of pass guard tables (runtime/pass_guards.h), fed tables laid
// out as the pass emits them. Keys are made up and distinct per test: the
// registry is process-wide.
#include "runtime/pass_guards.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace lookback::testing {
namespace {

using rt::PassGuardEntry;

TEST(PassGuards, SetsEveryCopyOfAFunctionsGuardAndNothingElse) {
  // fn 0x1000 twice: a linkonce function instrumented in two object files.
  static uint8_t g[3] = {};
  static PassGuardEntry table[] = {{0x1000, &g[0]}, {0x2000, &g[1]}, {0x1000, &g[2]}};
  const size_t before = rt::PassGuardCount();
  lb_pass_register_guards(table, table + 3);
  EXPECT_EQ(rt::PassGuardCount(), before + 3);

  EXPECT_TRUE(rt::SetPassGuard(0x1000, true));
  EXPECT_EQ(g[0], 1);
  EXPECT_EQ(g[1], 0);
  EXPECT_EQ(g[2], 1);
  EXPECT_TRUE(rt::SetPassGuard(0x1000, false));
  EXPECT_EQ(g[0], 0);
  EXPECT_EQ(g[2], 0);
  EXPECT_FALSE(rt::SetPassGuard(0x1001, true)) << "no module has a guard for it";

  lb_pass_unregister_guards(table, table + 3);
  EXPECT_EQ(rt::PassGuardCount(), before);
  EXPECT_FALSE(rt::SetPassGuard(0x2000, true)) << "an unloaded module's guards are never written";
  EXPECT_EQ(g[1], 0);
}

TEST(PassGuards, FindsGuardsOfModulesRegisteredAfterASearch) {
  static uint8_t a = 0, b = 0;
  static PassGuardEntry first[] = {{0x5000, &a}};
  static PassGuardEntry second[] = {{0x4000, &b}};
  lb_pass_register_guards(first, first + 1);
  EXPECT_TRUE(rt::SetPassGuard(0x5000, true));
  lb_pass_register_guards(second, second + 1);
  EXPECT_TRUE(rt::SetPassGuard(0x4000, true));
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 1);
  lb_pass_unregister_guards(first, first + 1);
  lb_pass_unregister_guards(second, second + 1);
}

bool ShedsOdd(uint64_t fn) { return (fn & 0x100) != 0; }

TEST(PassGuards, ModuleLoadedAfterAShedDecisionShedsTheSameFunctions) {
  static uint8_t g[2] = {};
  static PassGuardEntry table[] = {{0x7100, &g[0]}, {0x7200, &g[1]}};
  rt::SetShedQuery(&ShedsOdd);
  lb_pass_register_guards(table, table + 2);
  rt::SetShedQuery(nullptr);
  EXPECT_EQ(g[0], 1);
  EXPECT_EQ(g[1], 0);
  lb_pass_unregister_guards(table, table + 2);
}

TEST(PassGuards, IgnoresEmptyAndReversedTables) {
  static PassGuardEntry table[] = {{0x9000, nullptr}};
  const size_t before = rt::PassGuardCount();
  lb_pass_register_guards(table, table);
  lb_pass_register_guards(table + 1, table);
  lb_pass_register_guards(nullptr, nullptr);
  EXPECT_EQ(rt::PassGuardCount(), before);
  EXPECT_FALSE(rt::SetPassGuard(0x9000, true));
}

}  // namespace
}  // namespace lookback::testing
