// GPU (Hopper only): conv2d_nhwc_wgmma.cuda (kernel_sources/conv2d_wgmma.cu) against an exact CPU
// convolution, for the fallback and a fixed-seed sample of valid configs: tails of the pixel tile,
// of the 64-channel k tile (C = 72) and of tile_n (CO = 136), 1x1, padded and dilated filters,
// channels within 64 bytes (64-byte rows, two taps a stage, an odd tap count), all
// epilogues (requantized int8 outputs of 4-byte words, and of bytes when CO % 4 != 0), in fp16
// and int8, on pixel tiles of one image, on im2col tiles of consecutive pixels and on halo boxes
// (a stage per filter column), at stride 1 and 2; then per-layer
// throughput on VGG-16's convolutions at batch 128.
// Inputs are RandomQuarters: the fp32 outputs must equal the CPU sums bit for bit.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

struct Shape {
  int64_t n, h, w, c, co, k, pad, dilation, stride = 1;
  int64_t oh() const { return (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

autotvm::Workload Workload(const Shape& s, bool f16_out, bool pool = false) {
  return autotvm::Workload{pool ? autotvm::kConv2dNhwcWgmmaPool : autotvm::kConv2dNhwcWgmma,
                           autotvm::Json::array({testing::Tensor({s.n, s.h, s.w, s.c}, "float16"),
                                                 testing::Tensor({s.co, s.k, s.k, s.c}, "float16"),
                                                 {s.stride, s.stride},
                                                 {s.pad, s.pad, s.pad, s.pad},
                                                 {s.dilation, s.dilation},
                                                 f16_out ? "float16" : "float32"})};
}

// One output element: the exact sum (every partial sum of quarters' products is exact in float).
float ConvAt(const Shape& s, const std::vector<float>& x, const std::vector<float>& w, int64_t b,
             int64_t y, int64_t xo, int64_t co) {
  double sum = 0;
  for (int64_t r = 0; r < s.k; ++r) {
    const int64_t iy = y * s.stride + r * s.dilation - s.pad;
    if (iy < 0 || iy >= s.h) continue;
    for (int64_t q = 0; q < s.k; ++q) {
      const int64_t ix = xo * s.stride + q * s.dilation - s.pad;
      if (ix < 0 || ix >= s.w) continue;
      const float* px = &x[((b * s.h + iy) * s.w + ix) * s.c];
      const float* pw = &w[((co * s.k + r) * s.k + q) * s.c];
      for (int64_t c = 0; c < s.c; ++c) sum += double{px[c]} * pw[c];
    }
  }
  return static_cast<float>(sum);
}

struct Operands {
  Shape s;
  std::vector<float> x, w, bias, scale;
  std::vector<float> acc;  // NHWC
};

Operands MakeOperands(const Shape& s, uint32_t seed) {
  Operands o{s,
             testing::RandomQuarters(s.n * s.h * s.w * s.c, seed),
             testing::RandomQuarters(s.co * s.k * s.k * s.c, seed + 1),
             testing::RandomQuarters(s.co, seed + 2),
             testing::RandomQuarters(s.co, seed + 3),
             {}};
  o.acc.resize(s.n * s.oh() * s.ow() * s.co);
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t y = 0; y < s.oh(); ++y) {
      for (int64_t x = 0; x < s.ow(); ++x) {
        for (int64_t co = 0; co < s.co; ++co) {
          o.acc[((b * s.oh() + y) * s.ow() + x) * s.co + co] = ConvAt(s, o.x, o.w, b, y, x, co);
        }
      }
    }
  }
  return o;
}

struct Case {
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  bool f16_out = false;
};

std::vector<std::vector<uint8_t>> Inputs(const std::vector<float>& x, const std::vector<float>& w,
                                         const std::vector<float>& bias,
                                         const std::vector<float>& scale) {
  return {testing::Bytes(testing::ToHalves(x)), testing::Bytes(testing::ToHalves(w)),
          testing::Bytes(bias), testing::Bytes(scale)};
}

// The expected outputs of a case, NHWC: the epilogue of every accumulator, or with `pool` the max
// of each 2x2 window's ([N, OH / 2, OW / 2, CO]).
std::vector<float> Expected(const Operands& o, const Epilogue& e, bool pool) {
  std::vector<float> out(o.acc.size());
  for (size_t i = 0; i < o.acc.size(); ++i) {
    const int64_t co = static_cast<int64_t>(i) % o.s.co;
    out[i] = testing::EpilogueValue(o.acc[i], o.bias[co], o.scale[co], e);
  }
  if (!pool) return out;
  const int64_t oh = o.s.oh(), ow = o.s.ow(), ph = oh / 2, pw = ow / 2;
  std::vector<float> pooled(o.s.n * ph * pw * o.s.co);
  for (size_t i = 0; i < pooled.size(); ++i) {
    const int64_t co = static_cast<int64_t>(i) % o.s.co, pixel = static_cast<int64_t>(i) / o.s.co;
    const int64_t b = pixel / (ph * pw), y = pixel / pw % ph, x = pixel % pw;
    float best = -INFINITY;
    for (int64_t dy = 0; dy < 2; ++dy) {
      for (int64_t dx = 0; dx < 2; ++dx) {
        best = std::max(best, out[((b * oh + 2 * y + dy) * ow + 2 * x + dx) * o.s.co + co]);
      }
    }
    pooled[i] = best;
  }
  return pooled;
}

void CheckCases(testing::GpuHarness& harness, const Operands& o, const std::vector<Case>& cases,
                bool pool = false) {
  const OpTemplate* op =
      FindOpTemplate(pool ? autotvm::kConv2dNhwcWgmmaPool : autotvm::kConv2dNhwcWgmma);
  std::vector<OpPlan> plans;
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        op->Specialize(Workload(o.s, c.f16_out, pool), c.config, harness.limits(), c.epilogue);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*std::move(plan));
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const auto inputs = Inputs(o.x, o.w, o.bias, o.scale);
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& cs = cases[c];
    const bool to_int8 = cs.epilogue.output == Epilogue::Output::kInt8Requantize;
    const std::vector<float> expected = Expected(o, cs.epilogue, pool);
    auto out = harness.Run(plans[c], inputs,
                           {expected.size() * (to_int8      ? 1
                                               : cs.f16_out ? 2
                                                            : 4)});
    ASSERT_TRUE(out.ok()) << cs.config.ToString() << ": " << out.status();
    const int64_t oh = pool ? o.s.oh() / 2 : o.s.oh(), ow = pool ? o.s.ow() / 2 : o.s.ow();
    int wrong = 0;
    for (size_t i = 0; i < expected.size() && wrong < 5; ++i) {
      const int64_t co = static_cast<int64_t>(i) % o.s.co;
      const float want = expected[i];
      const testing::StoredAs as = to_int8      ? testing::StoredAs::kInt8
                                   : cs.f16_out ? testing::StoredAs::kFloat16
                                                : testing::StoredAs::kFloat32;
      float got = 0;
      if (testing::StoredExactly((*out)[0], i, as, want, &got)) continue;
      const int64_t pixel = static_cast<int64_t>(i) / o.s.co;
      ADD_FAILURE() << plans[c].kernels[0].spec.name_expression << " image " << pixel / (oh * ow)
                    << " y " << pixel / ow % oh << " x " << pixel % ow << " co " << co << ": "
                    << got << ", want " << want;
      ++wrong;
    }
  }
}

std::vector<autotvm::ConfigEntity> SampledConfigs(const Shape& s, const DeviceLimits& limits,
                                                  int count) {
  return testing::SampledValidConfigs(*FindOpTemplate(autotvm::kConv2dNhwcWgmma),
                                      Workload(s, false), limits, count);
}

TEST(Conv2dWgmmaGpu, FallbackMatchesOnEdgeShapes) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  for (const Shape& s : std::vector<Shape>{{2, 20, 20, 72, 136, 3, 1, 1},
                                           {1, 16, 16, 64, 64, 1, 0, 1},
                                           {1, 18, 18, 64, 128, 3, 2, 2},
                                           {3, 14, 14, 128, 64, 3, 1, 1},
                                           // 64-byte rows: 32 and 24 channels, 9 taps (odd)
                                           {2, 18, 18, 32, 64, 3, 1, 1},
                                           {1, 18, 18, 24, 72, 3, 2, 2}}) {
    const Operands o = MakeOperands(s, static_cast<uint32_t>(s.h * s.c + s.co));
    const autotvm::ConfigEntity fallback = *op->FallbackConfig(Workload(s, false));
    CheckCases(*harness, o,
               {{fallback, {}, false},
                {fallback, {.bias = true, .relu = true}, false},
                {fallback, {.bias = true, .relu = true}, true},
                {fallback, {.bias = true, .output = Epilogue::Output::kFloat32}, false},
                {fallback,
                 {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
                 false}});
  }
}

TEST(Conv2dWgmmaGpu, SampledConfigsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Shape s{2, 20, 20, 72, 136, 3, 1, 1};
  const std::vector<autotvm::ConfigEntity> configs = SampledConfigs(s, harness->limits(), 10);
  ASSERT_EQ(configs.size(), 10u);
  std::vector<Case> cases;
  for (size_t i = 0; i < configs.size(); ++i) {
    cases.push_back({configs[i], {.bias = i % 2 == 1, .relu = i % 2 == 1}, i % 3 == 1});
  }
  CheckCases(*harness, MakeOperands(s, 11), cases);
}

// Ping-pong: the two consumers take whole tiles in turn, ordered by the turn mbarriers. 480
// output tiles over the H200's 132 persistent blocks give each block 3 or 4 tiles, so both
// consumers run several rounds; tails in W (40 = 2.5 x 16), C (72) and CO (264 = 256 + 8).
TEST(Conv2dWgmmaGpu, PingPongConsumersMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  auto pingpong = [](int64_t th, int64_t tw, int64_t bn, int64_t stages) {
    return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw),
                            OtherKnob("tile_n", bn), OtherKnob("stages", stages),
                            OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 1)});
  };
  const Shape s{4, 40, 40, 72, 264, 3, 1, 1};
  CheckCases(
      *harness, MakeOperands(s, 31),
      {{pingpong(4, 16, 256, 4), {.bias = true, .relu = true}, true},
       {pingpong(8, 16, 128, 3), {}, false},
       {pingpong(1, 64, 192, 2), {.bias = true, .output = Epilogue::Output::kFloat32}, false},
       {pingpong(8, 8, 64, 6),
        {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
        false},
       // int8 on the tensor cores' stem: a float16 workload requantized to int8.
       {pingpong(8, 16, 128, 4),
        {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
        true}});
}

// im2col = 1: M tiles of consecutive output pixels that run across image rows and images, the
// last one past the output's end; padding and dilation through the im2col bounding box.
autotvm::ConfigEntity Im2colConfig(int64_t th, int64_t bn, int64_t stages, int64_t pingpong) {
  return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", 64), OtherKnob("tile_n", bn),
                          OtherKnob("stages", stages), OtherKnob("consumer_wg", 2),
                          OtherKnob("pingpong", pingpong), OtherKnob("im2col", 1)});
}

TEST(Conv2dWgmmaGpu, Im2colTilesMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  // 3 x 14 x 14 = 588 pixels: 4.6 tiles of 128; C = 72 (a channel tail), CO = 136.
  CheckCases(
      *harness, MakeOperands({3, 14, 14, 72, 136, 3, 1, 1}, 41),
      {{Im2colConfig(2, 128, 4, 0), {.bias = true, .relu = true}, true},
       {Im2colConfig(4, 128, 4, 0), {}, false},
       {Im2colConfig(2, 64, 4, 1), {.bias = true, .relu = true}, true},
       {Im2colConfig(2, 256, 3, 0), {.bias = true, .output = Epilogue::Output::kFloat32}, false}});
  // Dilation 2 with padding 2 on a 13 x 11 image; and a 1 x 1 filter without padding.
  CheckCases(*harness, MakeOperands({2, 13, 11, 64, 64, 3, 2, 2}, 43),
             {{Im2colConfig(2, 64, 4, 0), {.bias = true, .relu = true}, true},
              {Im2colConfig(1, 64, 4, 1), {}, false}});
  CheckCases(*harness, MakeOperands({2, 9, 9, 40, 64, 1, 0, 1}, 45),
             {{Im2colConfig(2, 64, 4, 0), {}, false}});
}

// cluster = 2: the two blocks of a cluster take the two channel tiles of one pixel tile, each
// loading half its pixels into both (TMA multicast) and handing stages back to both producers.
// Pixel tails (the last tile past the output), channel tails, dilation, and CO % 8 != 0 (the
// fp16 output's 4-byte stores instead of 16-byte ones).
autotvm::ConfigEntity ClusterConfig(int64_t th, int64_t tw, int64_t stages, int64_t pingpong,
                                    int64_t im2col) {
  return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw),
                          OtherKnob("tile_n", 128), OtherKnob("stages", stages),
                          OtherKnob("consumer_wg", 2), OtherKnob("pingpong", pingpong),
                          OtherKnob("im2col", im2col), OtherKnob("cluster", 2)});
}

TEST(Conv2dWgmmaGpu, ClustersOfTwoMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  // 3 x 14 x 14 = 588 pixels (2.3 tiles of 256, 4.6 of 128), C = 72, CO = 136: 2 channel tiles.
  CheckCases(*harness, MakeOperands({3, 14, 14, 72, 136, 3, 1, 1}, 51),
             {{ClusterConfig(4, 64, 4, 0, 1), {.bias = true, .relu = true}, true},
              {ClusterConfig(2, 64, 4, 1, 1), {}, false},
              {ClusterConfig(8, 16, 4, 0, 0), {.bias = true, .relu = true}, true},
              {ClusterConfig(4, 16, 6, 1, 0),
               {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
               true}});
  // Dilation 2, padding 2, CO = 134.
  CheckCases(*harness, MakeOperands({2, 13, 11, 64, 134, 3, 2, 2}, 53),
             {{ClusterConfig(2, 64, 4, 0, 1), {.bias = true, .relu = true}, true},
              {ClusterConfig(8, 8, 4, 1, 0), {.bias = true, .relu = true}, true}});
  // CO = 256: the fp16 and requantized int8 outputs in 16-byte stores (CO % 16 == 0).
  CheckCases(*harness, MakeOperands({2, 10, 12, 48, 256, 3, 1, 1}, 55),
             {{ClusterConfig(4, 64, 4, 0, 1), {.bias = true, .relu = true}, true},
              {ClusterConfig(4, 16, 4, 1, 0),
               {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
               true}});
}

// The networks' epilogues: fp16 bias + ReLU, and int8's requantize.
constexpr Epilogue kBiasRelu{.bias = true, .relu = true};
constexpr Epilogue kRequantize{
    .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};

// The residual epilogue (ResNet's skip connection): the float16 output plus a float16 residual
// of its shape, summed in float and rounded to float16, then the ReLU: what the add kernel after
// an unfused conv computes, bit for bit. 16-byte stores (CO % 8 == 0), the pairs path (CO 68),
// swapped tiles (the staged rows' copy adds it), im2col tiles and a stride-2 1x1 downsample.
TEST(Conv2dWgmmaGpu, ResidualEpilogueMatchesTheUnfusedAdd) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  auto tile = [](int64_t th, int64_t tw, int64_t bn, int64_t im2col, int64_t swap_ab) {
    return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw),
                            OtherKnob("tile_n", bn), OtherKnob("stages", 4),
                            OtherKnob("consumer_wg", 2), OtherKnob("pingpong", 0),
                            OtherKnob("im2col", im2col), OtherKnob("cluster", 1),
                            OtherKnob("halo", 0), OtherKnob("swap_ab", swap_ab)});
  };
  struct ResidualCase {
    Shape s;
    autotvm::ConfigEntity config;
    bool relu;
  };
  const std::vector<ResidualCase> cases = {
      {{2, 14, 14, 64, 256, 1, 0, 1}, tile(8, 16, 128, 0, 0), true},
      {{2, 14, 14, 64, 256, 1, 0, 1}, tile(2, 64, 256, 1, 0), false},
      {{2, 15, 13, 72, 68, 3, 1, 1}, tile(8, 16, 128, 0, 0), true},
      {{2, 14, 14, 64, 64, 3, 1, 1}, tile(8, 16, 64, 0, 1), true},
      {{2, 28, 28, 64, 128, 1, 0, 1, 2}, tile(8, 16, 128, 0, 0), true}};
  for (size_t i = 0; i < cases.size(); ++i) {
    const ResidualCase& rc = cases[i];
    const Operands o = MakeOperands(rc.s, static_cast<uint32_t>(71 + i));
    const std::vector<float> skip = testing::RandomQuarters(o.acc.size(), 81 + i);
    const Epilogue e{.bias = true, .relu = rc.relu, .residual = true};
    absl::StatusOr<OpPlan> plan =
        op->Specialize(Workload(rc.s, true), rc.config, harness->limits(), e);
    ASSERT_TRUE(plan.ok()) << rc.config.ToString() << ": " << plan.status();
    ASSERT_TRUE(harness->Precompile({*plan}).ok());
    std::vector<std::vector<uint8_t>> inputs = Inputs(o.x, o.w, o.bias, o.scale);
    inputs.push_back(testing::Bytes(testing::ToHalves(skip)));
    auto out = harness->Run(*plan, inputs, {o.acc.size() * 2});
    ASSERT_TRUE(out.ok()) << out.status();
    int wrong = 0;
    for (size_t j = 0; j < o.acc.size() && wrong < 5; ++j) {
      const int64_t co = static_cast<int64_t>(j) % rc.s.co;
      const float conv = testing::HalfToFloat(testing::FloatToHalf(o.acc[j] + o.bias[co]));
      float want = conv + skip[j];
      if (rc.relu && want < 0) want = 0;
      want = testing::HalfToFloat(testing::FloatToHalf(want));
      float got = 0;
      if (testing::StoredExactly((*out)[0], j, testing::StoredAs::kFloat16, want, &got)) continue;
      ADD_FAILURE() << plan->kernels[0].spec.name_expression << " element " << j << ": " << got
                    << ", want " << want;
      ++wrong;
    }
  }
}

// Strided convs: the input maps step the stride over the input's pixels (TMA element strides).
// Tiled boxes of stride x the pixels they bring, im2col runs across image rows and images,
// clusters loading half a tile each, two images per tile, pooled tiles; odd input sizes (the
// last output's window past the padding), 1x1 downsamples and a 7x7 stem over 8 channels (64-byte
// rows, 49 taps: two a stage, the last alone).
TEST(Conv2dWgmmaGpu, StridedConvsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  auto tile = [](int64_t th, int64_t tw, int64_t bn, int64_t pingpong, int64_t im2col,
                 int64_t cluster, int64_t tile_b) {
    return testing::Config(
        {OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("tile_n", bn),
         OtherKnob("stages", 4), OtherKnob("consumer_wg", 2), OtherKnob("pingpong", pingpong),
         OtherKnob("im2col", im2col), OtherKnob("cluster", cluster), OtherKnob("halo", 0),
         OtherKnob("swap_ab", 0), OtherKnob("tile_b", tile_b)});
  };
  // 3x3 stride 2 over 29 x 27 (15 x 14 outputs), C = 72, CO = 136.
  const Shape s3{3, 29, 27, 72, 136, 3, 1, 1, 2};
  CheckCases(*harness, MakeOperands(s3, 61),
             {{*op->FallbackConfig(Workload(s3, false)), {}, false},
              {tile(8, 16, 128, 1, 0, 1, 1), kBiasRelu, true},
              {tile(2, 64, 128, 0, 1, 1, 1), kBiasRelu, true},
              {tile(4, 64, 64, 1, 1, 1, 1), kRequantize, true},
              {tile(8, 8, 128, 0, 0, 1, 2), {.bias = true}, false}});
  // CO = 256 for clusters (an even count of 128-channel tiles), 1x1 stride 2 without padding.
  const Shape s1{2, 28, 28, 64, 256, 1, 0, 1, 2};
  CheckCases(*harness, MakeOperands(s1, 63),
             {{*op->FallbackConfig(Workload(s1, false)), kBiasRelu, true},
              {tile(8, 16, 128, 0, 0, 2, 1), kBiasRelu, true},
              {tile(4, 64, 128, 0, 1, 2, 1), kBiasRelu, true},
              {tile(2, 64, 256, 0, 1, 1, 1), kRequantize, false}});
  // 7x7 stride 2 pad 3 over 8 channels (RGB padded to 16 bytes), 64 channels out.
  const Shape stem{2, 45, 45, 8, 64, 7, 3, 1, 2};
  CheckCases(*harness, MakeOperands(stem, 65),
             {{*op->FallbackConfig(Workload(stem, false)), kBiasRelu, true},
              {tile(2, 64, 64, 0, 1, 1, 1), kBiasRelu, true},
              {tile(8, 8, 64, 1, 0, 1, 2), kRequantize, true}});
  // Pooled in the kernel after a stride-2 conv: 16 x 16 outputs in tiles of whole windows.
  const Shape sp{2, 32, 32, 64, 128, 3, 1, 1, 2};
  CheckCases(*harness, MakeOperands(sp, 67), {{tile(8, 16, 128, 0, 0, 1, 1), kBiasRelu, true}},
             /*pool=*/true);
}

// halo = 1: a stage per filter column, its filter rows reading one box of tile_h + KH - 1 image
// rows at row offsets r x tile_w. Boxes past every edge of the image (20 = 8 + 8 + 4 rows, 20 =
// 16 + 4 columns), channel tails (C = 72: a 64-channel row and 8), CO tails, ping-pong and
// cooperative consumers, 8- to 32-pixel rows, a 5 x 5 filter (5 rows a stage) and the pooled
// kernel.
autotvm::ConfigEntity HaloConfig(int64_t th, int64_t tw, int64_t bn, int64_t stages,
                                 int64_t pingpong) {
  return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("tile_n", bn),
                          OtherKnob("stages", stages), OtherKnob("consumer_wg", 2),
                          OtherKnob("pingpong", pingpong), OtherKnob("im2col", 0),
                          OtherKnob("cluster", 1), OtherKnob("halo", 1)});
}

TEST(Conv2dWgmmaGpu, HaloBoxesMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Operands o = MakeOperands({2, 20, 20, 72, 136, 3, 1, 1}, 71);
  CheckCases(*harness, o,
             {{HaloConfig(8, 16, 128, 2, 0), kBiasRelu, true},
              {HaloConfig(8, 8, 64, 4, 1), {}, false},
              {HaloConfig(4, 32, 128, 2, 1), kRequantize, true},
              {HaloConfig(16, 16, 64, 2, 0),
               {.bias = true, .output = Epilogue::Output::kFloat32},
               false}});
  CheckCases(*harness, o,
             {{HaloConfig(8, 16, 128, 2, 0), kBiasRelu, true},
              {HaloConfig(8, 32, 64, 3, 1), kRequantize, true}},
             /*pool=*/true);
  // 5 x 5, padding 2; and 64 channels (one row, no tail) with CO 64, as conv1_2.
  CheckCases(*harness, MakeOperands({2, 18, 20, 72, 64, 5, 2, 1}, 73),
             {{HaloConfig(8, 8, 64, 2, 1), kBiasRelu, true}});
  CheckCases(
      *harness, MakeOperands({2, 20, 24, 64, 64, 3, 1, 1}, 75),
      {{HaloConfig(8, 32, 64, 3, 1), kBiasRelu, true}, {HaloConfig(16, 8, 64, 4, 0), {}, false}},
      /*pool=*/true);
}

// swap_ab = 1: the tile computed transposed (channels as wgmma's M, a consumer's pixels as its N)
// and written out through shared memory. 256-, 128- and 64-pixel consumers (ping-pong and
// cooperative), halo, im2col and per-tap loads, CO 64 (one channel tile), 40 (a tail: columns
// past CO) and 136 (tiles of 64, 64 and 8; rows of 40 or 136 int8 bytes go out byte by byte), every
// output kind, and pooled in the kernel over 8- to 64-pixel image rows (windows in one thread's
// registers; negatively scaled channels pool their minimum).
autotvm::ConfigEntity SwapConfig(int64_t th, int64_t tw, int64_t stages, int64_t pingpong,
                                 int64_t halo, int64_t im2col = 0) {
  return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("tile_n", 64),
                          OtherKnob("stages", stages), OtherKnob("consumer_wg", 2),
                          OtherKnob("pingpong", pingpong), OtherKnob("im2col", im2col),
                          OtherKnob("cluster", 1), OtherKnob("halo", halo),
                          OtherKnob("swap_ab", 1)});
}

TEST(Conv2dWgmmaGpu, SwappedOperandsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Epilogue scaled{.bias = true, .output = Epilogue::Output::kFloat32};
  for (const Shape& s : std::vector<Shape>{{2, 20, 20, 72, 64, 3, 1, 1},
                                           {2, 20, 24, 64, 40, 3, 1, 1},
                                           {1, 16, 16, 72, 136, 3, 1, 1}}) {
    const Operands o = MakeOperands(s, static_cast<uint32_t>(81 + s.co));
    CheckCases(*harness, o,
               {{SwapConfig(8, 32, 2, 1, 1), kBiasRelu, true},
                {SwapConfig(8, 32, 2, 1, 1), kRequantize, true},
                {SwapConfig(8, 16, 4, 0, 0), scaled, false},
                {SwapConfig(4, 16, 4, 1, 0), {}, false},
                {SwapConfig(4, 32, 4, 0, 1), kRequantize, true},
                {SwapConfig(2, 64, 4, 0, 0, 1), kBiasRelu, true}});
    CheckCases(*harness, o,
               {{SwapConfig(8, 32, 3, 1, 1), kBiasRelu, true},
                {SwapConfig(8, 32, 3, 1, 1), kRequantize, true},
                {SwapConfig(16, 8, 4, 0, 0), scaled, false},
                {SwapConfig(4, 16, 4, 1, 1), kRequantize, true},
                {SwapConfig(4, 64, 4, 1, 0), kBiasRelu, true},
                {SwapConfig(4, 64, 2, 0, 0), {}, false}},
               /*pool=*/true);
  }
}

// conv2d_nhwc_wgmma_pool.cuda: the conv's epilogue then a 2x2 max pool, bit for bit. Pooled in the
// kernel with image rows of 8 (a window's rows in one thread), 16 and 32 (across warps) and 64
// pixels (across a consumer's subtiles), tiles past the output's edge (20 = 16 + 4, 64 > 20),
// ping-pong, clusters, every output kind (the random scales are of both signs: a negatively
// scaled channel pools its accumulators' min); and after the kernel where the tile cannot (im2col).
TEST(Conv2dWgmmaGpu, PooledTilesMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  auto tile = [](int64_t th, int64_t tw, int64_t bn, int64_t cwg, int64_t pingpong) {
    return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw),
                            OtherKnob("tile_n", bn), OtherKnob("stages", 4),
                            OtherKnob("consumer_wg", cwg), OtherKnob("pingpong", pingpong)});
  };
  const Epilogue bias_relu{.bias = true, .relu = true};
  const Epilogue requantize{
      .bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  CheckCases(
      *harness, MakeOperands({2, 20, 20, 72, 136, 3, 1, 1}, 61),
      {{tile(8, 8, 128, 1, 0), bias_relu, true},
       {tile(8, 8, 64, 2, 1), {}, false},
       {tile(8, 16, 128, 2, 0), bias_relu, true},
       {tile(4, 16, 128, 2, 1), requantize, true},
       {tile(4, 32, 128, 2, 0), {.bias = true, .output = Epilogue::Output::kFloat32}, false},
       {tile(4, 64, 64, 2, 0), bias_relu, true},
       {tile(2, 64, 128, 2, 1), requantize, true},
       {ClusterConfig(8, 16, 4, 0, 0), bias_relu, true},
       {Im2colConfig(2, 128, 4, 0), bias_relu, true},
       {Im2colConfig(4, 128, 4, 0), {.bias = true, .output = Epilogue::Output::kFloat32}, false},
       {Im2colConfig(2, 64, 4, 1), {}, true}},
      /*pool=*/true);
  // 16 x 24 output of a padded, dilated filter; CO 64.
  CheckCases(*harness, MakeOperands({3, 16, 24, 64, 64, 3, 2, 2}, 63),
             {{tile(8, 8, 64, 2, 1), bias_relu, true}, {tile(8, 16, 64, 2, 0), bias_relu, true}},
             /*pool=*/true);
}

// tile_b = 2 or 4: a tile is the same tile_h x tile_w pixels of consecutive images, one box per
// tap. Odd batches (the last tile's images past N: TMA's zeros, rows not written), tiles past the
// image's edge (20 = 16 + 4), ping-pong, swapped operands, 64-byte rows (C = 32 int8 is not
// this test's: fp16 C 72 / 64), pooled in the kernel with one image's 8 x 8 per consumer (conv3_3's
// tile), every output kind.
autotvm::ConfigEntity ImagesConfig(int64_t th, int64_t tw, int64_t bn, int64_t tile_b,
                                   int64_t pingpong = 0, int64_t swap_ab = 0) {
  return testing::Config({OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("tile_n", bn),
                          OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                          OtherKnob("pingpong", pingpong), OtherKnob("im2col", 0),
                          OtherKnob("cluster", 1), OtherKnob("halo", 0),
                          OtherKnob("swap_ab", swap_ab), OtherKnob("tile_b", tile_b)});
}

TEST(Conv2dWgmmaGpu, ImagesPerTileMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Epilogue scaled{.bias = true, .output = Epilogue::Output::kFloat32};
  for (const Shape& s :
       std::vector<Shape>{{3, 20, 20, 72, 136, 3, 1, 1}, {5, 16, 16, 64, 64, 3, 1, 1}}) {
    const Operands o = MakeOperands(s, static_cast<uint32_t>(91 + s.n));
    CheckCases(*harness, o,
               {{ImagesConfig(8, 8, 128, 2), kBiasRelu, true},
                {ImagesConfig(4, 16, 64, 2, 1), {}, false},
                {ImagesConfig(2, 16, 128, 4), kRequantize, true},
                {ImagesConfig(8, 8, 64, 2, 0, 1), scaled, false},
                {ImagesConfig(8, 8, 64, 2, 1, 1), kBiasRelu, true}});
    CheckCases(*harness, o,
               {{ImagesConfig(8, 8, 128, 2), kBiasRelu, true},
                {ImagesConfig(8, 8, 256, 2), kRequantize, true},
                {ImagesConfig(4, 16, 128, 2, 1), scaled, false},
                {ImagesConfig(2, 16, 128, 4), kBiasRelu, true},
                {ImagesConfig(8, 8, 64, 2, 0, 1), kBiasRelu, true},
                {ImagesConfig(8, 8, 64, 4, 1, 1), kRequantize, true}},
               /*pool=*/true);
  }
}

// int8 x int8 -> int32 (IGMMA): small integers, so the int32 sums are exact and every epilogue
// (int32 with ReLU, requantized int8, scaled float32) must match common.cuh's formula bit for bit.
// C = 144 is one 128-channel row and a 16-channel tail.
TEST(Conv2dWgmmaGpu, Int8MatchesExactly) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  for (const Shape& s :
       std::vector<Shape>{{2, 20, 20, 144, 136, 3, 1, 1},
                          {1, 16, 16, 16, 64, 1, 0, 1},
                          {1, 12, 12, 32, 70, 3, 1, 1},      // CO % 4 != 0: byte stores
                          {2, 20, 20, 64, 136, 3, 1, 1}}) {  // 64-byte rows, two taps a stage
    const autotvm::Workload w{autotvm::kConv2dNhwcWgmma,
                              autotvm::Json::array({testing::Tensor({s.n, s.h, s.w, s.c}, "int8"),
                                                    testing::Tensor({s.co, s.k, s.k, s.c}, "int8"),
                                                    {1, 1},
                                                    {s.pad, s.pad, s.pad, s.pad},
                                                    {s.dilation, s.dilation},
                                                    "int32"})};
    const std::vector<float> x = testing::RandomIntFloats(s.n * s.h * s.w * s.c, 3, 21);
    const std::vector<float> wt = testing::RandomIntFloats(s.co * s.k * s.k * s.c, 3, 22);
    const std::vector<float> bias = testing::RandomQuarters(s.co, 23);
    std::vector<float> scale = testing::RandomQuarters(s.co, 24);
    for (float& v : scale) v = std::abs(v) / 64.0f;  // brings the sums into int8 range
    auto to_int8 = [](const std::vector<float>& v) {
      std::vector<int8_t> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<int8_t>(v[i]);
      return testing::Bytes(out);
    };
    const std::vector<std::vector<uint8_t>> inputs = {to_int8(x), to_int8(wt), testing::Bytes(bias),
                                                      testing::Bytes(scale)};
    std::vector<int32_t> acc(s.n * s.oh() * s.ow() * s.co);
    for (size_t i = 0; i < acc.size(); ++i) {
      const int64_t co = static_cast<int64_t>(i) % s.co, pixel = static_cast<int64_t>(i) / s.co;
      acc[i] = static_cast<int32_t>(
          ConvAt(s, x, wt, pixel / (s.oh() * s.ow()), pixel / s.ow() % s.oh(), pixel % s.ow(), co));
    }
    std::vector<autotvm::ConfigEntity> configs = SampledConfigs(s, harness->limits(), 4);
    configs.insert(configs.begin(), *op->FallbackConfig(w));
    configs.push_back(Im2colConfig(2, 128, 4, 1));  // IGMMA on im2col loads
    configs.push_back(Im2colConfig(4, 64, 4, 0));
    if (s.co == 136) {  // two channel tiles of 128: clusters of two, multicast loads
      configs.push_back(ClusterConfig(2, 64, 4, 1, 1));
      configs.push_back(ClusterConfig(8, 16, 4, 0, 0));
    }
    if (s.k == 3) {  // a stage per filter column (64-byte rows where C = 64 or 32)
      configs.push_back(HaloConfig(8, 16, 128, 2, 0));
      configs.push_back(HaloConfig(8, 32, 64, 3, 1));
      configs.push_back(SwapConfig(8, 16, 2, 1, 1));  // IGMMA transposed: m64n128k32
    }
    configs.push_back(SwapConfig(8, 16, 4, 0, 0));
    configs.push_back(SwapConfig(4, 32, 4, 1, 0));
    configs.push_back(ImagesConfig(8, 8, 128, 2));  // two images per tile
    configs.push_back(ImagesConfig(2, 16, 64, 4, 1, 1));
    const std::vector<Epilogue> epilogues = {
        {.relu = true},
        {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
        {.bias = true, .output = Epilogue::Output::kFloat32}};
    std::vector<OpPlan> plans;
    std::vector<Epilogue> plan_epilogue;
    for (size_t c = 0; c < configs.size(); ++c) {
      const Epilogue& e = epilogues[c % epilogues.size()];
      absl::StatusOr<OpPlan> plan = op->Specialize(w, configs[c], harness->limits(), e);
      ASSERT_TRUE(plan.ok()) << configs[c].ToString() << ": " << plan.status();
      plans.push_back(*std::move(plan));
      plan_epilogue.push_back(e);
    }
    ASSERT_TRUE(harness->Precompile(plans).ok());
    for (size_t c = 0; c < plans.size(); ++c) {
      const Epilogue& e = plan_epilogue[c];
      const size_t bytes = e.output == Epilogue::Output::kInt8Requantize ? 1 : 4;
      auto out = harness->Run(plans[c], inputs, {acc.size() * bytes});
      ASSERT_TRUE(out.ok()) << out.status();
      int wrong = 0;
      for (size_t i = 0; i < acc.size() && wrong < 5; ++i) {
        const int64_t co = static_cast<int64_t>(i) % s.co;
        double got = 0, want = 0;
        if (e.output == Epilogue::Output::kAccumulator) {
          int32_t v;
          std::memcpy(&v, (*out)[0].data() + i * 4, 4);
          got = v;
          want = std::max(acc[i], 0);
        } else {
          float v = static_cast<float>(acc[i]) * scale[co];
          if (e.bias) v = v + bias[co];
          if (e.relu && v < 0) v = 0;
          if (e.output == Epilogue::Output::kInt8Requantize) {
            got = static_cast<int8_t>((*out)[0][i]);
            want = std::clamp(std::nearbyint(v), -128.0f, 127.0f);
          } else {
            float f;
            std::memcpy(&f, (*out)[0].data() + i * 4, 4);
            got = f;
            want = v;
          }
        }
        if (got == want) continue;
        ADD_FAILURE() << plans[c].kernels[0].spec.name_expression << " [" << i << "]: " << got
                      << ", want " << want;
        ++wrong;
      }
    }
  }
}

// The int8 residual epilogue (--precision int8 --tensor-cores' skip connection): the conv's
// value requantized to its own scale, plus an int8 residual dequantized with its scale, the ReLU,
// the sum requantized to its scale: what the add_int8 step after the unfused conv computes, bit
// for bit. 16-byte stores (CO % 16 == 0, tile_n 128 and 64, ping-pong), the words path (CO 72),
// swapped tiles (the staged rows' copy adds it), im2col tiles without the ReLU, a stride-2 1x1
// downsample.
TEST(Conv2dWgmmaGpu, Int8ResidualMatchesTheUnfusedAdd) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  struct ResidualCase {
    Shape s;
    autotvm::ConfigEntity config;
    bool relu;
  };
  const std::vector<ResidualCase> cases = {
      {{2, 14, 14, 64, 256, 1, 0, 1}, ClusterConfig(8, 16, 4, 1, 0), true},
      {{2, 14, 14, 64, 256, 1, 0, 1}, Im2colConfig(4, 64, 4, 1), false},
      {{2, 15, 13, 80, 72, 3, 1, 1}, Im2colConfig(2, 128, 4, 0), true},
      {{2, 14, 14, 64, 64, 3, 1, 1}, SwapConfig(8, 16, 4, 0, 0), true},
      {{2, 28, 28, 64, 128, 1, 0, 1, 2}, Im2colConfig(2, 128, 4, 1), true}};
  // The value's, the residual's and the sum's scales (common.cuh Int8ResidualScales).
  constexpr float kValue = 0.5f, kResidual = 0.25f, kSum = 0.75f;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ResidualCase& rc = cases[i];
    const Shape& s = rc.s;
    autotvm::ConfigEntity config = rc.config;
    const autotvm::Workload w{autotvm::kConv2dNhwcWgmma,
                              autotvm::Json::array({testing::Tensor({s.n, s.h, s.w, s.c}, "int8"),
                                                    testing::Tensor({s.co, s.k, s.k, s.c}, "int8"),
                                                    {s.stride, s.stride},
                                                    {s.pad, s.pad, s.pad, s.pad},
                                                    {s.dilation, s.dilation},
                                                    "int32"})};
    const uint32_t seed = static_cast<uint32_t>(91 + 10 * i);
    const std::vector<float> x = testing::RandomIntFloats(s.n * s.h * s.w * s.c, 3, seed);
    const std::vector<float> wt = testing::RandomIntFloats(s.co * s.k * s.k * s.c, 3, seed + 1);
    const std::vector<float> skip =
        testing::RandomIntFloats(s.n * s.oh() * s.ow() * s.co, 100, seed + 2);
    const std::vector<float> bias = testing::RandomQuarters(s.co, seed + 3);
    std::vector<float> scale = testing::RandomQuarters(s.co, seed + 4);
    for (float& v : scale) v = std::abs(v) / 64.0f;  // brings the sums into int8 range
    scale.insert(scale.end(), {kValue, kResidual, kSum});
    const Epilogue e{.bias = true,
                     .relu = rc.relu,
                     .output = Epilogue::Output::kInt8Requantize,
                     .residual = true};
    absl::StatusOr<OpPlan> plan = op->Specialize(w, config, harness->limits(), e);
    ASSERT_TRUE(plan.ok()) << config.ToString() << ": " << plan.status();
    ASSERT_TRUE(harness->Precompile({*plan}).ok());
    auto to_int8 = [](const std::vector<float>& v) {
      std::vector<int8_t> out(v.size());
      for (size_t j = 0; j < v.size(); ++j) out[j] = static_cast<int8_t>(v[j]);
      return out;
    };
    const std::vector<int8_t> r = to_int8(skip);
    auto out = harness->Run(*plan,
                            {testing::Bytes(to_int8(x)), testing::Bytes(to_int8(wt)),
                             testing::Bytes(bias), testing::Bytes(scale), testing::Bytes(r)},
                            {skip.size()});
    ASSERT_TRUE(out.ok()) << out.status();
    // The unfused steps: the conv requantized to kValue (no ReLU: it follows the add), then
    // add_int8's value (cpuref::AddInt8) requantized to kSum.
    std::vector<int8_t> value(skip.size());
    for (size_t j = 0; j < value.size(); ++j) {
      const int64_t co = static_cast<int64_t>(j) % s.co, pixel = static_cast<int64_t>(j) / s.co;
      const float acc =
          ConvAt(s, x, wt, pixel / (s.oh() * s.ow()), pixel / s.ow() % s.oh(), pixel % s.ow(), co);
      value[j] = static_cast<int8_t>(
          std::clamp(std::nearbyint(acc * scale[co] + bias[co]), -128.0f, 127.0f));
    }
    const std::vector<int8_t> want =
        cpuref::Quantize(cpuref::AddInt8(value, r, kValue, kResidual, rc.relu), kSum);
    int wrong = 0;
    for (size_t j = 0; j < want.size() && wrong < 5; ++j) {
      const int got = static_cast<int8_t>((*out)[0][j]);
      if (got == want[j]) continue;
      ADD_FAILURE() << plan->kernels[0].spec.name_expression << " [" << j << "]: " << got
                    << ", want " << static_cast<int>(want[j]);
      ++wrong;
    }
  }
}

const std::vector<std::pair<std::string, Shape>>& VggLayers() {
  static const auto* const kLayers = new std::vector<std::pair<std::string, Shape>>{
      {"conv1_2", {128, 224, 224, 64, 64, 3, 1, 1}},
      {"conv2_1", {128, 112, 112, 64, 128, 3, 1, 1}},
      {"conv2_2", {128, 112, 112, 128, 128, 3, 1, 1}},
      {"conv3_1", {128, 56, 56, 128, 256, 3, 1, 1}},
      {"conv3_2", {128, 56, 56, 256, 256, 3, 1, 1}},
      {"conv4_1", {128, 28, 28, 256, 512, 3, 1, 1}},
      {"conv4_2", {128, 28, 28, 512, 512, 3, 1, 1}},
      {"conv5_1", {128, 14, 14, 512, 512, 3, 1, 1}}};
  return *kLayers;
}

// Times the fallback and 8 sampled configs on one layer with the network's epilogue (fp16: bias
// + ReLU into fp16; int8: bias + ReLU + requantize into int8), after checking 32 random outputs
// of each against the CPU, and prints every time and the best.
void TimeLayer(testing::GpuHarness& harness, const std::string& name, const Shape& s, bool int8) {
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNhwcWgmma);
  const std::string in = int8 ? "int8" : "float16";
  const autotvm::Workload w{autotvm::kConv2dNhwcWgmma,
                            autotvm::Json::array({testing::Tensor({s.n, s.h, s.w, s.c}, in),
                                                  testing::Tensor({s.co, s.k, s.k, s.c}, in),
                                                  {1, 1},
                                                  {s.pad, s.pad, s.pad, s.pad},
                                                  {s.dilation, s.dilation},
                                                  int8 ? "int32" : "float16"})};
  const Epilogue epilogue{
      .bias = true,
      .relu = true,
      .output = int8 ? Epilogue::Output::kInt8Requantize : Epilogue::Output::kAccumulator};
  std::vector<autotvm::ConfigEntity> configs = SampledConfigs(s, harness.limits(), 8);
  configs.insert(configs.begin(), *op->FallbackConfig(w));
  std::vector<OpPlan> plans;
  for (const autotvm::ConfigEntity& c : configs) {
    absl::StatusOr<OpPlan> plan = op->Specialize(w, c, harness.limits(), epilogue);
    if (plan.ok()) plans.push_back(*std::move(plan));
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const std::vector<float> x = int8 ? testing::RandomIntFloats(s.n * s.h * s.w * s.c, 3, 1)
                                    : testing::RandomQuarters(s.n * s.h * s.w * s.c, 1);
  const std::vector<float> wt = int8 ? testing::RandomIntFloats(s.co * s.k * s.k * s.c, 3, 2)
                                     : testing::RandomQuarters(s.co * s.k * s.k * s.c, 2);
  const std::vector<float> bias = testing::RandomQuarters(s.co, 3);
  const std::vector<float> scale(s.co, 1.0f / 256);
  auto pack = [&](const std::vector<float>& v) {
    if (!int8) return testing::Bytes(testing::ToHalves(v));
    std::vector<int8_t> q(v.begin(), v.end());
    return testing::Bytes(q);
  };
  const std::vector<std::vector<uint8_t>> inputs = {pack(x), pack(wt), testing::Bytes(bias),
                                                    testing::Bytes(scale)};
  const size_t elements = static_cast<size_t>(s.n * s.oh() * s.ow() * s.co);
  const size_t out_bytes = elements * (int8 ? 1 : 2);
  const double flops = 2.0 * s.n * s.oh() * s.ow() * s.co * s.c * s.k * s.k;
  double best = 1e30;
  std::string best_name;
  for (const OpPlan& plan : plans) {
    const std::string& kernel = plan.kernels[0].spec.name_expression;
    absl::StatusOr<double> ms = harness.MedianMs(plan, inputs, {out_bytes}, 3, 20);
    ASSERT_TRUE(ms.ok()) << kernel << ": " << ms.status();
    auto out = harness.Run(plan, inputs, {out_bytes});
    ASSERT_TRUE(out.ok()) << out.status();
    std::mt19937 rng(5);
    for (int i = 0; i < 32; ++i) {
      const int64_t b = rng() % s.n, y = rng() % s.oh(), xo = rng() % s.ow(), co = rng() % s.co;
      const size_t at = static_cast<size_t>(((b * s.oh() + y) * s.ow() + xo) * s.co + co);
      const float acc = ConvAt(s, x, wt, b, y, xo, co);
      if (int8) {
        float v = acc * scale[co] + bias[co];
        v = v < 0 ? 0 : v;
        ASSERT_EQ(static_cast<int8_t>((*out)[0][at]), std::clamp(std::nearbyint(v), -128.f, 127.f))
            << name << " " << kernel << " at " << at;
      } else {
        float v = acc + bias[co];
        v = v < 0 ? 0 : v;
        uint16_t h;
        std::memcpy(&h, (*out)[0].data() + at * 2, 2);
        ASSERT_EQ(h, testing::FloatToHalf(v)) << name << " " << kernel << " at " << at;
      }
    }
    std::printf("conv2d_wgmma %s %s %s: %.4f ms, %.1f T(FL)OP/s\n", int8 ? "int8" : "fp16",
                name.c_str(), kernel.c_str(), *ms, flops / (*ms * 1e-3) / 1e12);
    if (*ms < best) {
      best = *ms;
      best_name = kernel;
    }
  }
  std::printf("conv2d_wgmma %s %s best: %.4f ms (%.1f T(FL)OP/s) %s\n", int8 ? "int8" : "fp16",
              name.c_str(), best, flops / (best * 1e-3) / 1e12, best_name.c_str());
}

// Not pass/fail speed bounds: per-layer times for docs/benchmarks.md (compare with cuDNN fp16 in
// shared/bench), each config checked on 32 random outputs so a fast wrong kernel cannot report a
// number.
TEST(Conv2dWgmmaGpu, VggLayerThroughputFp16) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  for (const auto& [name, s] : VggLayers()) TimeLayer(*harness, name, s, /*int8=*/false);
}

TEST(Conv2dWgmmaGpu, VggLayerThroughputInt8) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  for (const auto& [name, s] : VggLayers()) TimeLayer(*harness, name, s, /*int8=*/true);
}

}  // namespace
}  // namespace tunejit
