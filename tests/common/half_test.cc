// common/half.h: IEEE binary16 rounding (to nearest even, subnormals, overflow) and the exact
// round trip of every half.
#include "common/half.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"

namespace tunejit {
namespace {

// The host fp16 conversion of weights, tuner inputs and the GPU tests' expectations.
TEST(HalfConversion, RoundsToNearestEvenAndRoundTrips) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(0.25f), 0x3400);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);                    // the largest half
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);                    // below the midpoint
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                    // the midpoint rounds to even: inf
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);             // tie, to even (down)
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);         // tie, to even (up)
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f + 0x1p-20f), 0x3c01);  // above the tie
  EXPECT_EQ(FloatToHalf(0x1p-24f), 0x0001);                    // the smallest subnormal
  EXPECT_EQ(FloatToHalf(0x1p-25f), 0x0000);                    // tie to even: zero
  EXPECT_EQ(FloatToHalf(3 * 0x1p-25f), 0x0002);                // 1.5 units: to even
  EXPECT_EQ(FloatToHalf(0x1p-14f), 0x0400);                    // the smallest normal
  EXPECT_EQ(FloatToHalf(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaNs
    EXPECT_EQ(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace tunejit
