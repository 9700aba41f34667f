// conv2d_nchw_winograd.cuda on the CPU (label cpu): the exact integer algebra of
// kernel_sources/winograd_matrices.cuh against direct convolution (the numbers the GPU kernels
// use), the hazard of TVM's truncated int8 matrices, the seed log's records (specialize, launch
// shapes of spec 5.5, NVRTC compile for sm_90), validity rejections and the fallback config.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "kernel_sources/winograd_matrices.cuh"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "ops/winograd_plan.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

constexpr char kTask[] = "conv2d_nchw_winograd.cuda";

// A 3x3 int8 filter and an alpha x alpha int8 input tile.
struct Tile {
  int64_t g[3][3];
  int64_t d[6][6];
};

Tile RandomTile(std::mt19937& rng, int alpha) {
  std::uniform_int_distribution<int> dist(-128, 127);
  Tile t{};
  for (auto& row : t.g)
    for (int64_t& v : row) v = dist(rng);
  for (int a = 0; a < alpha; ++a)
    for (int b = 0; b < alpha; ++b) t.d[a][b] = dist(rng);
  return t;
}

int64_t Direct(const Tile& t, int i, int j) {
  int64_t s = 0;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) s += t.d[i + a][j + b] * t.g[a][b];
  return s;
}

// Y = A^T [(G g G^T) . (B^T d B)] A in exact int64 arithmetic with the given integer matrices.
template <typename GF, typename BF, typename AF>
std::vector<int64_t> WinogradTile(const Tile& t, int m, GF G, BF B, AF A) {
  const int alpha = m + 2;
  int64_t u[6][6] = {}, v[6][6] = {}, mm[6][6] = {};
  for (int e = 0; e < alpha; ++e)
    for (int n = 0; n < alpha; ++n) {
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) u[e][n] += G(m, e, i) * t.g[i][j] * G(m, n, j);
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) v[e][n] += B(m, a, e) * t.d[a][b] * B(m, b, n);
      mm[e][n] = u[e][n] * v[e][n];
    }
  std::vector<int64_t> y(m * m, 0);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j)
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) y[i * m + j] += A(m, a, i) * mm[a][b] * A(m, b, j);
  return y;
}

int64_t IntG(int m, int i, int j) { return WinoIntG(m, i, j); }
int64_t IntB(int m, int i, int j) { return WinoIntB(m, i, j); }
int64_t IntA(int m, int i, int j) { return WinoIntA(m, i, j); }
// TVM's int8 path: numpy astype(int32) of the rational matrices, i.e. truncation toward zero.
int64_t TruncG(int m, int i, int j) {
  return static_cast<int64_t>(std::trunc(WinoFloatG(m, i, j)));
}
int64_t TruncB(int m, int i, int j) {
  return static_cast<int64_t>(std::trunc(WinoFloatB(m, i, j)));
}
int64_t TruncA(int m, int i, int j) {
  return static_cast<int64_t>(std::trunc(WinoFloatA(m, i, j)));
}

class WinogradAlgebra : public ::testing::TestWithParam<int> {};

// The scaled integer transform gives exactly c^2 times direct convolution (c^2 = 4 for F(2,3),
// 900 for F(4,3)); in particular Y' divides exactly by 4.
TEST_P(WinogradAlgebra, IntegerTransformIsExactMultipleOfDirect) {
  const int m = GetParam();
  const int64_t c2 = m == 2 ? 4 : 900;
  std::mt19937 rng(7 + m);
  for (int trial = 0; trial < 2000; ++trial) {
    Tile t = RandomTile(rng, m + 2);
    if (trial == 0) {  // the extremes
      for (auto& row : t.g)
        for (int64_t& v : row) v = -128;
      for (auto& row : t.d)
        for (int64_t& v : row) v = -128;
    }
    const std::vector<int64_t> y = WinogradTile(t, m, IntG, IntB, IntA);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < m; ++j) {
        ASSERT_EQ(y[i * m + j] % 4, 0) << "trial " << trial;
        ASSERT_EQ(y[i * m + j], c2 * Direct(t, i, j))
            << "trial " << trial << " (" << i << "," << j << ")";
      }
  }
}

// The kernels' modulo-2^32 pipeline (unsigned wrap-around, multiply by the odd inverse, shift by
// 2) recovers the channel sum exactly up to the documented bound, where int64 products overflow
// int32 many times over.
TEST_P(WinogradAlgebra, Modulo32RecoveryIsExactUpToChannelBound) {
  const int m = GetParam();
  std::mt19937 rng(11 + m);
  for (int64_t channels : {int64_t{1}, int64_t{64}, kWinogradInt8MaxChannels}) {
    for (int sign : {1, -1}) {
      uint32_t acc[16] = {};
      int64_t direct[16] = {};
      for (int64_t c = 0; c < channels; ++c) {
        Tile t = RandomTile(rng, m + 2);
        if (channels == kWinogradInt8MaxChannels) {  // worst case: every product is +-128*128
          for (auto& row : t.g)
            for (int64_t& v : row) v = -128;
          for (auto& row : t.d)
            for (int64_t& v : row) v = sign * -128;
        }
        const std::vector<int64_t> y = WinogradTile(t, m, IntG, IntB, IntA);
        for (int k = 0; k < m * m; ++k) {
          acc[k] += static_cast<uint32_t>(y[k]);  // mod 2^32, as the kernels do
          direct[k] += Direct(t, k / m, k % m);
        }
      }
      for (int k = 0; k < m * m; ++k) {
        const int32_t got = static_cast<int32_t>(acc[k] * WinoIntInverseOdd(m)) >> kWinoIntShift;
        ASSERT_EQ(got, direct[k]) << "channels " << channels << " element " << k;
      }
    }
  }
  EXPECT_EQ(kWinogradInt8MaxChannels, 3640);
  EXPECT_LT(int64_t{128} * 128 * 9 * kWinogradInt8MaxChannels, int64_t{1} << 29);
  EXPECT_GE(int64_t{128} * 128 * 9 * (kWinogradInt8MaxChannels + 1), int64_t{1} << 29);
}

// TVM computes int8 winograd with truncated matrices (spec 5.8): the results are wrong.
TEST_P(WinogradAlgebra, TvmTruncatedMatricesGiveWrongResults) {
  const int m = GetParam();
  std::mt19937 rng(13 + m);
  int wrong_tiles = 0;
  for (int trial = 0; trial < 100; ++trial) {
    const Tile t = RandomTile(rng, m + 2);
    const std::vector<int64_t> y = WinogradTile(t, m, TruncG, TruncB, TruncA);
    bool wrong = false;
    for (int k = 0; k < m * m; ++k) wrong |= y[k] != Direct(t, k / m, k % m);
    wrong_tiles += wrong;
  }
  EXPECT_GE(wrong_tiles, 99);
  // The cause: G's +-1/2 (F(2,3)) and 1/3, 1/15 (F(4,3)) rows truncate to zero.
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(TruncG(m, 1, j), 0);
    EXPECT_EQ(TruncG(m, 2, j), 0);
  }
}

// The float matrices are TVM's: the exact rationals (spec 5.3) rounded to float32, and (in
// double) they reproduce direct convolution.
TEST_P(WinogradAlgebra, FloatMatricesAreTvmRationals) {
  const int m = GetParam();
  if (m == 4) {
    EXPECT_EQ(WinoFloatG(4, 1, 0), static_cast<float>(-1.0 / 3.0));
    EXPECT_EQ(WinoFloatG(4, 3, 0), static_cast<float>(-16.0 / 15.0));
    EXPECT_EQ(WinoFloatG(4, 4, 1), static_cast<float>(-2.0 / 15.0));
    EXPECT_EQ(WinoFloatB(4, 2, 1), -2.5f);
    EXPECT_EQ(WinoFloatA(4, 3, 3), 0.125f);
  } else {
    EXPECT_EQ(WinoFloatG(2, 1, 1), -0.5f);
    EXPECT_EQ(WinoFloatB(2, 2, 0), -1.0f);
  }
  std::mt19937 rng(17 + m);
  const Tile t = RandomTile(rng, m + 2);
  auto fg = [](int mm, int i, int j) { return static_cast<double>(WinoFloatG(mm, i, j)); };
  auto fb = [](int mm, int i, int j) { return static_cast<double>(WinoFloatB(mm, i, j)); };
  auto fa = [](int mm, int i, int j) { return static_cast<double>(WinoFloatA(mm, i, j)); };
  const int alpha = m + 2;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < m; ++j) {
      double y = 0;
      for (int a = 0; a < alpha; ++a)
        for (int b = 0; b < alpha; ++b) {
          double u = 0, v = 0;
          for (int p = 0; p < 3; ++p)
            for (int q = 0; q < 3; ++q) u += fg(m, a, p) * t.g[p][q] * fg(m, b, q);
          for (int p = 0; p < alpha; ++p)
            for (int q = 0; q < alpha; ++q) v += fb(m, p, a) * t.d[p][q] * fb(m, q, b);
          y += fa(m, a, i) * u * v * fa(m, b, j);
        }
      const double want = static_cast<double>(Direct(t, i, j));
      EXPECT_NEAR(y, want, 1e-5 * std::max(1.0, std::abs(want)));
    }
}

INSTANTIATE_TEST_SUITE_P(M, WinogradAlgebra, ::testing::Values(2, 4));

autotvm::Conv2dParams Conv(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, bool int8,
                           int kernel = 3, int stride = 1, int pad = 1) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = ci, p.h = h, p.w = w, p.co = co, p.kh = kernel, p.kw = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.data_dtype = p.kernel_dtype = int8 ? "int8" : "float32";
  p.out_dtype = int8 ? "int32" : "float32";
  return p;
}

autotvm::ConfigEntity WinoConfig(std::vector<int64_t> ty, std::vector<int64_t> tx, int64_t rc,
                                 int64_t unroll = 0) {
  autotvm::ConfigEntity c;
  c.knobs = {SplitKnob("tile_b", {-1, 1, 1, 1}),
             SplitKnob("tile_y", ty),
             SplitKnob("tile_x", tx),
             SplitKnob("tile_rc", {-1, rc}),
             OtherKnob("auto_unroll_max_step", unroll),
             OtherKnob("unroll_explicit", 0)};
  return c;
}

absl::StatusOr<OpPlan> Plan(const autotvm::Conv2dParams& p, const autotvm::ConfigEntity& c,
                            Epilogue e = {}) {
  return Conv2dNchwWinogradTemplate()->Specialize(autotvm::MakeConv2dWorkload(kTask, p), c,
                                                  DeviceLimits::ForArch(GpuArch{9, 0, false}), e);
}

const PlannedKernel& Bgemm(const OpPlan& plan) { return plan.kernels.at(2); }

TEST(WinogradTemplate, IsRegistered) {
  EXPECT_EQ(FindOpTemplate(kTask), Conv2dNchwWinogradTemplate());
}

TEST(WinogradTemplate, SeedLaunchShapesFollowSpec55) {
  const std::vector<testing::LogRecord> records =
      testing::ReadLogRecords(testing::RepoData("seed-vgg16-v100.log"), {kTask});
  ASSERT_EQ(records.size(), 9u);
  for (const testing::LogRecord& r : records) {
    absl::StatusOr<OpPlan> plan = Conv2dNchwWinogradTemplate()->Specialize(
        r.workload, r.config, DeviceLimits::ForArch(GpuArch{9, 0, false}), Epilogue{});
    ASSERT_TRUE(plan.ok()) << plan.status() << " " << r.config.ToString();
    ASSERT_EQ(plan->kernels.size(), 4u);
    EXPECT_EQ(plan->kernels[0].phase, PlannedKernel::Phase::kPrepare);
    for (int k = 1; k < 4; ++k) EXPECT_EQ(plan->kernels[k].phase, PlannedKernel::Phase::kRun);
    EXPECT_EQ(plan->workspace_persistent, (std::vector<bool>{true, false, false}));
    // Independent of the template: grid (P / Bx, CO / By, alpha^2), block (Tx, Ty).
    absl::StatusOr<autotvm::Conv2dParams> p = autotvm::ParseConv2dWorkload(r.workload);
    ASSERT_TRUE(p.ok());
    const int64_t m = p->h % 8 == 0 ? 4 : 2;
    const int64_t tiles = p->n * ((p->h + m - 1) / m) * ((p->w + m - 1) / m);
    absl::StatusOr<std::vector<int64_t>> ty = r.config.Split("tile_y");
    absl::StatusOr<std::vector<int64_t>> tx = r.config.Split("tile_x");
    ASSERT_TRUE(ty.ok() && tx.ok());
    const LaunchShape& s = Bgemm(*plan).shape;
    EXPECT_EQ(s.grid[0], tiles / ((*tx)[1] * (*tx)[2] * (*tx)[3]));
    EXPECT_EQ(s.grid[1], p->co / ((*ty)[1] * (*ty)[2] * (*ty)[3]));
    EXPECT_EQ(s.grid[2], (m + 2) * (m + 2));
    EXPECT_EQ(s.block[0], (*tx)[2]);
    EXPECT_EQ(s.block[1], (*ty)[2]);
    EXPECT_EQ(s.block[2], 1u);
    EXPECT_EQ(plan->workspace_bytes[0], (m + 2) * (m + 2) * p->ci * p->co * 4);
  }
  // The two launch shapes the spec spells out.
  absl::StatusOr<OpPlan> fp32 = Conv2dNchwWinogradTemplate()->Specialize(
      records[8].workload, records[8].config, DeviceLimits::ForArch(GpuArch{9, 0, false}), {});
  ASSERT_TRUE(fp32.ok());
  EXPECT_EQ(Bgemm(*fp32).shape, (LaunchShape{{784, 1, 36}, {32, 8, 1}, 0}));
  absl::StatusOr<OpPlan> int8 = Conv2dNchwWinogradTemplate()->Specialize(
      records[0].workload, records[0].config, DeviceLimits::ForArch(GpuArch{9, 0, false}), {});
  ASSERT_TRUE(int8.ok());
  EXPECT_EQ(Bgemm(*int8).shape, (LaunchShape{{98, 8, 16}, {16, 8, 1}, 0}));
  EXPECT_THAT(Bgemm(*int8).spec.name_expression,
              HasSubstr("winograd_bgemm<unsigned, 1, 8, 8, 2, 16, 2, 16, 128>"));
  EXPECT_THAT(int8->kernels[3].spec.name_expression,
              HasSubstr("winograd_inverse_transform<2, tunejit::s8, 0>"));
}

// Every distinct kernel of the 9 seed plans compiles with NVRTC for sm_90.
TEST(WinogradTemplate, SeedKernelsCompileForSm90) {
  const std::vector<testing::LogRecord> records =
      testing::ReadLogRecords(testing::RepoData("seed-vgg16-v100.log"), {kTask});
  ASSERT_FALSE(records.empty());
  std::set<std::string> seen;
  KernelCompiler compiler(nullptr);
  double total = 0, worst = 0;
  for (const testing::LogRecord& r : records) {
    absl::StatusOr<OpPlan> plan = Conv2dNchwWinogradTemplate()->Specialize(
        r.workload, r.config, DeviceLimits::ForArch(GpuArch{9, 0, false}), Epilogue{});
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const PlannedKernel& k : plan->kernels) {
      if (!seen.insert(k.spec.name_expression).second) continue;
      absl::StatusOr<CompiledKernel> c = compiler.Compile(k.spec, GpuArch{9, 0, false});
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_FALSE(c->program.cubin.empty());
      EXPECT_FALSE(c->lowered_name.empty());
      total += c->compile_seconds;
      worst = std::max(worst, c->compile_seconds);
    }
  }
  std::printf("winograd: %zu distinct kernels, NVRTC total %.2f s, worst %.2f s\n", seen.size(),
              total, worst);
}

TEST(WinogradTemplate, RejectsWhatTvmWouldNotOffer) {
  const OpTemplate* op = Conv2dNchwWinogradTemplate();
  auto status = [&](const autotvm::Conv2dParams& p) {
    return op->CanImplement(autotvm::MakeConv2dWorkload(kTask, p));
  };
  EXPECT_TRUE(status(Conv(1, 8, 14, 14, 8, false)).ok());
  EXPECT_TRUE(status(Conv(1, 8, 14, 14, 8, true)).ok());
  absl::Status stride = status(Conv(1, 8, 14, 14, 8, false, 3, 2));
  EXPECT_EQ(stride.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(stride.message(), HasSubstr("stride 1"));
  autotvm::Conv2dParams dil = Conv(1, 8, 14, 14, 8, false);
  dil.dilation_h = 2;
  EXPECT_THAT(status(dil).message(), HasSubstr("dilation 1"));
  autotvm::Conv2dParams rect = Conv(1, 8, 14, 14, 8, false);
  rect.kw = 5;
  EXPECT_THAT(status(rect).message(), HasSubstr("square"));
  EXPECT_THAT(status(Conv(1, 8, 14, 14, 8, false, 1, 1, 0)).message(), HasSubstr("2 < KH < 8"));
  absl::Status five = status(Conv(1, 8, 14, 14, 8, false, 5, 1, 2));
  EXPECT_EQ(five.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(five.message(), HasSubstr("3x3"));
  autotvm::Conv2dParams f16 = Conv(1, 8, 14, 14, 8, false);
  f16.data_dtype = f16.kernel_dtype = f16.out_dtype = "float16";
  EXPECT_EQ(status(f16).code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(status(Conv(1, 3641, 14, 14, 8, true)).message(), HasSubstr("CI <= 3640"));
  EXPECT_TRUE(status(Conv(1, 3641, 14, 14, 8, false)).ok());  // float has no such bound
  autotvm::Workload other =
      autotvm::MakeConv2dWorkload("conv2d_nchw.cuda", Conv(1, 8, 8, 8, 8, false));
  EXPECT_FALSE(op->CanImplement(other).ok());
}

TEST(WinogradTemplate, RejectsInvalidConfigsWithReasons) {
  const autotvm::Conv2dParams p = Conv(2, 64, 28, 28, 128, false);  // m=4, P = 2*7*7 = 98
  auto message = [&](const autotvm::ConfigEntity& c, Epilogue e = {}) {
    absl::StatusOr<OpPlan> plan = Plan(p, c, e);
    EXPECT_FALSE(plan.ok());
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
    }
    return plan.ok() ? std::string() : std::string(plan.status().message());
  };
  EXPECT_TRUE(Plan(p, WinoConfig({-1, 1, 8, 4}, {-1, 1, 14, 1}, 8)).ok());
  EXPECT_THAT(message(WinoConfig({-1, 1, 64, 1}, {-1, 1, 32, 1}, 8)),
              HasSubstr("threads per block"));
  EXPECT_THAT(message(WinoConfig({-1, 1, 8, 16}, {-1, 1, 7, 14}, 64)), HasSubstr("shared memory"));
  EXPECT_THAT(message(WinoConfig({-1, 2, 2, 16}, {-1, 2, 2, 7}, 1)), HasSubstr("accumulators"));
  autotvm::ConfigEntity bad_b = WinoConfig({-1, 1, 8, 4}, {-1, 1, 14, 1}, 8);
  bad_b.knobs[0] = SplitKnob("tile_b", {-1, 1, 2, 1});
  EXPECT_THAT(message(bad_b), HasSubstr("tile_b"));
  autotvm::ConfigEntity missing = WinoConfig({-1, 1, 8, 4}, {-1, 1, 14, 1}, 8);
  missing.knobs.erase(missing.knobs.begin() + 2);  // tile_x
  EXPECT_FALSE(Plan(p, missing).ok());
  // Grid y = CO / By beyond 65535.
  absl::StatusOr<OpPlan> tall =
      Plan(Conv(1, 1, 6, 6, 70000, false), WinoConfig({-1, 1, 1, 1}, {-1, 1, 4, 1}, 1));
  ASSERT_FALSE(tall.ok());
  EXPECT_THAT(tall.status().message(), HasSubstr("grid dim y"));
  // int8 with an int32 output cannot add a float bias.
  absl::StatusOr<OpPlan> bias = Plan(Conv(1, 8, 14, 14, 8, true),
                                     WinoConfig({-1, 1, 8, 1}, {-1, 1, 7, 1}, 8), {.bias = true});
  ASSERT_FALSE(bias.ok());
  EXPECT_THAT(bias.status().message(), HasSubstr("bias"));
}

TEST(WinogradTemplate, FallbackIsValidAndUsesManyThreads) {
  for (const autotvm::Conv2dParams& p :
       {Conv(1, 3, 7, 7, 5, false), Conv(3, 64, 56, 56, 64, false), Conv(2, 12, 14, 14, 20, true),
        Conv(128, 512, 14, 14, 512, true), Conv(1, 1, 3, 3, 1, true, 3, 1, 0)}) {
    absl::StatusOr<autotvm::ConfigEntity> c =
        Conv2dNchwWinogradTemplate()->FallbackConfig(autotvm::MakeConv2dWorkload(kTask, p));
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<OpPlan> plan = Plan(p, *c);
    ASSERT_TRUE(plan.ok()) << plan.status() << " " << c->ToString();
    if (p.co >= 8) {
      EXPECT_GE(Bgemm(*plan).shape.threads_per_block(), 64u) << c->ToString();
    }
  }
}

// H % 8 decides the tile (spec 5.2), whatever the dtype: 56 -> m=4 (alpha 6); 28, 14 -> m=2.
// (Spec 5.2 lists 28 among the m=4 examples; 28 % 8 != 0 and the seed index below says m=2.)
TEST(WinogradTemplate, TileSizeFollowsInputHeight) {
  EXPECT_EQ(WinogradGeometryOf(Conv(1, 8, 56, 56, 8, true)).m, 4);
  EXPECT_EQ(WinogradGeometryOf(Conv(1, 8, 28, 28, 8, true)).m, 2);
  EXPECT_EQ(WinogradGeometryOf(Conv(1, 8, 14, 14, 8, true)).m, 2);
  EXPECT_EQ(WinogradGeometryOf(Conv(1, 8, 7, 16, 8, false)).m, 2);
  const WinogradGeometry g = WinogradGeometryOf(Conv(3, 8, 14, 13, 8, false));
  EXPECT_EQ(g.oh, 14);
  EXPECT_EQ(g.ow, 13);
  EXPECT_EQ(g.nh, 7);
  EXPECT_EQ(g.nw, 7);
  EXPECT_EQ(g.tiles, 3 * 7 * 7);
  absl::StatusOr<OpPlan> plan =
      Plan(Conv(1, 8, 24, 24, 8, true), WinoConfig({-1, 1, 8, 1}, {-1, 1, 6, 1}, 8));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Bgemm(*plan).shape.grid[2], 36u);
  EXPECT_THAT(plan->kernels[1].spec.name_expression,
              HasSubstr("winograd_input_transform<4, tunejit::s8>"));
}

// The logged config index of every seed record is the mixed-radix position of its entity in the
// space built on P = N * ceil(OH/m)^2 (spec 1.7) only with our m: this pins the tile rule to data.
TEST(WinogradTemplate, SeedIndicesConfirmTileRule) {
  std::ifstream in(testing::RepoData("seed-vgg16-v100.log"));
  ASSERT_TRUE(in.good());
  std::string line;
  int checked = 0;
  while (std::getline(in, line)) {
    const autotvm::Json j = autotvm::Json::parse(line);
    if (j["input"][1] != kTask) continue;
    const autotvm::Workload w{kTask, j["input"][2]};
    absl::StatusOr<autotvm::Conv2dParams> p = autotvm::ParseConv2dWorkload(w);
    ASSERT_TRUE(p.ok()) << p.status();
    auto index_for_m = [&](int m) {
      const int64_t nt = (p->OutH() + m - 1) / m;
      const std::vector<std::vector<std::vector<int64_t>>> spaces = {
          {{-1, 1, 1, 1}},
          FactorSplitCandidates(p->co, 4),
          FactorSplitCandidates(p->n * nt * nt, 4),
          FactorSplitCandidates(p->ci, 2)};
      int64_t index = 0, radix = 1;
      for (size_t k = 0; k < spaces.size(); ++k) {
        const std::vector<int64_t> value = j["config"]["entity"][k][2].get<std::vector<int64_t>>();
        const auto it = std::find(spaces[k].begin(), spaces[k].end(), value);
        if (it == spaces[k].end()) return int64_t{-1};
        index += (it - spaces[k].begin()) * radix;
        radix *= static_cast<int64_t>(spaces[k].size());
      }
      const int64_t unroll = j["config"]["entity"][4][2].get<int64_t>();
      index += (unroll == 0 ? 0 : unroll == 128 ? 1 : 2) * radix;
      index += j["config"]["entity"][5][2].get<int64_t>() * radix * 3;
      return index;
    };
    const int ours = WinogradGeometryOf(*p).m;
    const int64_t logged = j["config"]["index"].get<int64_t>();
    EXPECT_EQ(index_for_m(ours), logged) << line;
    EXPECT_NE(index_for_m(6 - ours), logged) << line;
    ++checked;
  }
  EXPECT_EQ(checked, 9);
}

}  // namespace
}  // namespace tunejit
