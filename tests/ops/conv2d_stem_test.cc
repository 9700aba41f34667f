// CPU: conv2d_nchw_stem_mma.cuda's workload (NCHW float32 data and OIHW weight, NHWC output),
// its rules and bad inputs, the plan (grid, block, kernel arguments), the knob space, and NVRTC
// builds of sampled valid configs with mma.sync in the PTX. The GPU test is
// conv2d_stem_gpu_test.cc.
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/config_space.h"
#include "autotvm/dispatch.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/offers.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

// data [n, c, h, w], kernel [co, c, k, k], stride, symmetric pad, dilation.
autotvm::Workload StemWorkload(int64_t n, int64_t c, int64_t h, int64_t w, int64_t co, int64_t k,
                               int pad = 1, int stride = 1, int dilation = 1,
                               const std::string& out = "float16",
                               const std::string& dtype = "float32") {
  return autotvm::Workload{autotvm::kConv2dNchwStemMma,
                           autotvm::Json::array({testing::Tensor({n, c, h, w}, dtype),
                                                 testing::Tensor({co, c, k, k}, dtype),
                                                 {stride, stride},
                                                 {pad, pad, pad, pad},
                                                 {dilation, dilation},
                                                 out})};
}

autotvm::ConfigEntity Tile(int64_t th, int64_t tw, int64_t warps) {
  return testing::Config(
      {OtherKnob("tile_h", th), OtherKnob("tile_w", tw), OtherKnob("warps", warps)});
}

const OpTemplate& Op() { return *FindOpTemplate(autotvm::kConv2dNchwStemMma); }

TEST(Conv2dStemWorkload, VggStemIsOfferedAndRoundTrips) {
  autotvm::Conv2dParams p;
  p.n = 128, p.ci = 3, p.h = 224, p.w = 224, p.co = 64, p.kh = 3, p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  p.out_dtype = "float16";
  const std::vector<autotvm::Implementation> impls =
      testing::OfferedConv(p, NumericMode::kFp16TensorCores, /*half_output=*/true);
  ASSERT_EQ(impls.size(), 1u);
  const autotvm::Workload& w = impls[0].workload;
  EXPECT_EQ(w.Key(), StemWorkload(128, 3, 224, 224, 64, 3).Key());
  absl::StatusOr<autotvm::Conv2dParams> back = autotvm::ParseConv2dWorkload(w);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout, "NCHW");
  EXPECT_TRUE(back->nhwc_out);
  EXPECT_EQ(back->ci, 3);
  EXPECT_EQ(back->co, 64);
  EXPECT_EQ(back->out_dtype, "float16");
  EXPECT_TRUE(Op().CanImplement(w).ok()) << Op().CanImplement(w);
  // Not offered: a long patch, too many or odd output channels, groups, an int8 mode.
  auto stem_offers = [](const autotvm::Conv2dParams& q, NumericMode mode) {
    int n = 0;
    for (const autotvm::Implementation& impl : testing::OfferedConv(q, mode, true)) {
      n += impl.workload.task_name == autotvm::kConv2dNchwStemMma;
    }
    return n;
  };
  autotvm::Conv2dParams q = p;
  q.ci = 32;  // 288 > 256
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 0);
  q = p;  // ResNet's stem: 7x7 stride 2, 147 values
  q.kh = q.kw = 7;
  q.stride_h = q.stride_w = 2;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 3;
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 1);
  q = p;
  q.co = 144;  // past 128 accumulators a lane's registers
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 0);
  q = p;  // ConvNeXt's patchify stem: 4x4 stride 4, 96 channels
  q.kh = q.kw = 4;
  q.stride_h = q.stride_w = 4;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 0;
  q.co = 96;
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 1);
  q.co = 40;
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 0);
  q = p;
  q.groups = 3;
  q.co = 48;
  EXPECT_EQ(stem_offers(q, NumericMode::kFp16TensorCores), 0);
  EXPECT_EQ(stem_offers(p, NumericMode::kInt8TensorCores), 0);
  EXPECT_EQ(stem_offers(p, NumericMode::kFp32), 0);
}

TEST(Conv2dStem, PlansTheKernelGridAndArguments) {
  const autotvm::Workload w = StemWorkload(128, 3, 224, 224, 64, 3);
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile(8, 32, 4), kHopper, Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.source_file, "conv2d_stem.cu");
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::conv2d_stem<3, 3, 3, 1, 1, 1, 1, 64, 8, 32, 4, 3, 1>");
  EXPECT_EQ(k.shape.grid[0], 128u * 28 * 7);
  EXPECT_EQ(k.shape.block[0], 128u);
  EXPECT_EQ(k.shape.shared_bytes, 0u);  // static shared memory only
  ASSERT_EQ(k.args.size(), 5u + 8u);
  std::vector<int64_t> ints;
  for (size_t i = 5; i < k.args.size(); ++i) {
    EXPECT_EQ(k.args[i].kind, KernelArg::Kind::kInt32);
    ints.push_back(k.args[i].index_or_int);
  }
  EXPECT_THAT(ints, ::testing::ElementsAre(224, 224, 224, 224, 1, 1, 7, 28 * 7));
  // Requantizing to int8 replaces the float16 output: kOutF16 0, epilogue code 11.
  plan = Op().Specialize(w, Tile(8, 32, 4), kHopper,
                         {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->kernels[0].spec.name_expression, HasSubstr(", 4, 11, 0>"));
}

TEST(Conv2dStem, RejectsBadWorkloadsConfigsAndEpilogues) {
  const autotvm::Workload w = StemWorkload(2, 3, 32, 32, 64, 3);
  auto reason = [](const absl::Status& s) { return std::string(s.message()); };
  // Workloads.
  EXPECT_THAT(reason(Op().CanImplement(StemWorkload(2, 32, 32, 32, 64, 3))),
              HasSubstr("patch C*KH*KW = 288 > 256"));
  EXPECT_THAT(reason(Op().CanImplement(StemWorkload(2, 3, 32, 32, 72, 3))), HasSubstr("CO = 72"));
  EXPECT_THAT(reason(Op().CanImplement(StemWorkload(2, 3, 32, 32, 64, 3, 1, 1, 1, "int32"))),
              HasSubstr("float32 x float32"));
  EXPECT_FALSE(
      Op().CanImplement(StemWorkload(2, 3, 32, 32, 64, 3, 1, 1, 1, "float16", "float16")).ok());
  EXPECT_FALSE(Op().CanImplement(StemWorkload(2, 3, 2, 2, 64, 5, 0)).ok());  // empty output
  autotvm::Workload other = w;
  other.task_name = "conv2d_nchw.cuda";
  EXPECT_FALSE(Op().CanImplement(other).ok());
  // Configs: idle warps, too much shared memory, a missing knob.
  absl::Status s = Op().Specialize(w, Tile(1, 16, 2), kHopper, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reason(s), HasSubstr("would idle"));
  // Stride 2: a 33 x 257 window of 3 channels (50 KiB) for 16 x 128 outputs.
  s = Op().Specialize(StemWorkload(2, 3, 256, 256, 64, 3, 1, 2, 1, "float32"), Tile(16, 128, 8),
                      kHopper, {})
          .status();
  EXPECT_THAT(reason(s), HasSubstr("shared"));
  EXPECT_FALSE(Op().Specialize(w, testing::Config({OtherKnob("tile_h", 8)}), kHopper, {}).ok());
  // Epilogues: a scaled float32 value cannot go out as float16.
  EXPECT_FALSE(
      Op().Specialize(w, Tile(8, 32, 4), kHopper, {.output = Epilogue::Output::kFloat32}).ok());
  // Pre-Ampere GPUs have no m16n8k16 float16 mma.
  EXPECT_FALSE(
      Op().Specialize(w, Tile(8, 32, 4), DeviceLimits::ForArch(GpuArch{7, 5, false}), {}).ok());
}

// ResNet's 7x7 stride-2 RGB stem: 147 patch values, 10 k16 steps, whose weight fragments live in
// shared memory (20 KiB for 64 channels) rather than registers.
TEST(Conv2dStem, LongPatchesKeepTheWeightsInSharedMemory) {
  const autotvm::Workload w = StemWorkload(128, 3, 224, 224, 64, 7, 3, 2);
  ASSERT_TRUE(Op().CanImplement(w).ok()) << Op().CanImplement(w);
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile(4, 32, 4), kHopper, {.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->kernels[0].spec.name_expression,
            "tunejit::conv2d_stem<3, 7, 7, 2, 2, 1, 1, 64, 4, 32, 4, 3, 1>");
  EXPECT_EQ(plan->kernels[0].shape.grid[0], 128u * 28 * 4);  // 112 x 112 in 4 x 32 tiles
  // A 13 x 69 window of 3 channels, 4 warps' staging, 10 x 8 x 2 x 32 fragment words: 35,088
  // bytes (ptxas reports the same).
  const absl::Status too_big =
      Op().Specialize(w, Tile(8, 64, 8), kHopper, {.bias = true, .relu = true}).status();
  EXPECT_THAT(std::string(too_big.message()), HasSubstr("shared"));
  KernelCompiler compiler(nullptr);
  absl::StatusOr<CompiledKernel> kernel =
      compiler.Compile(plan->kernels[0].spec, GpuArch{9, 0, false});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "mma.sync.aligned.m16n8k16"));
  EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "ld.shared.u32"));
}

// The fallback fits the static 48 KiB whatever the epilogue writes: float32 output staging
// doubles float16's, which pushed 8 x 32 tiles of ConvNeXt's 4x4 stem to 96 channels past it.
TEST(Conv2dStem, FallbackFitsEveryOutputKind) {
  for (const std::string out : {"float16", "float32"}) {
    for (const autotvm::Workload& w : {StemWorkload(32, 3, 224, 224, 64, 3, 1, 1, 1, out),
                                       StemWorkload(32, 3, 224, 224, 96, 4, 0, 4, 1, out),
                                       StemWorkload(32, 3, 224, 224, 64, 7, 3, 2, 1, out),
                                       StemWorkload(2, 3, 37, 42, 128, 4, 0, 4, 1, out)}) {
      absl::StatusOr<autotvm::ConfigEntity> fallback = Op().FallbackConfig(w);
      ASSERT_TRUE(fallback.ok()) << fallback.status();
      std::vector<Epilogue> epilogues = {
          Epilogue{}, Epilogue{.bias = true, .relu = true},
          Epilogue{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize}};
      if (out == "float32") {
        epilogues.push_back(Epilogue{.bias = true, .output = Epilogue::Output::kFloat32});
      }
      for (const Epilogue& e : epilogues) {
        absl::StatusOr<OpPlan> plan = Op().Specialize(w, *fallback, DeviceLimits{}, e);
        EXPECT_TRUE(plan.ok()) << w.Key() << " " << fallback->ToString() << ": " << plan.status();
      }
    }
  }
  // The common 3x3 RGB stem keeps the large tile.
  EXPECT_EQ(Op().FallbackConfig(StemWorkload(32, 3, 224, 224, 64, 3))->ToString(),
            Tile(8, 32, 4).ToString());
  // ResNet's 7x7 patch to 128 channels: 40 KiB of weight fragments leave no tile, so the
  // template is not offered and another takes the conv.
  EXPECT_THAT(
      std::string(
          Op().FallbackConfig(StemWorkload(32, 3, 224, 224, 128, 7, 3, 2)).status().message()),
      HasSubstr("no tile"));
}

TEST(Conv2dStemSpace, IndexEntityRoundTripAndValidCount) {
  const autotvm::Workload w = StemWorkload(128, 3, 224, 224, 64, 3);
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->size(), 5 * 4 * 4);
  EXPECT_TRUE(HasConfigSpace(autotvm::kConv2dNchwStemMma));
  int valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    absl::StatusOr<autotvm::ConfigEntity> c = space->Get(i);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(*space->IndexOf(*c), i);
    if (Op().Specialize(w, *c, kHopper, {}).ok()) ++valid;
  }
  // Every tile with at least as many 16-pixel rows as warps fits in 48 KiB at float16 out:
  // 80 points less the 10 with too few rows (1x16 with 2, 4, 8 warps; 1x32 and 2x16 with 4, 8;
  // 1x64, 2x32, 4x16 with 8).
  EXPECT_EQ(valid, 80 - 3 - 4 - 3);
}

// A fixed-seed sample of valid configs builds with NVRTC, on mma.sync, for every output kind.
TEST(Conv2dStemSpace, SampledValidConfigsCompileWithMma) {
  const autotvm::Workload w = StemWorkload(128, 3, 224, 224, 64, 3);
  const std::vector<autotvm::ConfigEntity> configs =
      testing::SampledValidConfigs(Op(), w, kHopper, 3);
  ASSERT_EQ(configs.size(), 3u);
  const Epilogue epilogues[] = {
      {.bias = true, .relu = true},
      {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
      {}};
  KernelCompiler compiler(nullptr);
  for (size_t i = 0; i < configs.size(); ++i) {
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, configs[i], kHopper, epilogues[i]);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const KernelSpec& spec = plan->kernels[0].spec;
    absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, "mma.sync.aligned.m16n8k16"));
  }
}

}  // namespace
}  // namespace tunejit
