// CPU tests of the op registry: lookup, TVM's validity rules (each rejection names its rule),
// launch geometry of the seed configs (docs/tvm-templates.md tables 3.3 and 4.4), fallbacks.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/elementwise.h"
#include "ops/op_template.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"

namespace tunejit {
namespace {

using testing::Config;
using testing::ConvWorkload;
using testing::DenseWorkload;
using ::testing::HasSubstr;

const DeviceLimits kSm90 = DeviceLimits::ForArch(GpuArch{9, 0, false});

TEST(Registry, FindsEveryTaskName) {
  for (const char* name :
       {"dense_small_batch.cuda", "dense_large_batch.cuda", "conv2d_nchw.cuda",
        "depthwise_conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda", "conv2d_NCHWc_int8.cuda",
        "dense_wgmma.cuda", "conv2d_nhwc_wgmma.cuda", "conv2d_nhwc_wgmma_pool.cuda",
        "conv2d_nchw_stem_mma.cuda", "conv2d_nchw_patchify_wgmma.cuda",
        "depthwise_conv2d_nhwc.cuda", "batch_matmul.cuda", "attention_mma.cuda"}) {
    const OpTemplate* op = FindOpTemplate(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->task_name(), name);
  }
  EXPECT_EQ(FindOpTemplate("dense.cuda"), nullptr);
  EXPECT_EQ(FindOpTemplate(""), nullptr);
  EXPECT_EQ(AllOpTemplates().size(), 14u);
}

TEST(DeviceLimits, Sm90DefaultsAreHopperLike) {
  EXPECT_EQ(kSm90.max_threads_per_block, 1024);
  EXPECT_EQ(kSm90.shared_bytes_per_block, 48 * 1024);
  EXPECT_EQ(kSm90.shared_bytes_per_block_optin, 227 * 1024);
  EXPECT_EQ(kSm90.regs_per_block, 65536);
  EXPECT_EQ(kSm90.sm_count, 132);
  EXPECT_EQ(DeviceLimits::ForArch(GpuArch{8, 0, false}).shared_bytes_per_block_optin, 163 * 1024);
  DeviceProperties props;
  props.arch = GpuArch{8, 6, false};
  props.max_threads_per_block = 1024;
  props.max_block_dim[2] = 64;
  props.max_grid_dim[1] = 65535;
  props.shared_bytes_per_block = 48 * 1024;
  props.sm_count = 84;
  DeviceLimits from = DeviceLimits::FromProperties(props);
  EXPECT_EQ(from.sm_count, 84);
  EXPECT_EQ(from.max_block_dim[2], 64);
  EXPECT_EQ(from.arch, (GpuArch{8, 6, false}));
}

TEST(Epilogue, CodeBits) {
  EXPECT_EQ(EpilogueCode(Epilogue{}), 0);
  EXPECT_EQ(EpilogueCode(Epilogue{.bias = true}), 1);
  EXPECT_EQ(EpilogueCode(Epilogue{.relu = true}), 2);
  EXPECT_EQ(EpilogueCode(Epilogue{.output = Epilogue::Output::kFloat32}), 4);
  EXPECT_EQ(EpilogueCode(Epilogue{true, true, Epilogue::Output::kInt8Requantize}), 11);
}

// The named form the templates take as a type (common.cuh Epi, whose kCode is EpilogueCode).
TEST(Epilogue, TypeNames) {
  EXPECT_EQ(EpilogueTypeName(Epilogue{}),
            "tunejit::Epi<false, false, tunejit::EpiOut::kAccumulator>");
  EXPECT_EQ(EpilogueTypeName(Epilogue{.bias = true, .output = Epilogue::Output::kFloat32}),
            "tunejit::Epi<true, false, tunejit::EpiOut::kFloat32>");
  EXPECT_EQ(EpilogueTypeName(Epilogue{true, true, Epilogue::Output::kInt8Requantize}),
            "tunejit::Epi<true, true, tunejit::EpiOut::kInt8>");
}

// ---- launch geometry of the seed configs ----

TEST(DenseLargeBatch, SeedLaunchShapesMatchSpecTable) {
  struct Row {
    int64_t n, k;
    std::vector<int64_t> tx, ty, tk;
    uint32_t grid_x, grid_y;
  };
  const std::vector<Row> rows = {
      {1000, 4096, {-1, 2, 4, 1}, {-1, 2, 4, 1}, {-1, 8, 2}, 16, 125},
      {4096, 4096, {-1, 8, 4, 1}, {-1, 4, 4, 1}, {-1, 2, 8}, 4, 256},
      {4096, 25088, {-1, 8, 4, 1}, {-1, 4, 4, 1}, {-1, 1, 16}, 4, 256},
  };
  const OpTemplate* op = DenseLargeBatchTemplate();
  for (const Row& r : rows) {
    auto plan = op->Specialize(
        DenseWorkload("dense_large_batch.cuda", 128, r.n, r.k),
        Config({SplitKnob("tile_x", r.tx), SplitKnob("tile_y", r.ty), SplitKnob("tile_k", r.tk)}),
        kSm90, Epilogue{});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->kernels.size(), 1u);
    const LaunchShape& s = plan->kernels[0].shape;
    EXPECT_EQ(s.grid[0], r.grid_x);
    EXPECT_EQ(s.grid[1], r.grid_y);
    EXPECT_EQ(s.grid[2], 1u);
    EXPECT_EQ(s.block[0], 4u);
    EXPECT_EQ(s.block[1], 4u);
    EXPECT_EQ(s.block[2], 1u);
    EXPECT_EQ(plan->kernels[0].spec.source_file, "dense.cu");
  }
}

// tile_k[2] operands per output row and column live in registers, fully unrolled: 16 x (8 + 4) =
// 192 is the seed's and fits; 32 x 12 = 384 would spill and take ptxas minutes.
TEST(DenseLargeBatch, RejectsOperandTilesPastTheRegisterFile) {
  const autotvm::Workload w = DenseWorkload("dense_large_batch.cuda", 128, 4096, 25088);
  auto config = [](int64_t ki) {
    return Config({SplitKnob("tile_x", {-1, 8, 4, 1}), SplitKnob("tile_y", {-1, 4, 4, 1}),
                   SplitKnob("tile_k", {-1, 1, ki})});
  };
  EXPECT_TRUE(DenseLargeBatchTemplate()->Specialize(w, config(16), kSm90, Epilogue{}).ok());
  auto big = DenseLargeBatchTemplate()->Specialize(w, config(32), kSm90, Epilogue{});
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("384 operand registers > 255"), std::string::npos)
      << big.status();
}

TEST(DenseSmallBatch, SeedLaunchShape) {
  auto plan = DenseSmallBatchTemplate()->Specialize(
      DenseWorkload("dense_small_batch.cuda", 128, 1000, 4096),
      Config({SplitKnob("tile_k", {-1, 32})}), kSm90, Epilogue{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const LaunchShape& s = plan->kernels[0].shape;
  EXPECT_EQ(s.grid[0], 1000u);  // blockIdx.x = output feature
  EXPECT_EQ(s.grid[1], 128u);   // blockIdx.y = batch row
  EXPECT_EQ(s.block[0], 32u);
  EXPECT_EQ(s.threads_per_block(), 32u);
  EXPECT_EQ(plan->kernels[0].spec.name_expression, "tunejit::dense_small_batch<32, 0>");
}

autotvm::ConfigEntity SeedConvConfig() {
  return Config({SplitKnob("tile_f", {-1, 4, 4, 1}), SplitKnob("tile_y", {-1, 2, 2, 2}),
                 SplitKnob("tile_x", {-1, 1, 32, 1}), SplitKnob("tile_rc", {-1, 3}),
                 SplitKnob("tile_ry", {-1, 3}), SplitKnob("tile_rx", {-1, 3}),
                 OtherKnob("auto_unroll_max_step", 1500), OtherKnob("unroll_explicit", 1)});
}

autotvm::Workload SeedConvWorkload() {
  return ConvWorkload("conv2d_nchw.cuda", {128, 3, 224, 224}, {64, 3, 3, 3}, {1, 1}, {1, 1, 1, 1},
                      {1, 1});
}

TEST(Conv2dNchw, SeedLaunchShapeMatchesSpec) {
  auto plan =
      Conv2dNchwTemplate()->Specialize(SeedConvWorkload(), SeedConvConfig(), kSm90, Epilogue{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const LaunchShape& s = plan->kernels[0].shape;
  EXPECT_EQ(s.grid[0], 7u);
  EXPECT_EQ(s.grid[1], 28u);
  EXPECT_EQ(s.grid[2], 512u);
  EXPECT_EQ(s.block[0], 32u);
  EXPECT_EQ(s.block[1], 2u);
  EXPECT_EQ(s.block[2], 4u);
  EXPECT_THAT(plan->kernels[0].spec.name_expression,
              HasSubstr("conv2d_nchw_direct<4, 4, 1, 2, 2, 2, 1, 32, 1, 3, 3, 3, 3, 3, 1, 1, 1, 1, "
                        "1500, 0>"));
  EXPECT_TRUE(plan->notes.empty());
}

TEST(Conv2dNchw, EpilogueSelectsTensorArguments) {
  Epilogue e{.bias = false, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  auto plan = Conv2dNchwTemplate()->Specialize(SeedConvWorkload(), SeedConvConfig(), kSm90, e);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<KernelArg>& args = plan->kernels[0].args;
  ASSERT_GE(args.size(), 5u);
  EXPECT_EQ(args[0].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(args[1].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(args[2].kind, KernelArg::Kind::kInt64);  // no bias: null pointer
  EXPECT_EQ(args[3].kind, KernelArg::Kind::kInput);  // scale, slot 3
  EXPECT_EQ(args[3].index_or_int, 3);
  EXPECT_EQ(args[4].kind, KernelArg::Kind::kOutput);
  EXPECT_THAT(plan->kernels[0].spec.name_expression, HasSubstr(", 1500, 10>"));
}

TEST(Conv2dNchw, TopHubSwappedKernelLabelsAreSwappedBack) {
  // A 1x7 kernel whose record says tile_ry = [1, 7], tile_rx = [1, 1] (TopHub's swapped labels).
  autotvm::Workload w =
      ConvWorkload("conv2d_nchw.cuda", {1, 8, 17, 17}, {8, 8, 1, 7}, {1, 1}, {0, 3, 0, 3}, {1, 1});
  autotvm::ConfigEntity c =
      Config({SplitKnob("tile_f", {2, 1, 4, 1}), SplitKnob("tile_y", {17, 1, 1, 1}),
              SplitKnob("tile_x", {1, 1, 17, 1}), SplitKnob("tile_rc", {1, 8}),
              SplitKnob("tile_rx", {1, 1}), SplitKnob("tile_ry", {1, 7}),
              OtherKnob("auto_unroll_max_step", 512), OtherKnob("unroll_explicit", 1)});
  auto plan = Conv2dNchwTemplate()->Specialize(w, c, kSm90, Epilogue{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->notes.size(), 1u);
  EXPECT_THAT(plan->notes[0], HasSubstr("swapped"));
  // RC=8, RY=1, RX=7 after the swap, KH=1, KW=7.
  EXPECT_THAT(plan->kernels[0].spec.name_expression,
              HasSubstr(", 8, 1, 7, 1, 7, 1, 1, 1, 1, 512, 0>"));

  autotvm::ConfigEntity proper = c;
  proper.knobs[4] = SplitKnob("tile_rx", {1, 7});
  proper.knobs[5] = SplitKnob("tile_ry", {1, 1});
  auto plain = Conv2dNchwTemplate()->Specialize(w, proper, kSm90, Epilogue{});
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->notes.empty());
  EXPECT_EQ(plain->kernels[0].spec.name_expression, plan->kernels[0].spec.name_expression);
}

TEST(Depthwise, TopHubRecordLaunchShape) {
  // cuda_v0.08.log: titanx [1,1024,7,7] x [1024,1,3,3], tile_f [256,1,4,1], tile_y/x [1,1,7,1].
  autotvm::Workload w = ConvWorkload("depthwise_conv2d_nchw.cuda", {1, 1024, 7, 7}, {1024, 1, 3, 3},
                                     {1, 1}, {1, 1, 1, 1}, {1, 1});
  autotvm::ConfigEntity c =
      Config({SplitKnob("tile_f", {256, 1, 4, 1}), SplitKnob("tile_y", {1, 1, 7, 1}),
              SplitKnob("tile_x", {1, 1, 7, 1}), OtherKnob("auto_unroll_max_step", 1500),
              OtherKnob("unroll_explicit", 1)});
  auto plan = DepthwiseConv2dNchwTemplate()->Specialize(w, c, kSm90, Epilogue{});
  ASSERT_TRUE(plan.ok()) << plan.status();
  const LaunchShape& s = plan->kernels[0].shape;
  EXPECT_EQ(s.grid[0], 1u);
  EXPECT_EQ(s.grid[1], 1u);
  EXPECT_EQ(s.grid[2], 256u);
  EXPECT_EQ(s.block[0], 7u);
  EXPECT_EQ(s.block[1], 7u);
  EXPECT_EQ(s.block[2], 4u);
}

// ---- validity: every rejection names its rule ----

void ExpectInvalid(const absl::StatusOr<OpPlan>& plan, const std::string& rule) {
  ASSERT_FALSE(plan.ok()) << "expected rejection: " << rule;
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
  EXPECT_THAT(std::string(plan.status().message()), HasSubstr(rule));
}

autotvm::ConfigEntity ConvConfig(std::vector<int64_t> f, std::vector<int64_t> y,
                                 std::vector<int64_t> x, int64_t rc, int64_t ry = 3,
                                 int64_t rx = 3) {
  return Config({SplitKnob("tile_f", f), SplitKnob("tile_y", y), SplitKnob("tile_x", x),
                 SplitKnob("tile_rc", {-1, rc}), SplitKnob("tile_ry", {-1, ry}),
                 SplitKnob("tile_rx", {-1, rx}), OtherKnob("auto_unroll_max_step", 512),
                 OtherKnob("unroll_explicit", 1)});
}

TEST(Validity, ConvRejectsEachRule) {
  const OpTemplate* op = Conv2dNchwTemplate();
  autotvm::Workload w = ConvWorkload("conv2d_nchw.cuda", {1, 64, 56, 56}, {128, 64, 3, 3}, {1, 1},
                                     {1, 1, 1, 1}, {1, 1});
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 1, 8, 1}, {-1, 1, 8, 1}, {-1, 1, 32, 1}, 1), kSm90, {}),
      "2048 threads per block > max_threads_per_block 1024");
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 1, 128, 1}, {-1, 1, 1, 1}, {-1, 1, 1, 1}, 1), kSm90, {}),
      "block dim z = 128");
  // AA: 64 channels x 58 x 58 floats = 861 KB.
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 1, 1, 1}, {-1, 1, 1, 56}, {-1, 1, 1, 56}, 64), kSm90, {}),
      "shared memory");
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 8, 1, 8}, {-1, 2, 1, 4}, {-1, 1, 1, 1}, 1), kSm90, {}),
      "512 accumulators per thread > 256 (registers; the kernel would spill) (a tunejit search "
      "rule)");
  // Without tunejit's search rules (a measured record), only the rules TVM had refuse a config.
  DeviceLimits measured = kSm90;
  measured.search_rules = false;
  EXPECT_TRUE(
      op->Specialize(w, ConvConfig({-1, 8, 1, 8}, {-1, 2, 1, 4}, {-1, 1, 1, 1}, 1), measured, {})
          .ok());
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 1, 8, 1}, {-1, 1, 8, 1}, {-1, 1, 32, 1}, 1), measured, {}),
      "2048 threads per block > max_threads_per_block 1024");
  // Batch 8192 x 128 channels in blocks of 1 filter: grid z = 1048576 > 65535.
  autotvm::Workload big = ConvWorkload("conv2d_nchw.cuda", {8192, 1, 4, 4}, {128, 1, 1, 1}, {1, 1},
                                       {0, 0, 0, 0}, {1, 1});
  ExpectInvalid(
      op->Specialize(big, ConvConfig({-1, 1, 1, 1}, {-1, 1, 4, 1}, {-1, 1, 4, 1}, 1, 1, 1), kSm90,
                     {}),
      "grid dim z");
  ExpectInvalid(
      op->Specialize(w, ConvConfig({-1, 1, 0, 1}, {-1, 1, 8, 1}, {-1, 1, 8, 1}, 1), kSm90, {}),
      "tile_f");
}

TEST(Validity, SmemLimitComesFromDeviceLimits) {
  const OpTemplate* op = Conv2dNchwTemplate();
  autotvm::Workload w = ConvWorkload("conv2d_nchw.cuda", {1, 64, 56, 56}, {128, 64, 3, 3}, {1, 1},
                                     {1, 1, 1, 1}, {1, 1});
  // AA 16 x 10 x 34 + WW 16 x 16 x 9 floats = 31 KiB: fine at 48 KiB, rejected at 16 KiB.
  autotvm::ConfigEntity c = ConvConfig({-1, 1, 4, 4}, {-1, 1, 8, 1}, {-1, 1, 32, 1}, 16);
  EXPECT_TRUE(op->Specialize(w, c, kSm90, {}).ok());
  DeviceLimits small = kSm90;
  small.shared_bytes_per_block = 16 * 1024;
  ExpectInvalid(op->Specialize(w, c, small, {}), "shared_bytes_per_block 16384");
}

TEST(Validity, DenseLargeBatchNeedsEqualThreadSplits) {
  ExpectInvalid(DenseLargeBatchTemplate()->Specialize(
                    DenseWorkload("dense_large_batch.cuda", 128, 1000, 4096),
                    Config({SplitKnob("tile_x", {-1, 2, 8, 1}), SplitKnob("tile_y", {-1, 2, 4, 1}),
                            SplitKnob("tile_k", {-1, 8, 2})}),
                    kSm90, {}),
                "tile_x[2] = 8 != tile_y[2] = 4");
  ExpectInvalid(DenseLargeBatchTemplate()->Specialize(
                    DenseWorkload("dense_large_batch.cuda", 128, 1024, 4096),
                    Config({SplitKnob("tile_x", {-1, 1, 4, 32}),
                            SplitKnob("tile_y", {-1, 1, 4, 32}), SplitKnob("tile_k", {-1, 1, 1})}),
                    kSm90, {}),
                "1024 accumulators per thread");
  ExpectInvalid(DenseLargeBatchTemplate()->Specialize(
                    DenseWorkload("dense_large_batch.cuda", 128, 1024, 4096),
                    Config({SplitKnob("tile_x", {-1, 1, 8, 8}), SplitKnob("tile_y", {-1, 1, 8, 8}),
                            SplitKnob("tile_k", {-1, 64, 2})}),
                    kSm90, {}),
                "shared memory 131072 bytes");
}

TEST(Validity, DenseSmallBatchLimits) {
  ExpectInvalid(
      DenseSmallBatchTemplate()->Specialize(DenseWorkload("dense_small_batch.cuda", 4, 10, 25088),
                                            Config({SplitKnob("tile_k", {-1, 1568})}), kSm90, {}),
      "1568 threads per block");
  ExpectInvalid(
      DenseSmallBatchTemplate()->Specialize(DenseWorkload("dense_small_batch.cuda", 70000, 10, 4),
                                            Config({SplitKnob("tile_k", {-1, 4})}), kSm90, {}),
      "grid dim y = 70000");
}

TEST(Validity, MalformedKnobs) {
  const OpTemplate* op = DenseSmallBatchTemplate();
  autotvm::Workload w = DenseWorkload("dense_small_batch.cuda", 4, 10, 64);
  auto missing = op->Specialize(w, Config({}), kSm90, {});
  EXPECT_FALSE(missing.ok());
  ExpectInvalid(op->Specialize(w, Config({SplitKnob("tile_k", {-1, 8, 8})}), kSm90, {}),
                "tile_k has 3 sizes");
  ExpectInvalid(op->Specialize(w, Config({SplitKnob("tile_k", {-1, 0})}), kSm90, {}), "tile_k");
}

TEST(CanImplement, RejectsWhatTheTemplatesCannotDo) {
  EXPECT_FALSE(Conv2dNchwTemplate()
                   ->CanImplement(ConvWorkload("conv2d_nchw.cuda", {1, 8, 8, 8}, {8, 8, 3, 3},
                                               {1, 1}, {1, 1, 1, 1}, {1, 1}, "int8"))
                   .ok());
  EXPECT_FALSE(
      Conv2dNchwTemplate()->CanImplement(DenseWorkload("dense_small_batch.cuda", 1, 2, 3)).ok());
  EXPECT_TRUE(Conv2dNchwTemplate()
                  ->CanImplement(ConvWorkload("conv2d_nchw.cuda", {1, 8, 8, 8}, {8, 8, 3, 3},
                                              {1, 1}, {1, 1, 1, 1}, {1, 1}))
                  .ok());
  EXPECT_FALSE(DepthwiseConv2dNchwTemplate()
                   ->CanImplement(ConvWorkload("depthwise_conv2d_nchw.cuda", {1, 8, 8, 8},
                                               {4, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}))
                   .ok());
}

// ---- fallbacks ----

TEST(Fallback, DenseFollowsTvm) {
  auto small = DenseSmallBatchTemplate()->FallbackConfig(
      DenseWorkload("dense_small_batch.cuda", 1, 1000, 4096));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(*small->Split("tile_k"), (std::vector<int64_t>{-1, 64}));
  auto tiny =
      DenseSmallBatchTemplate()->FallbackConfig(DenseWorkload("dense_small_batch.cuda", 1, 10, 48));
  EXPECT_EQ(*tiny->Split("tile_k"), (std::vector<int64_t>{1, 64}));
  auto large = DenseLargeBatchTemplate()->FallbackConfig(
      DenseWorkload("dense_large_batch.cuda", 128, 1000, 4096));
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(*large->Split("tile_x"), (std::vector<int64_t>{-1, 2, 16, 2}));
  EXPECT_EQ(*large->Split("tile_y"), (std::vector<int64_t>{-1, 2, 16, 2}));
  EXPECT_EQ(*large->Split("tile_k"), (std::vector<int64_t>{-1, 8, 1}));
}

TEST(Fallback, EveryTemplateFallbackSpecializes) {
  std::vector<std::pair<const OpTemplate*, autotvm::Workload>> cases = {
      {DenseSmallBatchTemplate(), DenseWorkload("dense_small_batch.cuda", 3, 1000, 4096)},
      {DenseLargeBatchTemplate(), DenseWorkload("dense_large_batch.cuda", 1, 37, 5)},
      {DenseLargeBatchTemplate(), DenseWorkload("dense_large_batch.cuda", 128, 4096, 25088)},
      {Conv2dNchwTemplate(), SeedConvWorkload()},
      {Conv2dNchwTemplate(), ConvWorkload("conv2d_nchw.cuda", {1, 3, 224, 224}, {64, 3, 7, 7},
                                          {2, 2}, {3, 3, 3, 3}, {1, 1})},
      {Conv2dNchwTemplate(), ConvWorkload("conv2d_nchw.cuda", {1, 512, 28, 28}, {512, 512, 7, 7},
                                          {1, 1}, {12, 12, 12, 12}, {4, 4})},
      {Conv2dNchwTemplate(),
       ConvWorkload("conv2d_nchw.cuda", {2, 5, 3, 2}, {7, 5, 3, 1}, {1, 1}, {1, 0, 1, 0}, {1, 1})},
      {DepthwiseConv2dNchwTemplate(), ConvWorkload("depthwise_conv2d_nchw.cuda", {1, 32, 112, 112},
                                                   {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1})},
      {DepthwiseConv2dNchwTemplate(), ConvWorkload("depthwise_conv2d_nchw.cuda", {1, 8, 5, 5},
                                                   {8, 2, 5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1})},
  };
  for (const auto& [op, w] : cases) {
    auto config = op->FallbackConfig(w);
    ASSERT_TRUE(config.ok()) << w.args.dump() << ": " << config.status();
    auto plan = op->Specialize(w, *config, kSm90, Epilogue{});
    EXPECT_TRUE(plan.ok()) << op->task_name() << " " << w.args.dump() << " " << config->ToString()
                           << ": " << plan.status();
    if (op == Conv2dNchwTemplate() && plan.ok()) {
      const uint64_t threads = plan->kernels[0].shape.threads_per_block();
      EXPECT_GE(threads, w.args[0][1][3].get<int64_t>() >= 8 ? 64u : 1u);
      EXPECT_LE(threads, 256u);
    }
  }
}

// ---- split helpers ----

TEST(Split, FactorCandidatesMatchTvmOrderAndCounts) {
  std::vector<std::vector<int64_t>> l8 = FactorSplitCandidates(8, 4);
  ASSERT_EQ(l8.size(), 20u);
  EXPECT_EQ(l8[0], (std::vector<int64_t>{-1, 1, 1, 1}));
  EXPECT_EQ(l8[1], (std::vector<int64_t>{-1, 2, 1, 1}));
  EXPECT_EQ(l8[4], (std::vector<int64_t>{-1, 1, 2, 1}));
  EXPECT_EQ(l8[10], (std::vector<int64_t>{-1, 1, 1, 2}));
  std::vector<std::vector<int64_t>> l4 = FactorSplitCandidates(4, 3);
  EXPECT_EQ(l4, (std::vector<std::vector<int64_t>>{
                    {-1, 1, 1}, {-1, 2, 1}, {-1, 4, 1}, {-1, 1, 2}, {-1, 2, 2}, {-1, 1, 4}}));
  EXPECT_EQ(FactorSplitCandidates(128, 4).size(), 120u);
  EXPECT_EQ(FactorSplitCandidates(1000, 4).size(), 400u);
  EXPECT_EQ(FactorSplitCandidates(4096, 3).size(), 91u);
  EXPECT_EQ(FactorSplitCandidates(25088, 2).size(), 30u);
  // Seed indices (spec 2.3): K=4096 index 5 -> [-1, 32]; K=25088 index 22 -> [-1, 896].
  EXPECT_EQ(FactorSplitCandidates(4096, 2)[5], (std::vector<int64_t>{-1, 32}));
  EXPECT_EQ(FactorSplitCandidates(25088, 2)[22], (std::vector<int64_t>{-1, 896}));
}

TEST(Split, LargestDivisor) {
  EXPECT_EQ(LargestDivisorAtMost(64, 8), 8);
  EXPECT_EQ(LargestDivisorAtMost(3, 8), 3);
  EXPECT_EQ(LargestDivisorAtMost(13, 8), 1);
  EXPECT_EQ(LargestDivisorAtMost(12, 5), 4);
}

TEST(Split, KernelSplitsSwapOnlyWhenLabelsCannotFit) {
  auto c = [](std::vector<int64_t> ry, std::vector<int64_t> rx) {
    return Config({SplitKnob("tile_ry", ry), SplitKnob("tile_rx", rx)});
  };
  // Square kernel: never swapped.
  EXPECT_FALSE(ReadKernelSplits(c({1, 3}, {3, 1}), 3, 3)->swapped);
  // 7x1 labelled properly.
  auto ok = ReadKernelSplits(c({1, 7}, {1, 1}), 7, 1);
  EXPECT_FALSE(ok->swapped);
  EXPECT_EQ(ok->ry, 7);
  // 7x1 with TopHub's swapped labels.
  auto sw = ReadKernelSplits(c({1, 1}, {1, 7}), 7, 1);
  EXPECT_TRUE(sw->swapped);
  EXPECT_EQ(sw->ry, 7);
  EXPECT_EQ(sw->rx, 1);
  // Generated records (-1) whose inner factors fit as labelled are left alone.
  EXPECT_FALSE(ReadKernelSplits(c({-1, 1}, {-1, 7}), 1, 7)->swapped);
}

// ---- elementwise builders (their kernels are checked in elementwise_test) ----

TEST(Elementwise, BuildersRejectBadArguments) {
  EXPECT_FALSE(BiasReluKernel(0, 3, 4, true).ok());
  EXPECT_FALSE(SoftmaxKernel(3, 0).ok());
  EXPECT_FALSE(QuantizeKernel(10, 0.0f).ok());
  EXPECT_FALSE(QuantizeKernel(10, -1.0f).ok());
  EXPECT_FALSE(DequantizeKernel(ElementType::kFloat32, 10, 1, 1).ok());
  EXPECT_FALSE(RequantizeKernel(10, 0, 1).ok());
  Pool2dParams p;
  p.h = p.w = 4;
  p.pad_top = 2;  // padding must be smaller than the window
  EXPECT_FALSE(MaxPool2dKernel(p, ElementType::kFloat32).ok());
  EXPECT_FALSE(MaxPool2dKernel(Pool2dParams{}, ElementType::kInt32).ok());
  p.pad_top = 0;
  p.h = 1;  // window larger than the input: no output
  EXPECT_FALSE(MaxPool2dKernel(p, ElementType::kFloat32).ok());
}

TEST(Elementwise, BuildersDescribeTheirArguments) {
  auto k = MaxPool2dKernel(Pool2dParams{.n = 2, .c = 3, .h = 8, .w = 8}, ElementType::kInt8);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.source_file, "elementwise.cu");
  EXPECT_EQ(k->spec.name_expression, "tunejit::max_pool2d<signed char>");
  ASSERT_GE(k->args.size(), 2u);
  EXPECT_EQ(k->args[0].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k->args[1].kind, KernelArg::Kind::kOutput);
  EXPECT_EQ(k->shape.block[0], 256u);
  auto q = QuantizeKernel(1000, 0.5f);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->args.back().kind, KernelArg::Kind::kFloat32);
  EXPECT_EQ(q->args.back().f32, 0.5f);
}

}  // namespace
}  // namespace tunejit
