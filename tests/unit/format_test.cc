#include "format/format.h"

#include <gtest/gtest.h>

namespace lookback::format {
namespace {

TEST(Format, EventRecordRoundTrips) {
  const uint64_t tsc = 0x123456789abcdefull, key = 0x55d0c0de1234ull;
  for (unsigned slot = 0; slot < kBaseSlots; ++slot) {
    const uint64_t r = MakeEvent(true, slot, tsc, key);
    EXPECT_TRUE(IsEvent(r));
    EXPECT_TRUE(IsExit(r));
    EXPECT_EQ(EventSlot(r), slot);
    EXPECT_EQ(EventTscLow(r), tsc & kTscLowMask);
    EXPECT_EQ(EventKeyLow(r), key & 0xffffffffu);
    EXPECT_FALSE(IsExit(MakeEvent(false, slot, tsc, key)));
  }
}

TEST(Format, ControlRecordsAreNeverEvents) {
  EXPECT_FALSE(IsEvent(MakeEpoch(kEpochMask, kEpochDeltaMax)));
  EXPECT_FALSE(IsEvent(MakeFnBase(3, kKeyBaseMask, kKeyBaseMask, true, 0xf)));
  EXPECT_EQ(ControlKindOf(MakeEpoch(1, 1)), static_cast<uint8_t>(ControlKind::kEpoch));
  EXPECT_EQ(ControlKindOf(MakeFnBase(0, 1, 1, true, 1)), static_cast<uint8_t>(ControlKind::kFnBase));
}

TEST(Format, EpochDeltaSaturates) {
  EXPECT_EQ(EpochDelta(MakeEpoch(100, 3)), 3u);
  EXPECT_EQ(EpochDelta(MakeEpoch(100, uint64_t{1} << 40)), kEpochDeltaMax);
}

TEST(Format, FnBaseRemembersThePreviousBase) {
  const uint64_t r = MakeFnBase(2, 0x5555, 0x7f12, true, 0x7);
  EXPECT_EQ(FnBaseValue(r), 0x5555u);
  EXPECT_EQ(FnBasePrevious(r), 0x7f12u);
  EXPECT_TRUE(FnBasePreviousKnown(r));
  EXPECT_EQ(FnBaseSlot(r), 2u);
  EXPECT_EQ(FnBaseInUse(r), 0x7u);
  EXPECT_FALSE(FnBasePreviousKnown(MakeFnBase(0, 1, 0, false, 1)));
}

// Dumps of versions 1-3 (30 TSC bits, one base) still decode.
TEST(Format, OlderLayoutsDecodeTheirOwnFields) {
  EXPECT_EQ(LayoutOfVersion(3).tsc_low_bits, 30u);
  EXPECT_EQ(LayoutOfVersion(4).tsc_low_bits, 28u);
  const uint64_t v3_event = kEventBit | (uint64_t{0x3fffffff} << 32) | 0x1234;  // 30 TSC bits all set
  EXPECT_EQ(EventTscLow(v3_event, kLayoutV1), 0x3fffffffu);
  EXPECT_EQ(EventSlot(v3_event, kLayoutV1), 0u);
  const uint64_t v3_epoch = MakeControl(ControlKind::kEpoch, (uint64_t{5} << 34) | 77);  // delta 5, epoch 77
  EXPECT_EQ(EpochValue(v3_epoch, kLayoutV1), 77u);
  EXPECT_EQ(EpochDelta(v3_epoch, kLayoutV1), 5u);
  EXPECT_EQ(FnBaseInUse(MakeControl(ControlKind::kFnBase, 0x1234), kLayoutV1), 1u);
}

TEST(Format, MethodKeysFitTheKeySpace) {
  EXPECT_LT(kKeyMethodTag | 0xffffffffull, kKeyLimit);
  EXPECT_GT(kKeyMethodTag, uint64_t{1} << 47);  // above every user-space address
}

}  // namespace
}  // namespace lookback::format
