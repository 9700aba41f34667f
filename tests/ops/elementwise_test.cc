// The non-tuned kernels (elementwise.cu): argument checks on the CPU, and each op against the CPU
// reference on the GPU (poisoned outputs, every element compared), including the ResNet ops
// (residual add+relu, clip, average and global average pooling).
#include "ops/elementwise.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/cpu_reference.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::Bytes;
using testing::FromBytes;

class ElementwiseGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    auto h = testing::GpuHarness::Create();
    ASSERT_TRUE(h.ok()) << h.status();
    harness_ = *std::move(h);
  }
  std::vector<uint8_t> Run(const PlannedKernel& k, const std::vector<std::vector<uint8_t>>& in,
                           size_t out_bytes) {
    OpPlan plan;
    plan.kernels.push_back(k);
    auto out = harness_->Run(plan, in, {out_bytes});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? (*out)[0] : std::vector<uint8_t>();
  }
  // MaxPool2dNhwcKernel (float16 or float32) on random NHWC data against the CPU pool.
  void CheckNhwcPool(const Pool2dParams& p, ElementType type, uint32_t seed);
  std::unique_ptr<testing::GpuHarness> harness_;
};

std::vector<int8_t> RandomInt8(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int8_t> v(n);
  for (int8_t& x : v) x = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  return v;
}

TEST_F(ElementwiseGpu, BiasRelu) {
  for (bool relu : {false, true}) {
    std::vector<float> x = testing::RandomFloats(3 * 5 * 49, 1);
    std::vector<float> bias = testing::RandomFloats(5, 2);
    auto k = BiasReluKernel(3, 5, 49, relu);
    ASSERT_TRUE(k.ok());
    EXPECT_EQ(FromBytes<float>(Run(*k, {Bytes(x), Bytes(bias)}, x.size() * 4)),
              cpuref::BiasRelu(x, 5, 49, bias, relu));
  }
}

TEST_F(ElementwiseGpu, MaxPoolFloatAndInt8) {
  // VGG's 2x2/2, an overlapping padded 3x3/2 on an odd size, and a window-sized 7x7.
  std::vector<Pool2dParams> cases = {
      {.n = 2, .c = 3, .h = 16, .w = 16},
      {.n = 3,
       .c = 5,
       .h = 15,
       .w = 9,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1},
      {.n = 1, .c = 7, .h = 7, .w = 7, .kh = 7, .kw = 7, .stride_h = 1, .stride_w = 1},
  };
  for (const Pool2dParams& p : cases) {
    const size_t in_n = p.n * p.c * p.h * p.w, out_n = p.n * p.c * p.OutH() * p.OutW();
    std::vector<float> xf = testing::RandomFloats(in_n, 3);
    auto kf = MaxPool2dKernel(p, ElementType::kFloat32);
    ASSERT_TRUE(kf.ok());
    EXPECT_EQ(FromBytes<float>(Run(*kf, {Bytes(xf)}, out_n * 4)), cpuref::MaxPool2d(p, xf));
    std::vector<int8_t> xq = RandomInt8(in_n, 4);
    auto kq = MaxPool2dKernel(p, ElementType::kInt8);
    ASSERT_TRUE(kq.ok());
    EXPECT_EQ(FromBytes<int8_t>(Run(*kq, {Bytes(xq)}, out_n)), cpuref::MaxPool2d(p, xq));
  }
}

TEST_F(ElementwiseGpu, Softmax) {
  // A warp per row up to 1024 values (attention's 197 tokens, rows not filling the last block),
  // a block per row past it.
  for (auto [rows, cols] :
       {std::pair<int, int>{16, 1000}, {3, 7}, {1001, 197}, {2, 1024}, {1, 1025}, {1, 4097}}) {
    std::vector<float> x = testing::RandomFloats(rows * cols, 5);
    for (float& v : x) v *= 20;  // wide range: the max subtraction matters
    auto k = SoftmaxKernel(rows, cols);
    ASSERT_TRUE(k.ok());
    EXPECT_LT(cpuref::RelativeError(FromBytes<float>(Run(*k, {Bytes(x)}, x.size() * 4)),
                                    cpuref::Softmax(rows, cols, x)),
              1e-5);
  }
}

TEST_F(ElementwiseGpu, QuantizeDequantizeRequantize) {
  // Values on and near rounding ties, and beyond the int8 range.
  std::vector<float> x = testing::RandomFloats(4000, 6);
  for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] * 80 + (i % 4 == 0 ? 0.25f : 0.0f);
  auto q = QuantizeKernel(x.size(), 0.5f);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(FromBytes<int8_t>(Run(*q, {Bytes(x)}, x.size())), cpuref::Quantize(x, 0.5f));

  const int64_t channels = 6, inner = 25, total = 2 * channels * inner;
  std::vector<float> scale = {0.5f, 0.25f, 1.5f, 0.125f, 3.0f, 0.1f};
  std::vector<int8_t> xq = RandomInt8(total, 7);
  auto dq8 = DequantizeKernel(ElementType::kInt8, total, channels, inner);
  ASSERT_TRUE(dq8.ok());
  EXPECT_EQ(FromBytes<float>(Run(*dq8, {Bytes(xq), Bytes(scale)}, total * 4)),
            cpuref::Dequantize(xq, channels, inner, scale));

  std::vector<int32_t> xi(total);
  std::mt19937 rng(8);
  for (int32_t& v : xi) v = static_cast<int32_t>(rng() % 4001) - 2000;
  auto dq32 = DequantizeKernel(ElementType::kInt32, total, 1, 1);  // per-tensor scale
  ASSERT_TRUE(dq32.ok());
  EXPECT_EQ(FromBytes<float>(Run(*dq32, {Bytes(xi), Bytes(scale)}, total * 4)),
            cpuref::Dequantize(xi, 1, 1, scale));

  auto rq = RequantizeKernel(total, channels, inner);
  ASSERT_TRUE(rq.ok());
  EXPECT_EQ(FromBytes<int8_t>(Run(*rq, {Bytes(xi), Bytes(scale)}, total)),
            cpuref::Requantize(xi, channels, inner, scale));
}

// The residual add (+relu): one float add per element, so bit-exact with the CPU. A size that
// is not a multiple of the block exercises the grid-stride tail.
TEST_F(ElementwiseGpu, AddRelu) {
  for (bool relu : {false, true}) {
    std::vector<float> x = testing::RandomFloats(3 * 7 * 29, 11);
    std::vector<float> r = testing::RandomFloats(x.size(), 12);
    auto k = AddReluKernel(static_cast<int64_t>(x.size()), relu);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ(FromBytes<float>(Run(*k, {Bytes(x), Bytes(r)}, x.size() * 4)),
              cpuref::AddRelu(x, r, relu));
  }
}

// The int8 residual add against the CPU reference, every element exactly: int8 operands over
// the whole range with scales that are not powers of two (the products round), sums past the
// output's int8 range (saturation), relu or not, int8 or float32 out. A size that is not a
// multiple of the block exercises the grid-stride tail.
TEST_F(ElementwiseGpu, AddInt8MatchesTheCpuReferenceExactly) {
  const std::vector<int8_t> x = RandomInt8(3 * 7 * 29, 13);
  const std::vector<int8_t> r = RandomInt8(x.size(), 14);
  const float scale_x = 0.037f, scale_r = 0.021f, scale_out = 0.043f;
  for (bool relu : {false, true}) {
    const std::vector<float> sum = cpuref::AddInt8(x, r, scale_x, scale_r, relu);
    auto q = AddInt8Kernel(static_cast<int64_t>(x.size()), relu, ElementType::kInt8, scale_x,
                           scale_r, scale_out);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(FromBytes<int8_t>(Run(*q, {Bytes(x), Bytes(r)}, x.size())),
              cpuref::Quantize(sum, scale_out))
        << "relu " << relu;
    auto f = AddInt8Kernel(static_cast<int64_t>(x.size()), relu, ElementType::kFloat32, scale_x,
                           scale_r, 1.0f);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(FromBytes<float>(Run(*f, {Bytes(x), Bytes(r)}, x.size() * 4)), sum)
        << "relu " << relu;
  }
}

TEST_F(ElementwiseGpu, Clip) {
  std::vector<float> x = testing::RandomFloats(1001, 13);
  for (float& v : x) v *= 8;
  const float inf = std::numeric_limits<float>::infinity();
  for (auto [lo, hi] : {std::pair<float, float>{0, 6}, {-0.5f, 0.5f}, {0, inf}, {-inf, inf}}) {
    auto k = ClipKernel(static_cast<int64_t>(x.size()), lo, hi);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ(FromBytes<float>(Run(*k, {Bytes(x)}, x.size() * 4)), cpuref::Clip(x, lo, hi))
        << lo << " " << hi;
  }
}

// Average pooling: the kernel sums in float, the reference in double, so results agree to a few
// float roundings (relative 1e-6); a wrong divisor or window is off by far more.
TEST_F(ElementwiseGpu, AvgPoolPaddingIncludedOrNot) {
  std::vector<Pool2dParams> cases = {
      {.n = 2,
       .c = 3,
       .h = 15,
       .w = 9,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1},
      {.n = 1,
       .c = 5,
       .h = 8,
       .w = 8,
       .kh = 3,
       .kw = 3,
       .stride_h = 1,
       .stride_w = 1,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1},
      {.n = 1,
       .c = 4,
       .h = 7,
       .w = 6,
       .kh = 2,
       .kw = 3,
       .stride_h = 1,
       .stride_w = 2,
       .pad_top = 0,
       .pad_left = 2,
       .pad_bottom = 1,
       .pad_right = 0},
  };
  for (Pool2dParams p : cases) {
    for (bool include : {false, true}) {
      p.count_include_pad = include;
      const size_t in_n = p.n * p.c * p.h * p.w, out_n = p.n * p.c * p.OutH() * p.OutW();
      std::vector<float> x = testing::RandomFloats(in_n, 14);
      auto k = AvgPool2dKernel(p);
      ASSERT_TRUE(k.ok()) << k.status();
      EXPECT_LT(cpuref::RelativeError(FromBytes<float>(Run(*k, {Bytes(x)}, out_n * 4)),
                                      cpuref::AvgPool2d(p, x)),
                1e-6)
          << p.h << "x" << p.w << " include_pad " << include;
    }
  }
}

// One warp per plane: planes of 1 (a lane only), 49 (ResNet-50's 7x7), and 3000 elements; more
// planes than one block's 8 warps.
TEST_F(ElementwiseGpu, GlobalAvgPool) {
  for (auto [planes, inner] : {std::pair<int64_t, int64_t>{37, 1}, {2 * 64, 49}, {9, 3000}}) {
    std::vector<float> x = testing::RandomFloats(planes * inner, 15);
    auto k = GlobalAvgPoolKernel(planes, inner);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_LT(cpuref::RelativeError(FromBytes<float>(Run(*k, {Bytes(x)}, planes * 4)),
                                    cpuref::GlobalAvgPool(planes, inner, x)),
              1e-5)
        << planes << " x " << inner;
  }
}

// The tuner's device-side check: the sums must match the CPU's over the same data.
TEST_F(ElementwiseGpu, CompareToReference) {
  const int64_t total = 100003;  // not a multiple of the block: the grid-stride tail
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> want(total), got(total);
  for (int64_t i = 0; i < total; ++i) {
    want[i] = d(rng);
    got[i] = want[i] + 1e-3f * d(rng);
  }
  auto kf = CompareKernel(total, "float32");
  ASSERT_TRUE(kf.ok()) << kf.status();
  OpPlan plan;
  plan.kernels.push_back(*kf);
  auto sums = harness_->Run(plan, {Bytes(got), Bytes(want)}, {3 * sizeof(double)}, /*fill=*/0);
  ASSERT_TRUE(sums.ok()) << sums.status();
  std::vector<double> s = FromBytes<double>((*sums)[0]);
  EXPECT_NEAR(std::sqrt(s[0] / s[1]), cpuref::RelativeError(got, want), 1e-9);
  EXPECT_EQ(s[2], 0);
  got[total - 1] = std::numeric_limits<float>::quiet_NaN();
  sums = harness_->Run(plan, {Bytes(got), Bytes(want)}, {3 * sizeof(double)}, 0);
  ASSERT_TRUE(sums.ok());
  EXPECT_EQ(FromBytes<double>((*sums)[0])[2], 1);  // the NaN is counted

  std::vector<int32_t> wi(total), gi(total);
  for (int64_t i = 0; i < total; ++i) wi[i] = gi[i] = static_cast<int32_t>(rng() % 2001) - 1000;
  gi[0] += 1;
  gi[total / 2] -= 7;
  auto ki = CompareKernel(total, "int32");
  ASSERT_TRUE(ki.ok());
  plan.kernels = {*ki};
  sums = harness_->Run(plan, {Bytes(gi), Bytes(wi)}, {3 * sizeof(double)}, 0);
  ASSERT_TRUE(sums.ok());
  s = FromBytes<double>((*sums)[0]);
  EXPECT_EQ(s[2], 2);       // two elements differ
  EXPECT_EQ(s[0], 1 + 49);  // squared differences

  // An fp16 output against the float32 reference: the halves' exact values are compared.
  std::vector<uint16_t> gh(total);
  std::vector<double> gh_values(total);
  for (int64_t i = 0; i < total; ++i) {
    gh[i] = FloatToHalf(want[i]);
    gh_values[i] = HalfToFloat(gh[i]);
  }
  auto kh = CompareKernel(total, "float16");
  ASSERT_TRUE(kh.ok()) << kh.status();
  plan.kernels = {*kh};
  sums = harness_->Run(plan, {Bytes(gh), Bytes(want)}, {3 * sizeof(double)}, 0);
  ASSERT_TRUE(sums.ok()) << sums.status();
  s = FromBytes<double>((*sums)[0]);
  double diff = 0;
  for (int64_t i = 0; i < total; ++i) diff += (gh_values[i] - want[i]) * (gh_values[i] - want[i]);
  EXPECT_NEAR(s[0], diff, 1e-9 * diff);
  EXPECT_GT(s[0], 0);  // fp16 rounding is not free
  EXPECT_EQ(s[2], 0);

  // Requantized int8 against the reference's int8 (the tuner's int8 tensor-core measurement).
  std::vector<int8_t> w8(total), g8(total);
  for (int64_t i = 0; i < total; ++i) w8[i] = g8[i] = static_cast<int8_t>(rng() % 255 - 127);
  g8[3] = static_cast<int8_t>(w8[3] == 127 ? 126 : w8[3] + 1);
  auto k8 = CompareKernel(total, "int8");
  ASSERT_TRUE(k8.ok()) << k8.status();
  plan.kernels = {*k8};
  sums = harness_->Run(plan, {Bytes(g8), Bytes(w8)}, {3 * sizeof(double)}, 0);
  ASSERT_TRUE(sums.ok()) << sums.status();
  s = FromBytes<double>((*sums)[0]);
  EXPECT_EQ(s[2], 1);  // one element differs, by one
  EXPECT_EQ(s[0], 1);
  EXPECT_FALSE(CompareKernel(total, "bfloat16").ok());
}

// fp16 path helpers: NCHW <-> NHWC index maps and host fp16 rounding (bit-exact with the GPU).
int64_t NchwIndex(int64_t n, int64_t c, int64_t p, int64_t channels, int64_t hw) {
  return (n * channels + c) * hw + p;
}
int64_t NhwcIndex(int64_t n, int64_t c, int64_t p, int64_t channels, int64_t hw) {
  return (n * hw + p) * channels + c;
}

// A pool's NHWC output `got` equals the NCHW reference `want`, element for element.
template <typename T>
void ExpectNhwcEqualsNchw(const std::vector<T>& got, const std::vector<T>& want,
                          const Pool2dParams& p) {
  const int64_t ohw = p.OutH() * p.OutW();
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t ch = 0; ch < p.c; ++ch) {
      for (int64_t q = 0; q < ohw; ++q) {
        ASSERT_EQ(got[NhwcIndex(i, ch, q, p.c, ohw)], want[NchwIndex(i, ch, q, p.c, ohw)])
            << "image " << i << " channel " << ch << " pixel " << q;
      }
    }
  }
}

TEST(ConvertKernel, RejectsWhatItCannotConvert) {
  const ConvertParams ok{.n = 2, .c = 3, .hw = 5};
  EXPECT_TRUE(ConvertKernel(ok).ok());
  ConvertParams same = ok;
  same.to = ElementType::kFloat32;
  EXPECT_EQ(ConvertKernel(same).status().code(), absl::StatusCode::kInvalidArgument);
  same.to_nhwc = true;  // a transpose alone is work
  EXPECT_TRUE(ConvertKernel(same).ok());
  ConvertParams int8 = ok;
  int8.from = ElementType::kInt8;
  EXPECT_FALSE(ConvertKernel(int8).ok());  // int8 -> float16 is not a layout change
  int8.to = ElementType::kInt8;
  EXPECT_FALSE(ConvertKernel(int8).ok());  // nothing to do
  int8.to_nhwc = true;
  EXPECT_TRUE(ConvertKernel(int8).ok());
  ConvertParams empty = ok;
  empty.hw = 0;
  EXPECT_FALSE(ConvertKernel(empty).ok());
}

TEST(MaxPool2dNhwcKernel, NeedsWhole16ByteVectorsOfChannels) {
  using T = ElementType;
  EXPECT_EQ(MaxPool2dNhwcKernel({.n = 1, .c = 12, .h = 4, .w = 4}, T::kFloat16).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(MaxPool2dNhwcKernel({.n = 1, .c = 16, .h = 4, .w = 4}, T::kFloat16).ok());
  EXPECT_FALSE(MaxPool2dNhwcKernel({.n = 1, .c = 16, .h = 1, .w = 4}, T::kFloat16).ok());
  EXPECT_EQ(MaxPool2dNhwcKernel({.n = 1, .c = 24, .h = 4, .w = 4}, T::kInt8).status().code(),
            absl::StatusCode::kUnimplemented);  // int8: 16 channels per vector
  EXPECT_TRUE(MaxPool2dNhwcKernel({.n = 1, .c = 32, .h = 4, .w = 4}, T::kInt8).ok());
  // float32 (a pooled conv's float32 output): 4 channels per vector; no int32 pool.
  EXPECT_EQ(MaxPool2dNhwcKernel({.n = 1, .c = 6, .h = 4, .w = 4}, T::kFloat32).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_TRUE(MaxPool2dNhwcKernel({.n = 1, .c = 12, .h = 4, .w = 4}, T::kFloat32).ok());
  EXPECT_FALSE(MaxPool2dNhwcKernel({.n = 1, .c = 32, .h = 4, .w = 4}, T::kInt32).ok());
}

// Without a GPU: the fp16 path's kernels compile with NVRTC (every name expression the executor
// can ask for).
TEST(Fp16PathKernels, CompileWithNvrtc) {
  using T = ElementType;
  std::vector<absl::StatusOr<PlannedKernel>> kernels = {
      MaxPool2dNhwcKernel({.n = 1, .c = 16, .h = 4, .w = 4}, T::kFloat16),
      MaxPool2dNhwcKernel({.n = 1, .c = 16, .h = 4, .w = 4}, T::kInt8),
      MaxPool2dNhwcKernel({.n = 1, .c = 16, .h = 4, .w = 4}, T::kFloat32),
      ConvertKernel({.n = 2, .c = 16, .hw = 9, .from = T::kInt8, .to = T::kInt8, .to_nhwc = true})};
  for (bool from_nhwc : {false, true}) {
    for (T from : {T::kFloat32, T::kFloat16}) {
      for (T to : {T::kFloat32, T::kFloat16}) {
        if (from == to && !from_nhwc) continue;
        kernels.push_back(ConvertKernel(
            {.n = 2, .c = 8, .hw = 9, .from = from, .to = to, .from_nhwc = from_nhwc}));
      }
    }
  }
  KernelCompiler compiler(nullptr);
  for (const absl::StatusOr<PlannedKernel>& k : kernels) {
    ASSERT_TRUE(k.ok()) << k.status();
    absl::StatusOr<CompiledKernel> compiled = compiler.Compile(k->spec, GpuArch{9, 0, false});
    EXPECT_TRUE(compiled.ok()) << k->spec.name_expression << ": " << compiled.status();
  }
}

TEST_F(ElementwiseGpu, ConvertTypesAndLayouts) {
  // Sizes off the 32 x 32 tiles in both directions.
  const int64_t n = 3, c = 40, hw = 7 * 9, total = n * c * hw;
  std::vector<float> x = testing::RandomFloats(total, 11);
  for (float& v : x) v *= 100;  // past fp16's integer precision: rounding shows
  std::vector<uint16_t> nhwc_half(total), nchw_half(total);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) {
        const uint16_t h = FloatToHalf(x[NchwIndex(i, ch, p, c, hw)]);
        nhwc_half[NhwcIndex(i, ch, p, c, hw)] = h;
        nchw_half[NchwIndex(i, ch, p, c, hw)] = h;
      }
    }
  }
  auto run = [&](ElementType from, bool from_nhwc, ElementType to, bool to_nhwc,
                 const std::vector<uint8_t>& in, size_t out_bytes) {
    auto k = ConvertKernel({.n = n,
                            .c = c,
                            .hw = hw,
                            .from = from,
                            .to = to,
                            .from_nhwc = from_nhwc,
                            .to_nhwc = to_nhwc});
    EXPECT_TRUE(k.ok()) << k.status();
    return k.ok() ? Run(*k, {in}, out_bytes) : std::vector<uint8_t>();
  };
  using T = ElementType;
  // The graph's edge in: float32 NCHW -> fp16 NHWC.
  EXPECT_EQ(FromBytes<uint16_t>(run(T::kFloat32, false, T::kFloat16, true, Bytes(x), total * 2)),
            nhwc_half);
  // Before a flatten: fp16 NHWC -> fp16 NCHW (a pure transpose).
  EXPECT_EQ(
      FromBytes<uint16_t>(run(T::kFloat16, true, T::kFloat16, false, Bytes(nhwc_half), total * 2)),
      nchw_half);
  // The edge out: fp16 NHWC -> float32 NCHW, exact.
  std::vector<float> back(total);
  for (int64_t i = 0; i < total; ++i) back[i] = HalfToFloat(nchw_half[i]);
  EXPECT_EQ(
      FromBytes<float>(run(T::kFloat16, true, T::kFloat32, false, Bytes(nhwc_half), total * 4)),
      back);
  // Same layout, type only.
  EXPECT_EQ(FromBytes<uint16_t>(run(T::kFloat32, false, T::kFloat16, false, Bytes(x), total * 2)),
            nchw_half);
}

// The int8 tensor-core path's pieces: NCHW <-> NHWC int8 transposes (exact) and NHWC int8 max
// pooling against the NCHW reference.
TEST_F(ElementwiseGpu, Int8NhwcTransposesAndPool) {
  const Pool2dParams p{.n = 2,
                       .c = 32,
                       .h = 9,
                       .w = 7,
                       .kh = 3,
                       .kw = 3,
                       .stride_h = 2,
                       .stride_w = 2,
                       .pad_top = 1,
                       .pad_left = 1,
                       .pad_bottom = 1,
                       .pad_right = 1};
  const int64_t hw = p.h * p.w;
  const std::vector<int8_t> nchw = RandomInt8(p.n * p.c * hw, 14);
  std::vector<int8_t> nhwc(nchw.size());
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t ch = 0; ch < p.c; ++ch) {
      for (int64_t q = 0; q < hw; ++q) {
        nhwc[NhwcIndex(i, ch, q, p.c, hw)] = nchw[NchwIndex(i, ch, q, p.c, hw)];
      }
    }
  }
  using T = ElementType;
  auto to_nhwc = ConvertKernel(
      {.n = p.n, .c = p.c, .hw = hw, .from = T::kInt8, .to = T::kInt8, .to_nhwc = true});
  ASSERT_TRUE(to_nhwc.ok()) << to_nhwc.status();
  EXPECT_EQ(FromBytes<int8_t>(Run(*to_nhwc, {Bytes(nchw)}, nchw.size())), nhwc);
  auto to_nchw = ConvertKernel(
      {.n = p.n, .c = p.c, .hw = hw, .from = T::kInt8, .to = T::kInt8, .from_nhwc = true});
  ASSERT_TRUE(to_nchw.ok()) << to_nchw.status();
  EXPECT_EQ(FromBytes<int8_t>(Run(*to_nchw, {Bytes(nhwc)}, nhwc.size())), nchw);
  const std::vector<int8_t> want = cpuref::MaxPool2d(p, nchw);
  auto pool = MaxPool2dNhwcKernel(p, T::kInt8);
  ASSERT_TRUE(pool.ok()) << pool.status();
  const std::vector<int8_t> got = FromBytes<int8_t>(Run(*pool, {Bytes(nhwc)}, want.size()));
  ExpectNhwcEqualsNchw(got, want, p);
}

// MaxPool2dNhwcKernel (float16 or float32) on random NHWC data against the NCHW CPU pool of the
// same values, element for element.
void ElementwiseGpu::CheckNhwcPool(const Pool2dParams& p, ElementType type, uint32_t seed) {
  const bool f16 = type == ElementType::kFloat16;
  const int64_t hw = p.h * p.w;
  std::vector<float> x = testing::RandomFloats(p.n * p.c * hw, seed);
  std::vector<float> nhwc(x.size());
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t ch = 0; ch < p.c; ++ch) {
      for (int64_t q = 0; q < hw; ++q) {
        float& v = x[NchwIndex(i, ch, q, p.c, hw)];
        if (f16) v = HalfToFloat(FloatToHalf(v));  // the reference pools the same values
        nhwc[NhwcIndex(i, ch, q, p.c, hw)] = v;
      }
    }
  }
  const std::vector<float> want = cpuref::MaxPool2d(p, x);
  auto k = MaxPool2dNhwcKernel(p, type);
  ASSERT_TRUE(k.ok()) << k.status();
  std::vector<float> got;
  if (f16) {
    std::vector<uint16_t> halves(nhwc.size());
    for (size_t i = 0; i < nhwc.size(); ++i) halves[i] = FloatToHalf(nhwc[i]);
    for (uint16_t h : FromBytes<uint16_t>(Run(*k, {Bytes(halves)}, want.size() * 2))) {
      got.push_back(HalfToFloat(h));
    }
  } else {
    got = FromBytes<float>(Run(*k, {Bytes(nhwc)}, want.size() * 4));
  }
  ExpectNhwcEqualsNchw(got, want, p);
}

TEST_F(ElementwiseGpu, MaxPoolNhwcHalfMatchesTheNchwReference) {
  std::vector<Pool2dParams> cases = {
      {.n = 2, .c = 16, .h = 16, .w = 16},
      {.n = 3,
       .c = 8,
       .h = 15,
       .w = 9,
       .kh = 3,
       .kw = 3,
       .pad_top = 1,
       .pad_left = 1,
       .pad_bottom = 1,
       .pad_right = 1},
  };
  for (const Pool2dParams& p : cases) CheckNhwcPool(p, ElementType::kFloat16, 12);
}

// float32 NHWC (the pool after a pooled conv's float32 output): 4 channels per vector, padding,
// windows that overlap.
TEST_F(ElementwiseGpu, MaxPoolNhwcFloatMatchesTheNchwReference) {
  CheckNhwcPool({.n = 2, .c = 12, .h = 14, .w = 14}, ElementType::kFloat32, 13);
  CheckNhwcPool({.n = 1, .c = 4, .h = 7, .w = 9, .kh = 3, .kw = 3, .pad_top = 1, .pad_left = 1},
                ElementType::kFloat32, 14);
}

}  // namespace
}  // namespace tunejit
