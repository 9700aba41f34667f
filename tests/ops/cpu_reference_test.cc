// Self-checks of the CPU reference (the ground truth of every GPU op test): hand-computed cases,
// and identities between ops (a 1x1 conv is a dense; a depthwise conv is a grouped conv).
#include "ops/cpu_reference.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

autotvm::Conv2dParams Params(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, int64_t kh,
                             int64_t kw) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = ci, p.h = h, p.w = w, p.co = co, p.kh = kh, p.kw = kw;
  return p;
}

TEST(CpuReference, HandComputedConv) {
  // 1x1x3x3 input 1..9, one 2x2 kernel [[1, 0], [0, -1]], pad 1 on top/left only, stride 2.
  autotvm::Conv2dParams p = Params(1, 1, 3, 3, 1, 2, 2);
  p.pad_top = 1, p.pad_left = 1, p.stride_h = 2, p.stride_w = 2;
  ASSERT_EQ(p.OutH(), 2);
  ASSERT_EQ(p.OutW(), 2);
  std::vector<float> data = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<float> weight = {1, 0, 0, -1};
  std::vector<double> out = cpuref::Conv2dFloat(p, data, weight);
  // out[y][x] = pad[2y][2x] - pad[2y+1][2x+1] with pad = input shifted by one.
  EXPECT_EQ(out, (std::vector<double>{0 - 1, 0 - 3, 0 - 7, 5 - 9}));
}

TEST(CpuReference, DilatedConvSkipsRows) {
  autotvm::Conv2dParams p = Params(1, 1, 5, 1, 1, 2, 1);
  p.dilation_h = 3;
  ASSERT_EQ(p.OutH(), 2);
  std::vector<float> data = {1, 10, 100, 1000, 10000};
  std::vector<double> out = cpuref::Conv2dFloat(p, data, std::vector<float>{1, 2});
  EXPECT_EQ(out, (std::vector<double>{1 + 2 * 1000, 10 + 2 * 10000}));
}

TEST(CpuReference, OneByOneConvEqualsDense) {
  // A 1x1 conv over a 1x1 image is dense: out[b, f] = sum_c data[b, c] * w[f, c].
  const int64_t n = 3, c = 17, f = 5;
  std::vector<float> data = testing::RandomFloats(n * c, 1);
  std::vector<float> weight = testing::RandomFloats(f * c, 2);
  std::vector<double> conv = cpuref::Conv2dFloat(Params(n, c, 1, 1, f, 1, 1), data, weight);
  std::vector<double> dense = cpuref::DenseFloat(n, f, c, data, weight);
  ASSERT_EQ(conv.size(), dense.size());
  for (size_t i = 0; i < conv.size(); ++i) EXPECT_DOUBLE_EQ(conv[i], dense[i]);
}

// x [1, 2, 3] broadcast against y [2, 2, 3]; y stored [2, 3, 2] gives the same products.
TEST(CpuReference, HandComputedBatchMatmul) {
  autotvm::BatchMatmulParams p{.x_batch = 1, .y_batch = 2, .m = 2, .n = 2, .k = 3};
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> y = {1, 0, 1, 0, 1, 0, /*batch 1*/ 1, 1, 1, 2, 0, -1};
  const std::vector<double> want = {4, 2, 10, 5, /*batch 1*/ 6, -1, 15, 2};
  EXPECT_EQ(cpuref::BatchMatmulFloat(p, x, y), want);
  const std::vector<float> y_kn = {1, 0, 0, 1, 1, 0, /*batch 1*/ 1, 2, 1, 0, 1, -1};
  EXPECT_EQ(cpuref::BatchMatmulFloat(p, x, y_kn, /*y_kn=*/true), want);
}

TEST(CpuReference, DepthwiseIsPerChannel) {
  // groups == channels: each output channel only sees its own input channel.
  autotvm::Conv2dParams p = Params(1, 2, 2, 2, 2, 1, 1);
  p.groups = 2;
  std::vector<double> out =
      cpuref::Conv2dFloat(p, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, std::vector<float>{2, -1});
  EXPECT_EQ(out, (std::vector<double>{2, 4, 6, 8, -5, -6, -7, -8}));
}

TEST(CpuReference, Int8ConvAccumulatesInInt32) {
  autotvm::Conv2dParams p = Params(1, 4, 1, 1, 1, 1, 1);
  std::vector<int8_t> data = {-128, -128, 127, -128};
  std::vector<int8_t> weight = {-128, -128, -128, 127};
  std::vector<int32_t> out = cpuref::Conv2dInt8(p, data, weight);
  EXPECT_EQ(out, (std::vector<int32_t>{16384 + 16384 - 16256 - 16256}));
}

TEST(CpuReference, EpilogueOrderAndRounding) {
  std::vector<double> acc = {2.5, -3.0, 3.5, 1000.0, -1000.0, 0.5};
  std::vector<float> bias = {1.0f, 2.0f};
  std::vector<float> scale = {0.5f, 1.0f};
  // channels 2, inner 3: channel 0 for the first three values.
  Epilogue e{.bias = true, .relu = true, .output = Epilogue::Output::kFloat32};
  EXPECT_EQ(cpuref::EpilogueFloat(acc, 2, 3, e, bias, scale),
            (std::vector<float>{2.25f, 0.0f, 2.75f, 1002.0f, 0.0f, 2.5f}));
  Epilogue q{.bias = false, .relu = false, .output = Epilogue::Output::kInt8Requantize};
  // 2.5*0.5 = 1.25 -> 1; -1.5 -> -2 (half to even); 1.75 -> 2; 1000 -> 127; -1000 -> -128;
  // 0.5 -> 0 (half to even).
  EXPECT_EQ(cpuref::EpilogueInt8(acc, 2, 3, q, bias, scale),
            (std::vector<int8_t>{1, -2, 2, 127, -128, 0}));
  Epilogue plain;
  EXPECT_EQ(cpuref::EpilogueFloat(acc, 2, 3, plain, {}, {}),
            (std::vector<float>{2.5f, -3.0f, 3.5f, 1000.0f, -1000.0f, 0.5f}));
  EXPECT_EQ(cpuref::EpilogueInt32(std::vector<int32_t>{-5, 7}, Epilogue{.relu = true}),
            (std::vector<int32_t>{0, 7}));
}

TEST(CpuReference, SaturateRoundsHalfToEven) {
  EXPECT_EQ(cpuref::SaturateToInt8(0.5f), 0);
  EXPECT_EQ(cpuref::SaturateToInt8(1.5f), 2);
  EXPECT_EQ(cpuref::SaturateToInt8(-2.5f), -2);
  EXPECT_EQ(cpuref::SaturateToInt8(126.6f), 127);
  EXPECT_EQ(cpuref::SaturateToInt8(300.0f), 127);
  EXPECT_EQ(cpuref::SaturateToInt8(-129.0f), -128);
}

TEST(CpuReference, MaxPoolWithPadding) {
  Pool2dParams p;
  p.h = 3, p.w = 3, p.kh = 3, p.kw = 3, p.stride_h = 2, p.stride_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  ASSERT_EQ(p.OutH(), 2);
  std::vector<float> x = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
  // Padding never wins, even against all-negative inputs.
  EXPECT_EQ(cpuref::MaxPool2d(p, x), (std::vector<float>{-1, -2, -4, -5}));
  std::vector<int8_t> q = {-128, -128, -128, -128, -100, -128, -128, -128, -128};
  EXPECT_EQ(cpuref::MaxPool2d(p, q), (std::vector<int8_t>{-100, -100, -100, -100}));
}

TEST(CpuReference, SoftmaxRowsSumToOne) {
  std::vector<float> x = {0, 0, std::log(2.0f), 1000, 1000, 1000};
  std::vector<float> y = cpuref::Softmax(2, 3, x);
  EXPECT_NEAR(y[0], 0.25, 1e-7);
  EXPECT_NEAR(y[2], 0.5, 1e-7);
  EXPECT_NEAR(y[3], 1.0 / 3, 1e-7);  // no overflow: the row max is subtracted
}

TEST(CpuReference, QuantizationOps) {
  EXPECT_EQ(cpuref::Quantize(std::vector<float>{0.25f, -0.75f, 100.0f}, 0.5f),
            (std::vector<int8_t>{0, -2, 127}));
  EXPECT_EQ(
      cpuref::Dequantize(std::vector<int8_t>{1, 2, 3, 4}, 2, 2, std::vector<float>{0.5f, 2.0f}),
      (std::vector<float>{0.5f, 1.0f, 6.0f, 8.0f}));
  EXPECT_EQ(cpuref::Dequantize(std::vector<int32_t>{1, -2}, 1, 1, std::vector<float>{0.25f}),
            (std::vector<float>{0.25f, -0.5f}));
  EXPECT_EQ(cpuref::Requantize(std::vector<int32_t>{5, 5, 1000, -1000}, 2, 1,
                               std::vector<float>{0.5f, 0.1f}),
            (std::vector<int8_t>{2, 0, 127, -100}));
  EXPECT_EQ(
      cpuref::BiasRelu(std::vector<float>{1, -3, 1, -3}, 2, 2, std::vector<float>{1, 2}, true),
      (std::vector<float>{2, 0, 3, 0}));
}

TEST(CpuReference, RelativeError) {
  EXPECT_EQ(cpuref::RelativeError(std::vector<float>{3, 4}, std::vector<float>{3, 4}), 0);
  EXPECT_NEAR(cpuref::RelativeError(std::vector<float>{3, 4.5f}, std::vector<float>{3, 4}), 0.1,
              1e-12);
  EXPECT_TRUE(
      std::isinf(cpuref::RelativeError(std::vector<float>{NAN, 4}, std::vector<float>{3, 4})));
  EXPECT_TRUE(std::isinf(cpuref::RelativeError(std::vector<float>{3}, std::vector<float>{3, 4})));
}

}  // namespace
}  // namespace tunejit
