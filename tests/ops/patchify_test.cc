// CPU: the patchify conv (ops/patchify.h, conv2d_nchw_patchify_wgmma.cuda): its geometry and the
// convs it refuses, the patch gather's CPU reference against the conv's (the GEMM on the patches
// is the conv, NHWC), the gather and weight kernels' plans, what the template offers, its plan
// around dense_wgmma.cuda's (arguments moved onto the workspaces, split-K), its space and
// fallback, and NVRTC sm_90a builds of whole plans. The GPU test is patchify_gpu_test.cc.
#include "ops/patchify.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/cpu_reference.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/offers.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

// data [n, c, h, w], `co` channels of k x k patches at stride k (or `stride`), symmetric `pad`.
autotvm::Conv2dParams Conv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t co, int k,
                           int stride = 0, int pad = 0) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = c, p.h = h, p.w = w, p.co = co, p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride > 0 ? stride : k;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  return p;
}

autotvm::Workload Workload(const autotvm::Conv2dParams& conv, const std::string& out = "float16") {
  autotvm::Conv2dParams p = conv;
  p.out_dtype = out;
  return autotvm::MakeConv2dWorkload(autotvm::kConv2dNchwPatchifyWgmma, p);
}

const OpTemplate& Op() { return *FindOpTemplate(autotvm::kConv2dNchwPatchifyWgmma); }

std::string Message(const absl::Status& s) { return std::string(s.message()); }

// ViT-B/16's patch embedding at batch 32: 6272 x 768 x 768.
autotvm::Conv2dParams VitB16() { return Conv(32, 3, 224, 224, 768, 16); }

TEST(PatchifyGeometry, VitAndPaddedPatches) {
  absl::StatusOr<PatchifyGeometry> g = PatchifyGeometryOf(VitB16());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->oh, 14);
  EXPECT_EQ(g->ow, 14);
  EXPECT_EQ(g->m(), 6272);
  EXPECT_EQ(g->k(), 768);
  EXPECT_EQ(g->kp(), 768);
  // ViT-H/14: 588 patch values, padded to 592 (16-byte rows of float16).
  g = PatchifyGeometryOf(Conv(2, 3, 224, 224, 1280, 14));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->k(), 588);
  EXPECT_EQ(g->kp(), 592);
  // A size the stride does not divide: the conv's floor, the last rows and columns unread.
  g = PatchifyGeometryOf(Conv(1, 3, 35, 37, 8, 16));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->oh, 2);
  EXPECT_EQ(g->ow, 2);
}

TEST(PatchifyGeometry, RefusesConvsThatAreNotPatchify) {
  const autotvm::Conv2dParams vit = VitB16();
  autotvm::Conv2dParams p = Conv(2, 3, 32, 32, 64, 16, /*stride=*/8);  // overlapping patches
  EXPECT_EQ(PatchifyGeometryOf(p).status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("is not the stride"));
  p = Conv(2, 3, 32, 32, 64, 3, 1, 1);  // VGG's 3x3 stem
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("is not the stride"));
  p = Conv(2, 3, 32, 32, 64, 4, 4, 1);  // padded
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("padding"));
  p = vit;
  p.pad_right = 1;
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("padding"));
  p = vit;
  p.dilation_h = 2;
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("dilation"));
  p = vit;
  p.groups = 3;
  p.co = 768;
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("groups"));
  p = vit;
  p.kw = 8;  // 16 x 8 patches at a 16 x 16 stride
  EXPECT_THAT(Message(PatchifyGeometryOf(p).status()), HasSubstr("is not the stride"));
  // A patch larger than the input, and empty shapes.
  EXPECT_EQ(PatchifyGeometryOf(Conv(2, 3, 8, 32, 64, 16)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PatchifyGeometryOf(Conv(0, 3, 32, 32, 64, 16)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PatchifyGeometryOf(Conv(2, 3, 32, 32, 0, 16)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The GEMM of the gathered patches with the weight (both zero-padded to `columns`) is the conv,
// its [N*OH*OW, CO] rows the NHWC layout of the conv's NCHW output.
void ExpectGemmIsConv(const autotvm::Conv2dParams& p, int64_t columns, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << p.ci << "x" << p.h << "x" << p.w << " by " << p.kh << "x"
                                    << p.kw << " into " << p.co << ", " << columns << " columns");
  const int64_t k = p.ci * p.kh * p.kw, oh = p.OutH(), ow = p.OutW(), m = p.n * oh * ow;
  const std::vector<float> data = testing::RandomFloats(p.n * p.ci * p.h * p.w, seed);
  const std::vector<float> weight = testing::RandomFloats(p.co * k, seed + 1);
  const std::vector<float> patches = cpuref::PatchGather(p, columns, data);
  ASSERT_EQ(patches.size(), static_cast<size_t>(m * columns));
  std::vector<float> padded(p.co * columns, 0.0f);
  for (int64_t o = 0; o < p.co; ++o) {
    for (int64_t col = 0; col < k; ++col) padded[o * columns + col] = weight[o * k + col];
  }
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = k; col < columns; ++col) {
      ASSERT_EQ(patches[row * columns + col], 0.0f) << "row " << row << " column " << col;
    }
  }
  const std::vector<double> gemm = cpuref::DenseFloat(m, p.co, columns, patches, padded);
  const std::vector<double> conv = cpuref::Conv2dFloat(p, data, weight);
  ASSERT_EQ(conv.size(), gemm.size());
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t o = 0; o < p.co; ++o) {
      for (int64_t pixel = 0; pixel < oh * ow; ++pixel) {
        const double want = conv[(n * p.co + o) * oh * ow + pixel];
        const double got = gemm[(n * oh * ow + pixel) * p.co + o];
        ASSERT_NEAR(got, want, 1e-9 * (1 + std::abs(want)))
            << "image " << n << " channel " << o << " pixel " << pixel;
      }
    }
  }
}

TEST(PatchGatherReference, GemmOnThePatchesIsTheConv) {
  ExpectGemmIsConv(Conv(2, 3, 32, 32, 64, 16), 768, 1);   // a small ViT: 2x2 patches of 16x16
  ExpectGemmIsConv(Conv(2, 3, 16, 20, 24, 4), 48, 2);     // ConvNeXt / Swin's 4x4
  ExpectGemmIsConv(Conv(1, 3, 12, 12, 5, 2), 16, 3);      // 12 values padded to 16
  ExpectGemmIsConv(Conv(2, 3, 35, 37, 6, 16), 768, 4);    // the stride does not divide H, W
  autotvm::Conv2dParams rect = Conv(2, 2, 12, 18, 7, 1);  // 4 x 6 patches at stride 4 x 6
  rect.kh = rect.stride_h = 4;
  rect.kw = rect.stride_w = 6;
  ExpectGemmIsConv(rect, 48, 5);
}

TEST(PatchGatherReference, RowsAreThePatchesInWeightOrder) {
  // One image 1 x 2 x 4 x 4 (values 0..31), 2x2 patches: row 1 is the patch at (0, 1).
  const autotvm::Conv2dParams p = Conv(1, 2, 4, 4, 1, 2);
  std::vector<float> data(32);
  for (int i = 0; i < 32; ++i) data[i] = static_cast<float>(i);
  const std::vector<float> patches = cpuref::PatchGather(p, 8, data);
  ASSERT_EQ(patches.size(), 4u * 8);
  const std::vector<float> row1(patches.begin() + 8, patches.begin() + 16);
  // (c 0: rows 0-1, columns 2-3), then (c 1: the same, 16 on).
  EXPECT_THAT(row1, ElementsAre(2, 3, 6, 7, 18, 19, 22, 23));
}

TEST(PatchGatherKernel, PlansVectorAccessesAndRefusesBadInput) {
  const PatchifyGeometry vit = *PatchifyGeometryOf(VitB16());
  absl::StatusOr<PlannedKernel> k = PatchGatherKernel(vit, ElementType::kFloat32);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.source_file, "patchify.cu");
  EXPECT_EQ(k->spec.name_expression, "tunejit::patch_gather<16, 16, 4, float>");
  EXPECT_EQ(k->args[0].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k->args[1].kind, KernelArg::Kind::kOutput);
  std::vector<int64_t> ints;
  for (size_t i = 2; i < k->args.size(); ++i) ints.push_back(k->args[i].index_or_int);
  // c, h, w, oh, ow, kp, and a thread per (pixel, channel, patch row): 6272 x 48.
  EXPECT_THAT(ints, ElementsAre(3, 224, 224, 14, 14, 768, 6272 * 48));
  // Odd widths load one element at a time; 2-wide patches two; float16 data.
  k = PatchGatherKernel(*PatchifyGeometryOf(Conv(1, 3, 35, 37, 8, 16)), ElementType::kFloat32);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.name_expression, "tunejit::patch_gather<16, 16, 1, float>");
  const PatchifyGeometry padded = *PatchifyGeometryOf(Conv(2, 3, 12, 12, 8, 2));
  k = PatchGatherKernel(padded, ElementType::kFloat16);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.name_expression, "tunejit::patch_gather<2, 2, 2, tunejit::f16>");
  EXPECT_EQ(k->args.back().index_or_int, 2 * 36 * (3 * 2 + 1));  // + a zero-columns thread a row
  // Element types other than float, inconsistent geometry, int overflow.
  EXPECT_EQ(PatchGatherKernel(vit, ElementType::kInt8).status().code(),
            absl::StatusCode::kInvalidArgument);
  PatchifyGeometry bad = vit;
  bad.oh = 15;  // 15 x 16 rows > 224
  EXPECT_EQ(PatchGatherKernel(bad, ElementType::kFloat32).status().code(),
            absl::StatusCode::kInvalidArgument);
  PatchifyGeometry huge = vit;
  huge.n = 1 << 20;
  EXPECT_THAT(Message(PatchGatherKernel(huge, ElementType::kFloat32).status()),
              HasSubstr("does not fit"));
  // The weight: [CO, KP] float16 with zero columns.
  absl::StatusOr<PlannedKernel> w = PatchWeightKernel(padded, 8);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->spec.name_expression, "tunejit::patch_weight_f16");
  EXPECT_EQ(w->args[2].index_or_int, 12);
  EXPECT_EQ(w->args[3].index_or_int, 16);
  EXPECT_EQ(w->args[4].index_or_int, 8 * 16);
  EXPECT_FALSE(PatchWeightKernel(padded, 0).ok());
}

int CountOffers(const autotvm::Conv2dParams& p, NumericMode mode, const std::string& task) {
  int n = 0;
  for (const autotvm::Implementation& impl : testing::OfferedConv(p, mode, true)) {
    n += impl.workload.task_name == task;
  }
  return n;
}

TEST(PatchifyOffers, ViTAloneSwinBesideTheStemOthersNever) {
  const std::string patchify = autotvm::kConv2dNchwPatchifyWgmma;
  // ViT: past the stem's limits (768 patch values, 768 channels): the only implementation.
  std::vector<autotvm::Implementation> impls =
      testing::OfferedConv(VitB16(), NumericMode::kFp16TensorCores, true);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].workload.Key(), Workload(VitB16()).Key());
  absl::StatusOr<autotvm::Conv2dParams> back = autotvm::ParseConv2dWorkload(impls[0].workload);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->nhwc_out);
  EXPECT_EQ(back->data_dtype, "float32");
  // A float32 output where no conv or dense reads it.
  impls = testing::OfferedConv(VitB16(), NumericMode::kFp16TensorCores, false);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].workload.args.back(), "float32");
  // ConvNeXt's 4x4 stem: the stem template first (the fallback), this one beside it.
  impls = testing::OfferedConv(Conv(32, 3, 224, 224, 96, 4), NumericMode::kFp16TensorCores, true);
  ASSERT_EQ(impls.size(), 2u);
  EXPECT_EQ(impls[0].workload.task_name, autotvm::kConv2dNchwStemMma);
  EXPECT_EQ(impls[1].workload.task_name, patchify);
  // Swin-L's 4x4 stem, 192 channels: past the stem's 128.
  EXPECT_EQ(CountOffers(Conv(32, 3, 224, 224, 192, 4), NumericMode::kFp16TensorCores, patchify), 1);
  // Not patchify: overlapping, padded, dilated or grouped convs.
  EXPECT_EQ(CountOffers(Conv(32, 3, 224, 224, 768, 16, 8), NumericMode::kFp16TensorCores, patchify),
            0);
  EXPECT_EQ(
      CountOffers(Conv(32, 3, 224, 224, 64, 3, 1, 1), NumericMode::kFp16TensorCores, patchify), 0);
  EXPECT_EQ(
      CountOffers(Conv(32, 3, 224, 224, 64, 7, 2, 3), NumericMode::kFp16TensorCores, patchify), 0);
  autotvm::Conv2dParams q = VitB16();
  q.dilation_h = q.dilation_w = 2;
  EXPECT_EQ(CountOffers(q, NumericMode::kFp16TensorCores, patchify), 0);
  // ConvNeXt's 2x2 downsample of float16 NHWC channels: conv2d_nhwc_wgmma.cuda's (rank 0).
  EXPECT_EQ(CountOffers(Conv(32, 96, 56, 56, 192, 2), NumericMode::kFp16TensorCores, patchify), 0);
  // Other modes keep their templates.
  for (NumericMode mode :
       {NumericMode::kFp32, NumericMode::kInt8Dp4a, NumericMode::kInt8TensorCores}) {
    EXPECT_EQ(CountOffers(VitB16(), mode, patchify), 0) << NumericModeName(mode);
  }
}

TEST(PatchifyTemplate, RefusesBadWorkloads) {
  EXPECT_TRUE(Op().CanImplement(Workload(VitB16())).ok()) << Op().CanImplement(Workload(VitB16()));
  EXPECT_TRUE(Op().CanImplement(Workload(VitB16(), "float32")).ok());
  EXPECT_THAT(Message(Op().CanImplement(Workload(Conv(2, 3, 32, 32, 64, 16, 8)))),
              HasSubstr("is not the stride"));
  EXPECT_THAT(Message(Op().CanImplement(Workload(Conv(2, 3, 32, 32, 64, 4, 4, 1)))),
              HasSubstr("padding"));
  EXPECT_THAT(Message(Op().CanImplement(Workload(VitB16(), "int32"))), HasSubstr("float32 x"));
  autotvm::Conv2dParams half = VitB16();
  half.data_dtype = half.kernel_dtype = "float16";
  EXPECT_FALSE(Op().CanImplement(Workload(half)).ok());
  autotvm::Workload other = Workload(VitB16());
  other.task_name = autotvm::kConv2dNchwStemMma;
  EXPECT_FALSE(Op().CanImplement(other).ok());
  // Pre-Hopper GPUs have no wgmma: the GEMM's rule, said as this task's.
  const autotvm::Workload w = Workload(VitB16());
  const absl::Status ampere =
      Op().Specialize(w, *Op().FallbackConfig(w), DeviceLimits::ForArch(GpuArch{8, 0, false}), {})
          .status();
  EXPECT_FALSE(ampere.ok());
  EXPECT_THAT(Message(ampere), HasSubstr("conv2d_nchw_patchify_wgmma.cuda: the GEMM: "));
  // A residual is conv2d_nhwc_wgmma.cuda's alone.
  EXPECT_FALSE(Op().Specialize(w, *Op().FallbackConfig(w), kHopper, {.residual = true}).ok());
}

const PlannedKernel& KernelLabelled(const OpPlan& plan, const std::string& label) {
  for (const PlannedKernel& k : plan.kernels) {
    if (k.label == label) return k;
  }
  ADD_FAILURE() << "no kernel " << label;
  return plan.kernels.front();
}

// The fallback of ViT-B/16's GEMM (6272 x 768 x 768) is dense_wgmma.cuda's: 128 x 128 tiles, two
// consumer warpgroups, 4 stages of 64 K; the plan is the weight's conversion (once), the gather,
// and the GEMM reading both from the workspaces.
TEST(PatchifyTemplate, PlansTheGatherThenDenseWgmma) {
  const autotvm::Workload w = Workload(VitB16());
  absl::StatusOr<autotvm::ConfigEntity> fallback = Op().FallbackConfig(w);
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(
      fallback->ToString(),
      DenseWgmmaTemplate()
          ->FallbackConfig(autotvm::MakeDenseWorkload(
              "dense_wgmma.cuda",
              {.m = 6272, .n = 768, .k = 768, .data_dtype = "float16", .out_dtype = "float16"}))
          ->ToString());
  EXPECT_EQ(*fallback->Other("tile_m"), 128);
  EXPECT_EQ(*fallback->Other("tile_n"), 128);
  EXPECT_EQ(*fallback->Other("tile_k"), 64);
  EXPECT_EQ(*fallback->Other("consumer_wg"), 2);
  const Epilogue e{.bias = true, .activation = Epilogue::Activation::kHardSwish};
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, *fallback, kHopper, e);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 3u);
  const PlannedKernel& weight = plan->kernels[0];
  const PlannedKernel& gather = plan->kernels[1];
  const PlannedKernel& gemm = plan->kernels[2];
  EXPECT_EQ(weight.label, "patch_weight_f16");
  EXPECT_EQ(weight.phase, PlannedKernel::Phase::kPrepare);
  EXPECT_EQ(weight.args[0].kind, KernelArg::Kind::kInput);  // the float32 OIHW weight
  EXPECT_EQ(weight.args[0].index_or_int, 1);
  EXPECT_EQ(weight.args[1].kind, KernelArg::Kind::kWorkspace);
  EXPECT_EQ(weight.args[1].index_or_int, 1);
  EXPECT_EQ(gather.label, "patch_gather");
  EXPECT_EQ(gather.phase, PlannedKernel::Phase::kRun);
  EXPECT_EQ(gather.args[0].kind, KernelArg::Kind::kInput);  // the float32 NCHW data
  EXPECT_EQ(gather.args[0].index_or_int, 0);
  EXPECT_EQ(gather.args[1].kind, KernelArg::Kind::kWorkspace);
  EXPECT_EQ(gather.args[1].index_or_int, 0);
  EXPECT_EQ(gemm.label, "gemm_wgmma");
  EXPECT_EQ(gemm.spec.source_file, "gemm_wgmma.cu");
  EXPECT_EQ(gemm.spec.name_expression,
            "tunejit::gemm_wgmma<128, 128, 64, 4, 2, 0, 1, 1, 1, "
            "tunejit::Act<tunejit::ActKind::kHardSwish>>");
  EXPECT_TRUE(gemm.spec.arch_specific);
  EXPECT_EQ(gemm.shape.grid[0], 132u);  // persistent: 294 tiles
  // Tensor maps of the patches and the float16 weight; bias, output and shapes as the dense.
  ASSERT_EQ(plan->tensor_maps.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(plan->tensor_maps[i].tensor.kind, KernelArg::Kind::kWorkspace);
    EXPECT_EQ(plan->tensor_maps[i].tensor.index_or_int, i);
    EXPECT_EQ(gemm.args[i].kind, KernelArg::Kind::kTensorMap);
  }
  EXPECT_EQ(gemm.args[2].kind, KernelArg::Kind::kInput);  // bias
  EXPECT_EQ(gemm.args[2].index_or_int, 2);
  EXPECT_EQ(gemm.args[4].kind, KernelArg::Kind::kOutput);
  EXPECT_EQ(gemm.args[5].index_or_int, 6272);
  EXPECT_EQ(gemm.args[6].index_or_int, 768);
  EXPECT_EQ(gemm.args[7].index_or_int, 768);
  EXPECT_THAT(plan->workspace_bytes, ElementsAre(6272 * 768 * 2, 768 * 768 * 2));
  EXPECT_THAT(plan->workspace_persistent, ElementsAre(false, true));
}

TEST(PatchifyTemplate, SplitKSlicesFollowOurWorkspaces) {
  const autotvm::Workload w = Workload(Conv(2, 3, 224, 224, 768, 16), "float32");
  autotvm::ConfigEntity config = *Op().FallbackConfig(w);
  for (autotvm::Knob& knob : config.knobs) {
    if (knob.name == "split_k") knob = OtherKnob("split_k", 4);
  }
  absl::StatusOr<OpPlan> plan = Op().Specialize(w, config, kHopper, {.bias = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 4u);
  EXPECT_EQ(KernelLabelled(*plan, "gemm_wgmma").args[4].kind, KernelArg::Kind::kWorkspace);
  EXPECT_EQ(KernelLabelled(*plan, "gemm_wgmma").args[4].index_or_int, 2);
  const PlannedKernel& sum = KernelLabelled(*plan, "split_k_sum");
  EXPECT_EQ(sum.args[0].kind, KernelArg::Kind::kWorkspace);
  EXPECT_EQ(sum.args[0].index_or_int, 2);
  EXPECT_EQ(sum.args[1].kind, KernelArg::Kind::kInput);  // bias
  EXPECT_EQ(sum.args[1].index_or_int, 2);
  EXPECT_THAT(plan->workspace_bytes, ElementsAre(392 * 768 * 2, 768 * 768 * 2, 4 * 392 * 768 * 4));
  EXPECT_THAT(plan->workspace_persistent, ElementsAre(false, true, false));
}

TEST(PatchifyTemplate, SpaceIsDenseWgmmasAndPaddedKFitsTma) {
  const autotvm::Workload w = Workload(VitB16());
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_TRUE(HasConfigSpace(autotvm::kConv2dNchwPatchifyWgmma));
  EXPECT_EQ(space->size(), 3 * 4 * 2 * 5 * 2 * 4);
  // ViT-H/14's 588 patch values: the GEMM's K is 592, the patch rows' padded length.
  const autotvm::Workload h14 = Workload(Conv(2, 3, 224, 224, 1280, 14));
  absl::StatusOr<OpPlan> plan = Op().Specialize(h14, *Op().FallbackConfig(h14), kHopper, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(KernelLabelled(*plan, "gemm_wgmma").args[7].index_or_int, 592);
  EXPECT_EQ(KernelLabelled(*plan, "patch_gather").args[7].index_or_int, 592);
  EXPECT_THAT(plan->workspace_bytes, ElementsAre(2 * 256 * 592 * 2, 1280 * 592 * 2));
}

// Whole plans build with NVRTC for sm_90a: ViT's with bias and an activation into float16, one
// requantizing to int8 (int8 --tensor-cores), a padded K with split-K into float32.
TEST(PatchifyTemplate, PlansCompileForSm90a) {
  struct Case {
    autotvm::Workload workload;
    Epilogue epilogue;
    int64_t split_k;
  };
  const std::vector<Case> cases = {
      {Workload(VitB16()), {.bias = true, .activation = Epilogue::Activation::kSilu}, 1},
      {Workload(Conv(8, 3, 64, 64, 192, 4)),
       {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
       1},
      {Workload(Conv(2, 3, 42, 42, 96, 14), "float32"), {.bias = true}, 2},
  };
  KernelCompiler compiler(nullptr);
  for (const Case& c : cases) {
    autotvm::ConfigEntity config = *Op().FallbackConfig(c.workload);
    for (autotvm::Knob& knob : config.knobs) {
      if (knob.name == "split_k") knob = OtherKnob("split_k", c.split_k);
    }
    absl::StatusOr<OpPlan> plan = Op().Specialize(c.workload, config, kHopper, c.epilogue);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const PlannedKernel& k : plan->kernels) {
      absl::StatusOr<CompiledKernel> compiled = compiler.Compile(k.spec, GpuArch{9, 0, false});
      ASSERT_TRUE(compiled.ok()) << k.spec.name_expression << ": " << compiled.status();
      if (k.label == "gemm_wgmma") {
        EXPECT_TRUE(absl::StrContains(compiled->program.ptx, "wgmma.mma_async"))
            << k.spec.name_expression;
      }
    }
  }
  // The float16-data gather, which the template does not use.
  absl::StatusOr<PlannedKernel> gather =
      PatchGatherKernel(*PatchifyGeometryOf(Conv(2, 3, 224, 224, 1280, 14)), ElementType::kFloat16);
  ASSERT_TRUE(gather.ok()) << gather.status();
  absl::StatusOr<CompiledKernel> compiled = compiler.Compile(gather->spec, GpuArch{9, 0, false});
  EXPECT_TRUE(compiled.ok()) << compiled.status();
}

}  // namespace
}  // namespace tunejit
