// The ops ResNet adds (residual add+relu, float and int8, clip, average and global average
// pooling), on the CPU:
// the CPU reference on hand-computed cases (it is the ground truth of the GPU tests in
// elementwise_test.cc), the kernel builders' argument checks and launch geometry, and NVRTC
// compiling every new kernel's name expression for sm_90 (no GPU needed).
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cache/kernel_cache.h"
#include "gtest/gtest.h"
#include "jit/arch.h"
#include "jit/kernel_compiler.h"
#include "ops/cpu_reference.h"
#include "ops/elementwise.h"

namespace tunejit {
namespace {

// One 1x1x3x3 plane 1..9 with a 3x3/1 window and padding 1 all around.
Pool2dParams Padded3x3() {
  return Pool2dParams{.n = 1,
                      .c = 1,
                      .h = 3,
                      .w = 3,
                      .kh = 3,
                      .kw = 3,
                      .stride_h = 1,
                      .stride_w = 1,
                      .pad_top = 1,
                      .pad_left = 1,
                      .pad_bottom = 1,
                      .pad_right = 1};
}

TEST(ResidualOpsReference, AvgPoolExcludesPaddingByDefault) {
  const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  Pool2dParams p = Padded3x3();
  // Corners average 4 real values, edges 6, the center all 9.
  const std::vector<float> exclude = cpuref::AvgPool2d(p, x);
  const std::vector<float> want_exclude = {3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7};
  ASSERT_EQ(exclude.size(), 9u);
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(exclude[i], want_exclude[i]) << i;
  p.count_include_pad = true;  // every window divides by 9
  const std::vector<float> include = cpuref::AvgPool2d(p, x);
  const std::vector<float> sums = {12, 21, 16, 27, 45, 33, 24, 39, 28};
  for (int i = 0; i < 9; ++i) EXPECT_FLOAT_EQ(include[i], sums[i] / 9) << i;
}

TEST(ResidualOpsReference, AvgPoolStrideAndAsymmetricPadding) {
  // 1x1x4x4 0..15, 2x2 stride 2, one row of padding at the bottom only: 3 output rows.
  std::vector<float> x(16);
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i);
  Pool2dParams p{.n = 1, .c = 1, .h = 4, .w = 4, .pad_bottom = 1};
  ASSERT_EQ(p.OutH(), 2);  // (4 + 1 - 2) / 2 + 1 = 2: the padded row is never reached
  p.stride_h = 1;
  ASSERT_EQ(p.OutH(), 4);
  const std::vector<float> y = cpuref::AvgPool2d(p, x);
  ASSERT_EQ(y.size(), 8u);
  EXPECT_FLOAT_EQ(y[0], (0 + 1 + 4 + 5) / 4.f);
  EXPECT_FLOAT_EQ(y[6], (12 + 13) / 2.f);  // last row: half the window is padding
  p.count_include_pad = true;
  EXPECT_FLOAT_EQ(cpuref::AvgPool2d(p, x)[6], (12 + 13) / 4.f);
}

TEST(ResidualOpsReference, GlobalAvgPoolAddReluClip) {
  const std::vector<float> x = {1, 2, 3, 4, -1, -2, -3, -6};
  EXPECT_EQ(cpuref::GlobalAvgPool(2, 4, x), (std::vector<float>{2.5f, -3.0f}));
  EXPECT_EQ(cpuref::GlobalAvgPool(8, 1, x), x);

  const std::vector<float> a = {1, -2, 3, -4}, b = {0.5f, 1, -5, 4};
  EXPECT_EQ(cpuref::AddRelu(a, b, false), (std::vector<float>{1.5f, -1, -2, 0}));
  EXPECT_EQ(cpuref::AddRelu(a, b, true), (std::vector<float>{1.5f, 0, 0, 0}));

  const std::vector<float> c = {-7, -0.5f, 0, 3, 6, 9};
  EXPECT_EQ(cpuref::Clip(c, 0, 6), (std::vector<float>{0, 0, 0, 3, 6, 6}));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(cpuref::Clip(c, -inf, inf), c);
  EXPECT_TRUE(std::isnan(cpuref::Clip({std::nanf("")}, 0, 1)[0]));  // NaN passes through
}

// The int8 residual add: the dequantized sum (+relu), requantized as a quantize step would
// (graph/quantize.h's convention: round half to even, saturate to [-128, 127]).
TEST(ResidualOpsReference, AddInt8DequantizesAddsAndRequantizes) {
  const std::vector<int8_t> x = {10, -20, 127, -128, 3, 1};
  const std::vector<int8_t> r = {4, 6, 127, -128, -5, 0};
  // scale_x = 0.5, scale_r = 0.25: exact in float.
  const std::vector<float> sum = cpuref::AddInt8(x, r, 0.5f, 0.25f, false);
  EXPECT_EQ(sum, (std::vector<float>{6, -8.5f, 95.25f, -96, 0.25f, 0.5f}));
  const std::vector<float> relu = cpuref::AddInt8(x, r, 0.5f, 0.25f, true);
  EXPECT_EQ(relu, (std::vector<float>{6, 0, 95.25f, 0, 0.25f, 0.5f}));
  // scale_out = 0.5: 12, -17, 190.5 -> 127, -192 -> -128, 0.5 -> 0 (tie to even), 1.
  EXPECT_EQ(cpuref::Quantize(sum, 0.5f), (std::vector<int8_t>{12, -17, 127, -128, 0, 1}));
  // 1.5 -> 2 and 2.5 -> 2: ties go to the even neighbour.
  EXPECT_EQ(cpuref::Quantize(cpuref::AddInt8({3, 5}, {0, 0}, 1.0f, 1.0f, false), 2.0f),
            (std::vector<int8_t>{2, 2}));
}

TEST(ResidualOpsKernels, BuildersCheckTheirArguments) {
  EXPECT_TRUE(AvgPool2dKernel(Padded3x3()).ok());
  Pool2dParams bad = Padded3x3();
  bad.pad_left = 3;  // a window of padding only
  EXPECT_EQ(AvgPool2dKernel(bad).status().code(), absl::StatusCode::kInvalidArgument);
  bad = Padded3x3();
  bad.h = 0;
  EXPECT_FALSE(AvgPool2dKernel(bad).ok());
  EXPECT_FALSE(GlobalAvgPoolKernel(0, 49).ok());
  EXPECT_FALSE(GlobalAvgPoolKernel(8, 0).ok());
  EXPECT_FALSE(GlobalAvgPoolKernel(8, int64_t{1} << 32).ok());  // inner is an int argument
  EXPECT_FALSE(AddReluKernel(0, true).ok());
  EXPECT_FALSE(ClipKernel(10, 1.f, 0.f).ok());
  EXPECT_FALSE(ClipKernel(10, std::nanf(""), 0.f).ok());
  EXPECT_FALSE(ClipKernel(0, 0.f, 1.f).ok());
  using T = ElementType;
  EXPECT_TRUE(AddInt8Kernel(10, true, T::kInt8, 0.1f, 0.2f, 0.3f).ok());
  EXPECT_FALSE(AddInt8Kernel(0, true, T::kInt8, 0.1f, 0.2f, 0.3f).ok());
  EXPECT_FALSE(AddInt8Kernel(10, true, T::kFloat16, 0.1f, 0.2f, 0.3f).ok());
  EXPECT_FALSE(AddInt8Kernel(10, true, T::kInt8, 0.f, 0.2f, 0.3f).ok());
  EXPECT_FALSE(AddInt8Kernel(10, true, T::kInt8, 0.1f, std::nanf(""), 0.3f).ok());
  EXPECT_FALSE(AddInt8Kernel(10, true, T::kInt8, 0.1f, 0.2f, 0.f).ok());
  EXPECT_TRUE(AddInt8Kernel(10, true, T::kFloat32, 0.1f, 0.2f, 0.f).ok());  // no output scale
}

TEST(ResidualOpsKernels, NamesAndLaunchGeometry) {
  Pool2dParams p = Padded3x3();
  absl::StatusOr<PlannedKernel> exclude = AvgPool2dKernel(p);
  ASSERT_TRUE(exclude.ok()) << exclude.status();
  EXPECT_EQ(exclude->spec.source_file, "elementwise.cu");
  EXPECT_EQ(exclude->spec.name_expression, "tunejit::avg_pool2d<0>");
  EXPECT_EQ(exclude->args.size(), 13u);
  p.count_include_pad = true;
  EXPECT_EQ(AvgPool2dKernel(p)->spec.name_expression, "tunejit::avg_pool2d<1>");

  // One warp per plane: ResNet-50's [128, 2048, 7, 7] is 262144 planes, 8 per 256-thread block,
  // capped at 65536 blocks (the kernel strides over the rest).
  absl::StatusOr<PlannedKernel> gap = GlobalAvgPoolKernel(128 * 2048, 49);
  ASSERT_TRUE(gap.ok()) << gap.status();
  EXPECT_EQ(gap->spec.name_expression, "tunejit::global_avg_pool");
  EXPECT_EQ(gap->shape.block[0] % 32, 0u);
  EXPECT_EQ(gap->shape.grid[0], 32768u);
  EXPECT_EQ(GlobalAvgPoolKernel(3, 49)->shape.grid[0], 1u);

  EXPECT_EQ(AddReluKernel(1000, true)->spec.name_expression, "tunejit::add_relu<1, float>");
  EXPECT_EQ(AddReluKernel(1000, false)->spec.name_expression, "tunejit::add_relu<0, float>");
  EXPECT_EQ(AddReluKernel(1000, true)->args.size(), 4u);
  absl::StatusOr<PlannedKernel> clip = ClipKernel(1000, 0.f, 6.f);
  ASSERT_TRUE(clip.ok()) << clip.status();
  EXPECT_EQ(clip->spec.name_expression, "tunejit::clip<float>");
  EXPECT_EQ(clip->args.size(), 5u);

  // The int8 add: the output type and relu are template parameters, the scales arguments.
  absl::StatusOr<PlannedKernel> add8 = AddInt8Kernel(1000, true, ElementType::kInt8, 1, 2, 3);
  ASSERT_TRUE(add8.ok()) << add8.status();
  EXPECT_EQ(add8->spec.name_expression, "tunejit::add_int8<1, signed char>");
  EXPECT_EQ(add8->args.size(), 7u);
  EXPECT_EQ(AddInt8Kernel(1000, false, ElementType::kFloat32, 1, 2, 3)->spec.name_expression,
            "tunejit::add_int8<0, float>");
}

// Each name expression instantiates in NVRTC (a typo or a signature mismatch would only show at
// the first run otherwise).
TEST(ResidualOpsKernels, EveryNewKernelCompilesForSm90) {
  CacheOptions options;
  options.dir = ::testing::TempDir() + "/tunejit_residual_ops_cache";
  options.disabled = true;
  absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
  ASSERT_TRUE(cache.ok()) << cache.status();
  const KernelCompiler compiler(&*cache);
  const absl::StatusOr<GpuArch> arch = ParseGpuArch("sm_90");
  ASSERT_TRUE(arch.ok());
  Pool2dParams p = Padded3x3();
  std::vector<absl::StatusOr<PlannedKernel>> kernels = {
      AvgPool2dKernel(p), GlobalAvgPoolKernel(4, 49), AddReluKernel(100, true),
      AddReluKernel(100, false), ClipKernel(100, 0.f, 6.f)};
  for (bool relu : {false, true}) {
    for (ElementType out : {ElementType::kInt8, ElementType::kFloat32}) {
      kernels.push_back(AddInt8Kernel(100, relu, out, 0.1f, 0.2f, 0.3f));
    }
  }
  p.count_include_pad = true;
  kernels.push_back(AvgPool2dKernel(p));
  for (const absl::StatusOr<PlannedKernel>& k : kernels) {
    ASSERT_TRUE(k.ok()) << k.status();
    absl::StatusOr<CompiledKernel> compiled = compiler.Compile(k->spec, *arch);
    EXPECT_TRUE(compiled.ok()) << k->spec.name_expression << ": " << compiled.status();
  }
}

}  // namespace
}  // namespace tunejit
