// The int8 arithmetic of graph/quantize.h, against hand-computed values and, end to end, against a
// float conv: quantize -> int8 conv (CPU reference) -> requantizing epilogue must land within a
// couple of int8 steps of quantize(float conv).
#include "graph/quantize.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::Pointwise;

TEST(QuantizeTest, WeightsPerChannelRoundHalfEven) {
  // Channel 0: max 127 -> scale 1; 2.5 -> 2 and -3.5 -> -4 (half to even), 0.5 -> 0.
  // Channel 1: max 63.5 -> scale 0.5; 31.75 -> 63.5 -> 64, 0.75 -> 1.5 -> 2 (even), -63.5 -> -127.
  // Channel 2: all zero -> scale 1, zeros.
  std::vector<float> w = {127, 2.5f, -3.5f, 0.5f, 31.75f, -63.5f, 0, 0.75f, 0, 0, 0, 0};
  QuantizedWeights q = QuantizeWeights(w, 3);
  EXPECT_THAT(q.scales, ElementsAre(FloatEq(1.0f), FloatEq(0.5f), FloatEq(1.0f)));
  EXPECT_THAT(q.values, ElementsAre(127, 2, -4, 0, 64, -127, 0, 2, 0, 0, 0, 0));
}

TEST(QuantizeTest, WeightRoundTripWithinHalfAStep) {
  std::vector<float> w = testing::NormalFloats(64 * 36, 3);
  QuantizedWeights q = QuantizeWeights(w, 64);
  for (int c = 0; c < 64; ++c) {
    int max_q = 0;
    for (int i = 0; i < 36; ++i) {
      const float back = q.values[c * 36 + i] * q.scales[c];
      EXPECT_LE(std::fabs(back - w[c * 36 + i]), 0.5f * q.scales[c] * 1.0001f);
      max_q = std::max(max_q, std::abs(static_cast<int>(q.values[c * 36 + i])));
    }
    EXPECT_EQ(max_q, 127) << "channel " << c << " does not use the full range";
  }
}

// The per-row form the executor's weight preparation uses: the same bytes as QuantizeWeights, and
// a reordered row quantizes to the same values reordered (the scale does not see the order).
TEST(QuantizeTest, RowsAreQuantizeWeightsAndIgnoreTheOrder) {
  const std::vector<float> w = testing::NormalFloats(5 * 27, 4);
  const QuantizedWeights q = QuantizeWeights(w, 5);
  for (int c = 0; c < 5; ++c) {
    std::vector<int8_t> row(27);
    const float s = QuantizeRow(absl::MakeConstSpan(w).subspan(c * 27, 27), absl::MakeSpan(row));
    EXPECT_EQ(s, q.scales[c]);
    EXPECT_EQ(row, std::vector<int8_t>(q.values.begin() + c * 27, q.values.begin() + c * 27 + 27));
    std::vector<float> reversed(w.rbegin() + (4 - c) * 27, w.rbegin() + (5 - c) * 27);
    std::vector<int8_t> reversed_q(27);
    EXPECT_EQ(QuantizeRow(reversed, absl::MakeSpan(reversed_q)), s);
    EXPECT_EQ(reversed_q, std::vector<int8_t>(row.rbegin(), row.rend()));
  }
}

TEST(QuantizeTest, ActivationScaleAndAbsMax) {
  EXPECT_FLOAT_EQ(ActivationScale(127.0f), 1.0f);
  EXPECT_FLOAT_EQ(ActivationScale(2.54f), 0.02f);
  EXPECT_FLOAT_EQ(ActivationScale(0.0f), 1.0f);
  EXPECT_FLOAT_EQ(ActivationScale(INFINITY), 1.0f);
  EXPECT_FLOAT_EQ(AbsMax(std::vector<float>{1, -3, 2}), 3.0f);
}

TEST(QuantizeTest, EpilogueFormulas) {
  const std::vector<float> s_w = {0.25f, 2.0f}, bias = {1.0f, -2.0f};
  EpilogueScales r = RequantizeEpilogue(0.5f, s_w, bias, 4.0f);  // s_in * s_w / s_out, b / s_out
  EXPECT_THAT(r.scale, Pointwise(FloatEq(), std::vector<float>{0.03125f, 0.25f}));
  EXPECT_THAT(r.bias, Pointwise(FloatEq(), std::vector<float>{0.25f, -0.5f}));
  EpilogueScales d = DequantizeEpilogue(0.5f, s_w, bias);  // s_in * s_w, b
  EXPECT_THAT(d.scale, Pointwise(FloatEq(), std::vector<float>{0.125f, 1.0f}));
  EXPECT_THAT(d.bias, Pointwise(FloatEq(), bias));
  EpilogueScales f = FloatToInt8Epilogue(2, bias, 4.0f);  // 1 / s_out, b / s_out
  EXPECT_THAT(f.scale, Pointwise(FloatEq(), std::vector<float>{0.25f, 0.25f}));
  EXPECT_THAT(f.bias, Pointwise(FloatEq(), std::vector<float>{0.25f, -0.5f}));
  EXPECT_TRUE(RequantizeEpilogue(0.5f, s_w, {}, 4.0f).bias.empty());
}

// quantize(x) * quantize(w) in int32, requantized with the epilogue vectors, equals
// quantize(relu(conv(x, w) + b), s_out) up to the quantization noise of x and w.
TEST(QuantizeTest, Int8ConvWithRequantizeEpilogueMatchesFloatConv) {
  autotvm::Conv2dParams p;
  p.n = 1, p.ci = 8, p.h = 6, p.w = 6, p.co = 4, p.kh = 3, p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const std::vector<float> x = testing::NormalFloats(p.n * p.ci * p.h * p.w, 1);
  std::vector<float> w = testing::NormalFloats(p.co * p.ci * 9, 2);
  for (float& v : w) v *= 0.2f;
  const std::vector<float> bias = {0.1f, -0.2f, 0.3f, 0.0f};
  const Epilogue e{true, true, Epilogue::Output::kInt8Requantize};
  const int64_t inner = p.h * p.w;

  // Float truth, and the output scale a calibration of it would give.
  std::vector<float> truth = cpuref::EpilogueFloat(cpuref::Conv2dFloat(p, x, w), p.co, inner,
                                                   Epilogue{true, true}, bias, {});
  const float s_out = ActivationScale(AbsMax(truth));
  const float s_in = ActivationScale(AbsMax(x));
  QuantizedWeights qw = QuantizeWeights(w, p.co);
  const std::vector<int8_t> qx = cpuref::Quantize(x, s_in);
  EpilogueScales r = RequantizeEpilogue(s_in, qw.scales, bias, s_out);
  std::vector<int8_t> got =
      cpuref::EpilogueInt8(cpuref::Conv2dInt8(p, qx, qw.values), p.co, inner, e, r.bias, r.scale);
  int worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const int want = cpuref::SaturateToInt8(truth[i] / s_out);
    worst = std::max(worst, std::abs(got[i] - want));
  }
  // 72-term sums of products each carrying <= half a step of x and w error: a few output steps.
  EXPECT_LE(worst, 3);
  // A wrong formula (e.g. forgetting s_in) is far off.
  EpilogueScales wrong = RequantizeEpilogue(1.0f, qw.scales, bias, s_out);
  std::vector<int8_t> bad = cpuref::EpilogueInt8(cpuref::Conv2dInt8(p, qx, qw.values), p.co, inner,
                                                 e, wrong.bias, wrong.scale);
  EXPECT_NE(bad, got);
}

}  // namespace
}  // namespace tunejit
