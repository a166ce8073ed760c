#include "format/format.h"

#include <gtest/gtest.h>

namespace lookback::format {
namespace {

TEST(Format, EventRecordRoundTrips) {
  const uint64_t tsc = 0x123456789abcdefull, key = 0x55d0c0de1234ull;
  const uint64_t r = MakeEvent(true, tsc, key);
  EXPECT_TRUE(IsEvent(r));
  EXPECT_TRUE(IsExit(r));
  EXPECT_EQ(EventTscLow(r), tsc & kTscLowMask);
  EXPECT_EQ(EventKeyLow(r), key & 0xffffffffu);
  EXPECT_FALSE(IsExit(MakeEvent(false, tsc, key)));
}

TEST(Format, ControlRecordsAreNeverEvents) {
  EXPECT_FALSE(IsEvent(MakeEpoch(kEpochMask, kEpochDeltaMax)));
  EXPECT_FALSE(IsEvent(MakeFnBase(kKeyBaseMask, kKeyBaseMask, true)));
  EXPECT_EQ(ControlKindOf(MakeEpoch(1, 1)), static_cast<uint8_t>(ControlKind::kEpoch));
  EXPECT_EQ(ControlKindOf(MakeFnBase(1, 1, true)), static_cast<uint8_t>(ControlKind::kFnBase));
}

TEST(Format, EpochDeltaSaturates) {
  EXPECT_EQ(EpochDelta(MakeEpoch(100, 3)), 3u);
  EXPECT_EQ(EpochDelta(MakeEpoch(100, uint64_t{1} << 40)), kEpochDeltaMax);
}

TEST(Format, FnBaseRemembersThePreviousBase) {
  const uint64_t r = MakeFnBase(0x5555, 0x7f12, true);
  EXPECT_EQ(FnBaseValue(r), 0x5555u);
  EXPECT_EQ(FnBasePrevious(r), 0x7f12u);
  EXPECT_TRUE(FnBasePreviousKnown(r));
  EXPECT_FALSE(FnBasePreviousKnown(MakeFnBase(1, 0, false)));
}

TEST(Format, MethodKeysFitTheKeySpace) {
  EXPECT_LT(kKeyMethodTag | 0xffffffffull, kKeyLimit);
  EXPECT_GT(kKeyMethodTag, uint64_t{1} << 47);  // above every user-space address
}

}  // namespace
}  // namespace lookback::format
