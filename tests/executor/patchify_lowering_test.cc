// How the executor lowers a patchify conv (ViT's patch embedding, tests/executor/
// executor_test_util.h PatchifyNet): at fp16 on the tensor cores one conv step on
// conv2d_nchw_patchify_wgmma.cuda, which reads the graph's float32 NCHW input as it is and writes
// float16 NHWC (converted once where the tokens' reshape needs NCHW), its kernels the patch gather
// and dense_wgmma.cuda's GEMM; every other conv, and every other mode, as before. The CPU
// reference forward's conv is the GEMM of the gathered patches. CPU only.
#include <cmath>
#include <string>
#include <vector>

#include "autotvm/record.h"
#include "executor/kernel_choice.h"
#include "executor/node_tasks.h"
#include "executor/reference_forward.h"
#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/patchify.h"
#include "ops/templates.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using testing::StepNamed;

constexpr char kPatchify[] = "conv2d_nchw_patchify_wgmma.cuda";

autotvm::Target Cuda() { return *autotvm::ParseTarget("cuda"); }
DeviceLimits Limits() { return DeviceLimits::ForArch(GpuArch{9, 0, true}); }

StepProgram Lower(const Graph& g, NumericMode mode) {
  absl::StatusOr<StepProgram> p = LowerToSteps(g, mode);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : StepProgram{};
}

std::vector<std::string> TaskNames(const NodeTask& task) {
  std::vector<std::string> names;
  for (const autotvm::Implementation& impl : task.implementations) {
    names.push_back(impl.workload.task_name);
  }
  return names;
}

std::vector<std::string> KernelLabels(const OpPlan& plan) {
  std::vector<std::string> labels;
  for (const PlannedKernel& k : plan.kernels) labels.push_back(k.label);
  return labels;
}

// ViT-B/16 at batch 32: the patch embedding [32, 3, 224, 224] -> 768 channels of 16x16 patches.
TEST(PatchifyLowering, VitPatchEmbeddingIsPatchGatherThenDenseWgmma) {
  const Graph g = testing::PatchifyNet(32, 224, 224, 16, 768);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores);
  ASSERT_FALSE(p.steps.empty());
  const Step& conv = StepNamed(p, "conv_proj");
  EXPECT_EQ(conv.kind, StepKind::kConv2d);
  EXPECT_EQ(conv.fused, "bias");
  const NodeTask& task = p.tasks[conv.task];
  EXPECT_EQ(task.mode, NumericMode::kFp16TensorCores);
  EXPECT_THAT(TaskNames(task), ElementsAre(kPatchify));
  EXPECT_TRUE(task.forms.nhwc);
  EXPECT_TRUE(task.forms.float_nchw_data);
  EXPECT_TRUE(task.half_output);  // the head's dense reads it, through the tensor ops
  // The graph's float32 NCHW input as it is (no convert step before it); float16 NHWC out.
  EXPECT_EQ(conv.input, p.value_of[*g.FindTensor("input")]);
  EXPECT_EQ(p.steps.front().name, "conv_proj");
  const StepTensor& out = p.tensors[conv.output];
  EXPECT_EQ(out.name, "conv_proj.bias_out");
  EXPECT_EQ(out.dtype, DType::kF16);
  EXPECT_TRUE(out.nhwc);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{32, 768, 14, 14}));
  // The reshape to [N, C, T] reads NCHW order: one convert (float16 NHWC -> NCHW) makes it.
  const Step& convert = p.steps[1];
  EXPECT_EQ(convert.kind, StepKind::kConvert);
  EXPECT_EQ(convert.input, conv.output);
  EXPECT_EQ(p.tensors[convert.output].dtype, DType::kF16);
  EXPECT_FALSE(p.tensors[convert.output].nhwc);
  const int tokens = p.value_of[*g.FindTensor("tokens.reshape.out")];
  EXPECT_EQ(p.tensors[tokens].alias_of, convert.output);

  // No log: the template's fallback, which is dense_wgmma.cuda's for the GEMM 6272 x 768 x 768.
  absl::StatusOr<KernelChoice> choice =
      ChooseKernel(task, nullptr, Cuda(), Limits(), conv.epilogue);
  ASSERT_TRUE(choice.ok()) << choice.status();
  const KernelCandidate& c = choice->candidates.front();
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.task_name, kPatchify);
  const autotvm::Workload gemm = autotvm::MakeDenseWorkload(
      "dense_wgmma.cuda",
      {.m = 6272, .n = 768, .k = 768, .data_dtype = "float16", .out_dtype = "float16"});
  EXPECT_EQ(c.config.ToString(), DenseWgmmaTemplate()->FallbackConfig(gemm)->ToString());
  EXPECT_THAT(KernelLabels(c.plan), ElementsAre("patch_weight_f16", "patch_gather", "gemm_wgmma"));
  EXPECT_EQ(c.plan.kernels[0].phase, PlannedKernel::Phase::kPrepare);
  EXPECT_EQ(c.plan.kernels[1].spec.name_expression, "tunejit::patch_gather<16, 16, 4, float>");
  // dense_wgmma.cuda's kernel: 128 x 128 x 64 tiles, 4 stages, 2 consumers, bias into float16.
  const absl::StatusOr<OpPlan> dense =
      DenseWgmmaTemplate()->Specialize(gemm, c.config, Limits(), conv.epilogue);
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(c.plan.kernels[2].spec.name_expression, dense->kernels[0].spec.name_expression);
  EXPECT_EQ(c.plan.kernels[2].spec.name_expression,
            "tunejit::gemm_wgmma<128, 128, 64, 4, 2, 0, 1, 1, 1>");
  EXPECT_EQ(c.plan.kernels[2].shape.grid[0], dense->kernels[0].shape.grid[0]);
  // The step memory plan takes it (its output is live across the convert).
  EXPECT_TRUE(PlanStepMemory(p).ok());
}

// The conv's value as a graph output too: the float16 NHWC value is converted once more, to the
// float32 NCHW the output is read in.
TEST(PatchifyLowering, ConvOutputReadBackAsFloatNchw) {
  const Graph g = testing::PatchifyNet(2, 32, 32, 16, 64, 0, 0, /*conv_is_output=*/true);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores);
  const Step& conv = StepNamed(p, "conv_proj");
  EXPECT_THAT(TaskNames(p.tasks[conv.task]), ElementsAre(kPatchify));
  const int out = p.value_of[*g.FindTensor("conv_proj.bias_out")];
  EXPECT_NE(out, conv.output);
  EXPECT_EQ(p.tensors[out].dtype, DType::kF32);
  EXPECT_FALSE(p.tensors[out].nhwc);
  EXPECT_TRUE(p.tensors[out].external);
}

// Convs that are not patchify, and the other modes, keep their templates.
TEST(PatchifyLowering, OtherConvsAndModesAreNotLoweredThisWay) {
  auto conv_task = [](const Graph& g, NumericMode mode) {
    const StepProgram p = Lower(g, mode);
    return p.steps.empty() ? NodeTask{} : p.tasks[StepNamed(p, "conv_proj").task];
  };
  const Graph vit = testing::PatchifyNet(2, 32, 32, 16, 768);
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kInt8Dp4a}) {
    const NodeTask t = conv_task(vit, mode);
    EXPECT_EQ(t.mode, NumericMode::kFp32) << NumericModeName(mode);
    EXPECT_THAT(TaskNames(t), ElementsAre("conv2d_nchw.cuda")) << NumericModeName(mode);
  }
  // int8 on the tensor cores: the 3-channel conv stays float (relay.quantize's rule), at fp16
  // on the tensor cores, which is this lowering.
  const NodeTask int8_tc = conv_task(vit, NumericMode::kInt8TensorCores);
  EXPECT_EQ(int8_tc.mode, NumericMode::kFp16TensorCores);
  EXPECT_THAT(TaskNames(int8_tc), ElementsAre(kPatchify));
  // Overlapping patches (16x16 at stride 8) and padded ones (4x4 at stride 4, pad 1), both past
  // the stem template's limits: float32 as before.
  for (const Graph& g : {testing::PatchifyNet(2, 32, 32, 16, 768, /*stride=*/8),
                         testing::PatchifyNet(2, 32, 32, 4, 192, 4, /*pad=*/1)}) {
    const NodeTask t = conv_task(g, NumericMode::kFp16TensorCores);
    EXPECT_EQ(t.mode, NumericMode::kFp32) << t.name;
    for (const std::string& name : TaskNames(t)) EXPECT_NE(name, kPatchify);
  }
}

// ConvNeXt's 4x4 stem with 96 channels: the stem template takes it too and stays its fallback;
// a record of the patchify template (faster) picks it.
TEST(PatchifyLowering, BesideTheStemTheLogDecides) {
  const Graph g = testing::PatchifyNet(8, 64, 64, 4, 96);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores);
  const Step& conv = StepNamed(p, "conv_proj");
  const NodeTask& task = p.tasks[conv.task];
  EXPECT_THAT(TaskNames(task), ElementsAre("conv2d_nchw_stem_mma.cuda", kPatchify));
  absl::StatusOr<KernelChoice> c = ChooseKernel(task, nullptr, Cuda(), Limits(), conv.epilogue);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->candidates.front().task_name, "conv2d_nchw_stem_mma.cuda");
  const autotvm::Workload& patchify = task.implementations[1].workload;
  autotvm::HistoryBest history;
  autotvm::MeasureResult result;
  result.costs = {1e-5};
  history.Add(autotvm::LoadedRecord{
      autotvm::MakeRecord(Cuda(), patchify, 0, *FindOpTemplate(kPatchify)->FallbackConfig(patchify),
                          result),
      "/logs/vit.log", 3, ""});
  c = ChooseKernel(task, &history, Cuda(), Limits(), conv.epilogue);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->candidates.front().task_name, kPatchify);
  EXPECT_EQ(c->candidates.front().record_label, "vit.log:3");
  EXPECT_THAT(KernelLabels(c->candidates.front().plan),
              ElementsAre("patch_weight_f16", "patch_gather", "gemm_wgmma"));
}

// The reference forward pass (the executor tests' ground truth) computes the conv as the graph
// says; it equals the GEMM of the gathered patches with the weight, in NHWC order, with the bias.
TEST(PatchifyLowering, ReferenceForwardConvIsTheGemmOfThePatches) {
  const int64_t n = 2, h = 35, w = 33, patch = 16, co = 24;  // sizes the stride does not divide
  const Graph g = testing::PatchifyNet(n, h, w, patch, co);
  const WeightSet weights = RandomWeights(g, 5);
  const std::vector<float> input = testing::NormalFloats(n * 3 * h * w, 6);
  absl::StatusOr<std::vector<std::vector<float>>> values =
      ReferenceForward(g, weights, {{"input", input}});
  ASSERT_TRUE(values.ok()) << values.status();
  const std::vector<float>& conv = (*values)[*g.FindTensor("conv_proj.bias_out")];
  const std::vector<float>& weight = (*values)[*g.FindTensor("conv_proj.weight")];
  const std::vector<float>& bias = (*values)[*g.FindTensor("conv_proj.bias")];
  autotvm::Conv2dParams p;
  p.n = n, p.ci = 3, p.h = h, p.w = w, p.co = co, p.kh = p.kw = p.stride_h = p.stride_w = patch;
  const PatchifyGeometry geometry = *PatchifyGeometryOf(p);
  ASSERT_EQ(geometry.oh, 2);
  ASSERT_EQ(geometry.ow, 2);
  const int64_t pixels = geometry.oh * geometry.ow, k = geometry.k();
  const std::vector<double> gemm =
      cpuref::DenseFloat(geometry.m(), co, k, cpuref::PatchGather(p, k, input), weight);
  ASSERT_EQ(conv.size(), gemm.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t o = 0; o < co; ++o) {
      for (int64_t px = 0; px < pixels; ++px) {
        const float want = static_cast<float>(gemm[(b * pixels + px) * co + o]) + bias[o];
        EXPECT_NEAR(conv[(b * co + o) * pixels + px], want, 1e-4f * (1 + std::abs(want)))
            << "image " << b << " channel " << o << " pixel " << px;
      }
    }
  }
}

}  // namespace
}  // namespace tunejit
