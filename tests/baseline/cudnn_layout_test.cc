// The fp16 baseline's host layout (baseline/cudnn_layout.h): where each element lands, the round
// trip, and that a dense weight converted with the flattened activation's dims gives the same
// product over the channels-last flatten as the original over the NCHW one.
#include "baseline/cudnn_layout.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

std::vector<float> Ramp(int64_t n, float step) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = step * static_cast<float>(i % 97) - 1.5f;
  return v;
}

TEST(CudnnLayout, ChannelsLastPutsEachElementAtItsNhwcIndex) {
  const std::array<int64_t, 4> dims = {2, 3, 4, 5};            // N, C, H, W
  const std::vector<float> nchw = Ramp(2 * 3 * 4 * 5, 0.25f);  // exact in float16
  const std::vector<uint16_t> nhwc = ToHalfChannelsLast(nchw, dims);
  ASSERT_EQ(nhwc.size(), nchw.size());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w) {
          const float want = nchw[((n * 3 + c) * 4 + h) * 5 + w];
          EXPECT_EQ(HalfToFloat(nhwc[((n * 4 + h) * 5 + w) * 3 + c]), want)
              << n << " " << c << " " << h << " " << w;
        }
}

TEST(CudnnLayout, RoundTripKeepsValuesWithinHalfRounding) {
  const std::array<int64_t, 4> dims = {3, 7, 2, 6};
  std::vector<float> values(3 * 7 * 2 * 6);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.1f * static_cast<float>(i) - 7.3f;
  const std::vector<float> back = FromHalfChannelsLast(ToHalfChannelsLast(values, dims), dims);
  ASSERT_EQ(back.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(back[i], values[i], std::abs(values[i]) * 0x1p-11f) << i;
    EXPECT_EQ(back[i], HalfToFloat(FloatToHalf(values[i]))) << i;  // only rounding, no mixing
  }
}

TEST(CudnnLayout, RanksBelowThreeAreUnchanged) {
  const std::vector<float> values = Ramp(12, 0.5f);
  const std::vector<uint16_t> half = ToHalfChannelsLast(values, {3, 4, 1, 1});
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(HalfToFloat(half[i]), values[i]);
}

TEST(CudnnLayout, DenseWeightFollowsTheChannelsLastFlatten) {
  // y[o] = sum_k W[o][k] x_nchw[k]; with W' = W as [out, C, H, W] channels-last and the
  // activation stored channels-last, y[o] = sum_k W'[o][k] x_nhwc[k], the same sum reordered.
  constexpr int64_t kOut = 3, kC = 4, kH = 2, kW = 3, kK = kC * kH * kW;
  const std::vector<float> weight = Ramp(kOut * kK, 0.125f);
  const std::vector<float> x = Ramp(kK, 0.0625f);
  const std::vector<uint16_t> w_last = ToHalfChannelsLast(weight, {kOut, kC, kH, kW});
  const std::vector<uint16_t> x_last = ToHalfChannelsLast(x, {1, kC, kH, kW});
  for (int64_t o = 0; o < kOut; ++o) {
    double want = 0, got = 0;
    for (int64_t k = 0; k < kK; ++k) {
      want += static_cast<double>(weight[o * kK + k]) * x[k];
      got += static_cast<double>(HalfToFloat(w_last[o * kK + k])) * HalfToFloat(x_last[k]);
    }
    EXPECT_DOUBLE_EQ(got, want) << o;  // the ramps are exact in float16
    EXPECT_NE(want, 0);
  }
}

}  // namespace
}  // namespace tunejit
