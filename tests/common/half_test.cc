// common/half.h: IEEE binary16 rounding (to nearest even, subnormals, overflow), the exact round
// trip of every half, and every float against the textbook rounding.
#include "common/half.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "common/parallel_for.h"
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

// The textbook rounding, one case at a time: the exponent rebiased, the mantissa's 13 dropped
// bits compared with half of the kept lowest bit.
uint16_t ReferenceFloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);
  if (x < 0x38800000u) {
    float v;
    std::memcpy(&v, &x, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));
  }
  uint32_t h = ((((x >> 23) - 127 + 15) << 10) | ((x & 0x7fffffu) >> 13));
  const uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(std::min<uint32_t>(h, 0x7c00u));
}

// Every one of the 2^32 floats (a few seconds on all cores): the branch-free rounding changes no
// converted weight.
TEST(HalfConversion, EveryFloatMatchesTheTextbookRounding) {
  std::atomic<uint64_t> mismatches{0}, first{0};
  ParallelFor(int64_t{1} << 32, int64_t{1} << 24, 0, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t bits = static_cast<uint32_t>(i);
      float f;
      std::memcpy(&f, &bits, 4);
      if (FloatToHalf(f) != ReferenceFloatToHalf(f) && mismatches++ == 0) first = bits;
    }
  });
  EXPECT_EQ(mismatches, 0u) << "first at float bits 0x" << std::hex << first;
}

// The bulk conversion of weights (F16C where the CPU has it) against FloatToHalf on one float in
// 16 (every exponent and high mantissa, the low four bits varying; the sanitizer builds run this
// too), in blocks of 4096, written 1 byte off alignment; NaNs need only stay NaNs.
TEST(HalfConversion, BulkConversionMatchesFloatToHalfOnEveryFloat) {
  constexpr int64_t kBlock = 4096;
  std::atomic<uint64_t> mismatches{0}, first{0};
  auto bits_of = [](int64_t k) { return static_cast<uint32_t>((k << 4) | ((k * 7) & 15)); };
  ParallelFor(int64_t{1} << 28, int64_t{1} << 22, 0, [&](int64_t begin, int64_t end) {
    std::vector<float> in(kBlock);
    std::vector<uint8_t> out(kBlock * 2 + 1);
    for (int64_t b = begin; b < end; b += kBlock) {
      for (int64_t i = 0; i < kBlock; ++i) {
        const uint32_t bits = bits_of(b + i);
        std::memcpy(&in[i], &bits, 4);
      }
      FloatsToHalves(in.data(), kBlock, out.data() + 1);
      for (int64_t i = 0; i < kBlock; ++i) {
        uint16_t h;
        std::memcpy(&h, out.data() + 1 + i * 2, 2);
        const bool same = std::isnan(in[i]) ? std::isnan(HalfToFloat(h)) : h == FloatToHalf(in[i]);
        if (!same && mismatches++ == 0) first = bits_of(b + i);
      }
    }
  });
  EXPECT_EQ(mismatches, 0u) << "first at float bits 0x" << std::hex << first;
}

// Lengths that leave a tail after the eight-wide blocks.
TEST(HalfConversion, BulkConversionCoversTails) {
  for (size_t n : {0, 1, 7, 8, 9, 23}) {
    std::vector<float> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = 0.1f * static_cast<float>(i) - 1.0f;
    std::vector<uint8_t> out(n * 2 + 2, 0xAB);
    FloatsToHalves(in.data(), n, out.data());
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, out.data() + i * 2, 2);
      EXPECT_EQ(h, FloatToHalf(in[i])) << "n " << n << " i " << i;
    }
    EXPECT_EQ(out[n * 2], 0xAB) << "wrote past " << n << " halves";
  }
}

}  // namespace
}  // namespace tunejit
