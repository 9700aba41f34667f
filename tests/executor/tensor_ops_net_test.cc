// The general tensor ops through lowering (CPU): TensorOpsNet (tests/executor/executor_test_util.h)
// becomes one step per op with its inputs as operands (weights among them), reshapes are views,
// every operand stays live through its step, and the tensor-core modes convert the conv's output
// once for the float32 tensor ops; the rank-3 matmuls are batch_matmul.cuda's tuned steps at fp32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "executor/reference_forward.h"
#include "executor/step_kernels.h"
#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> StepKinds(const StepProgram& p) {
  std::vector<std::string> kinds;
  for (const Step& s : p.steps) kinds.emplace_back(StepKindName(s.kind));
  return kinds;
}

TEST(TensorOpsNetTest, Fp32LowersOneStepPerOpWithReshapesAsViews) {
  const Graph g = testing::TensorOpsNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(StepKinds(*p),
              ElementsAre("conv2d", "reduce_mean", "unary", "binary", "unary", "transpose",
                          "layer_norm", "concat", "binary", "transpose", "matmul", "binary",
                          "softmax", "matmul", "unary", "slice", "dense"));
  // The class-token concat reads a weight, then the normalized tokens.
  const Step& concat = p->steps[7];
  ASSERT_EQ(concat.operands.size(), 2u);
  EXPECT_EQ(g.tensor(concat.operands[0].weight).name, "class_token");
  EXPECT_EQ(concat.operands[0].tensor, -1);
  EXPECT_EQ(concat.input, concat.operands[1].tensor);
  // The reshape before the transpose is a view of the hard_swish output.
  const StepTensor& viewed = p->tensors[p->steps[5].input];
  EXPECT_EQ(viewed.name, "tokens.reshape.out");
  EXPECT_EQ(viewed.alias_of, p->steps[4].output);
  // Its two matmuls are rank 3: tuned steps of batch_matmul.cuda at fp32 (the conv and the dense
  // being the other tasks), tensor_ops.cu's untuned kernel at fp16.
  for (int i : {10, 13}) {
    const Step& matmul = p->steps[i];
    ASSERT_GE(matmul.task, 0) << matmul.name;
    EXPECT_EQ(p->tasks[matmul.task].implementations[0].workload.task_name, "batch_matmul.cuda");
    EXPECT_TRUE(p->tasks[matmul.task].forms.y_kn);
  }
  EXPECT_EQ(p->tasks.size(), 4u);
  absl::StatusOr<StepProgram> fp16 = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  for (const Step& s : fp16->steps) {
    if (s.kind == StepKind::kMatMul) EXPECT_EQ(s.task, -1) << s.name;
  }
}

TEST(TensorOpsNetTest, OperandsStayLiveThroughTheirStep) {
  const Graph g = testing::TensorOpsNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(p.ok()) << p.status();
  absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  // "tokens" is read by q, k.transpose and the second matmul: live until the last of them.
  const int tokens = p->value_of[*g.FindTensor("tokens.out")];
  EXPECT_EQ(m->last[tokens], 13);
  for (size_t s = 0; s < p->steps.size(); ++s) {
    for (const StepOperand& o : p->steps[s].operands) {
      if (o.tensor < 0) continue;
      EXPECT_LE(m->first[o.tensor], static_cast<int>(s));
      EXPECT_GE(m->last[o.tensor], static_cast<int>(s));
    }
  }
}

TEST(TensorOpsNetTest, Fp16ConvertsTheConvOutputOnceForTheFloatOps) {
  const Graph g = testing::TensorOpsNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  const int conv = p->value_of[*g.FindTensor("conv.bias_out")];
  ASSERT_GE(conv, 0);
  int converts_of_conv = 0;
  for (const Step& s : p->steps) {
    if (s.kind == StepKind::kConvert && s.input == conv) ++converts_of_conv;
  }
  // Both the reduce_mean and the mul read the same float32 NCHW copy.
  EXPECT_LE(converts_of_conv, 1);
}

// NhwcChainNet (residual add, hard_swish, SiLU, an SE-style gate between tensor-core convs): at
// fp16 everything between the convs stays fp16 NHWC (no convert step), and the residual add and
// the hard_swish after it are the second conv's epilogue.
TEST(TensorOpsNetTest, Fp16NhwcValuesStayFp16ThroughAddPoolAndElementwiseOps) {
  const Graph g = testing::NhwcChainNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<std::string> kinds = StepKinds(*p);
  // The input's convert for the first conv and the output's back to float32, nothing between.
  EXPECT_THAT(kinds, ElementsAre("convert", "conv2d", "conv2d", "clip", "unary",
                                 "global_avg_pool2d", "binary", "bias_add", "conv2d", "convert"));
  EXPECT_EQ(p->steps[2].fused, "bias+residual_add+hard_swish");
  EXPECT_EQ(p->steps[2].residual, p->steps[1].output);
  // sigmoid(x) * x (of the clip's value, no conv's) is one silu step.
  EXPECT_EQ(p->steps[4].unary, UnaryFn::kSilu);
  EXPECT_EQ(p->steps[4].fused, "mul");
  EXPECT_EQ(p->tensors[p->steps[4].output].name, "silu.mul.out");
  for (size_t s = 2; s < 8; ++s) {
    const StepTensor& out = p->tensors[p->steps[s].output];
    EXPECT_EQ(out.dtype, DType::kF16) << kinds[s];
    EXPECT_TRUE(out.nhwc) << kinds[s];
  }
}

// PyTorch's five-op exact GELU is one gelu step when the weights show its constants; without the
// weights, or with another constant, the five ops stay.
TEST(TensorOpsNetTest, ExportedGeluChainIsOneStepWhenItsConstantsAreKnown) {
  const Graph g = testing::GeluNet();
  const WeightSet w = testing::GeluNetWeights(g, 5);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp32, &w);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(StepKinds(*p), ElementsAre("conv2d", "unary", "conv2d"));
  EXPECT_EQ(p->steps[1].unary, UnaryFn::kGelu);
  EXPECT_EQ(p->steps[1].fused, "gelu");
  EXPECT_EQ(p->tensors[p->steps[1].output].name, "gelu.half.out");
  absl::StatusOr<StepProgram> unknown = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(unknown->steps.size(), 7u);
  const WeightSet other = testing::GeluNetWeights(g, 5, /*half=*/0.4f);
  absl::StatusOr<StepProgram> not_gelu = LowerToSteps(g, NumericMode::kFp32, &other);
  ASSERT_TRUE(not_gelu.ok()) << not_gelu.status();
  EXPECT_EQ(not_gelu->steps.size(), 7u);
  // At fp16 the gelu is the tensor-core conv's epilogue activation.
  absl::StatusOr<StepProgram> half = LowerToSteps(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_THAT(StepKinds(*half), ElementsAre("convert", "conv2d", "conv2d", "convert"));
  EXPECT_EQ(half->steps[1].epilogue.activation, Epilogue::Activation::kGelu);
  EXPECT_EQ(half->steps[1].fused, "bias+gelu");
  EXPECT_EQ(half->tensors[half->steps[1].output].name, "gelu.half.out");
}

// GPT-2's gelu_new (eight ops) after the MLP's first dense layer: at fp16 the dense step's
// gelu_tanh epilogue (through the reshape back from rows); at fp32 one gelu_tanh step; with
// another constant, the eight ops stay.
TEST(TensorOpsNetTest, GeluNewIsTheDensesGeluTanhEpilogue) {
  const Graph g = testing::GptMlpNet();
  const WeightSet w = testing::GptMlpNetWeights(g, 5);
  absl::StatusOr<StepProgram> half = LowerToSteps(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_TRUE(half.ok()) << half.status();
  std::vector<std::string> kinds = StepKinds(*half);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "dense"), 2);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "binary"), 0);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "unary"), 0);
  const Step* fc = nullptr;
  for (const Step& s : half->steps) fc = s.name == "fc" ? &s : fc;
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->epilogue.activation, Epilogue::Activation::kGeluTanh);
  EXPECT_EQ(fc->fused, "bias+gelu_tanh");
  EXPECT_EQ(half->tensors[fc->output].name, "act.out.out");

  absl::StatusOr<StepProgram> full = LowerToSteps(g, NumericMode::kFp32, &w);
  ASSERT_TRUE(full.ok()) << full.status();
  kinds = StepKinds(*full);
  ASSERT_EQ(std::count(kinds.begin(), kinds.end(), "unary"), 1);
  for (const Step& s : full->steps) {
    if (s.kind != StepKind::kUnary) continue;
    EXPECT_EQ(s.unary, UnaryFn::kGeluTanh);
    EXPECT_EQ(s.fused, "gelu_tanh");
    EXPECT_EQ(s.name, "act.half");
    EXPECT_EQ(full->tensors[s.output].name, "act.out.out");
  }
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "binary"), 0);

  const WeightSet other = testing::GptMlpNetWeights(g, 5, /*coef=*/0.04f);
  absl::StatusOr<StepProgram> not_gelu = LowerToSteps(g, NumericMode::kFp32, &other);
  ASSERT_TRUE(not_gelu.ok()) << not_gelu.status();
  kinds = StepKinds(*not_gelu);
  EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "binary"), 6);
}

// Llama's RMS norm (seven ops after x ^ 2) is one layer_norm step of the RMS kind (operands x
// and the scale) at fp32 and fp16, x still read by the residual add; a mean over another axis,
// or an epsilon that is not one positive value, stays op by op.
TEST(TensorOpsNetTest, RmsNormIsOneStep) {
  const Graph g = testing::RmsNormNet();
  const WeightSet w = testing::RmsNormNetWeights(g, 7);
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(g, mode, &w);
    ASSERT_TRUE(p.ok()) << p.status();
    std::vector<std::string> kinds = StepKinds(*p);
    kinds.erase(std::remove(kinds.begin(), kinds.end(), "convert"), kinds.end());
    EXPECT_THAT(kinds, ElementsAre("layer_norm", "add")) << NumericModeName(mode);
    for (const Step& s : p->steps) {
      if (s.kind != StepKind::kLayerNorm) continue;
      EXPECT_FLOAT_EQ(s.rms_epsilon, 1e-6f);
      EXPECT_EQ(s.fused, "rms_norm");
      ASSERT_EQ(s.operands.size(), 2u);
      EXPECT_EQ(s.operands[1].weight, *g.FindTensor("norm.weight"));
      EXPECT_EQ(p->tensors[s.output].name, "norm.scale.out");
      absl::StatusOr<std::vector<PlannedKernel>> k = UntunedStepKernels(g, *p, s, {});
      ASSERT_TRUE(k.ok()) << k.status();
      EXPECT_THAT((*k)[0].spec.name_expression, ::testing::HasSubstr("tunejit::rms_norm_warp<"));
    }
  }
  const Graph other_axis = testing::RmsNormNet(2, 8, /*mean_axis=*/1);
  const WeightSet other_w = testing::RmsNormNetWeights(other_axis, 7);
  absl::StatusOr<StepProgram> p = LowerToSteps(other_axis, NumericMode::kFp32, &other_w);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->steps.size(), 8u);
  const WeightSet negative_eps = testing::RmsNormNetWeights(g, 7, /*eps=*/-1e-6f);
  absl::StatusOr<StepProgram> q = LowerToSteps(g, NumericMode::kFp32, &negative_eps);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->steps.size(), 8u);
  // An epsilon weight of several positive values (one per row) is no RMS norm's either.
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    const absl::Span<const uint8_t> b = w.Get(id);
    bytes[id].assign(b.begin(), b.end());
  }
  std::vector<float> per_row(8);
  for (int row = 0; row < 8; ++row) per_row[row] = 1e-6f * static_cast<float>(row + 1);
  std::memcpy(bytes[*g.FindTensor("norm.eps.c")].data(), per_row.data(), 8 * sizeof(float));
  absl::StatusOr<WeightSet> rows_eps = WeightsFromImport(g, std::move(bytes), "rms norm net");
  ASSERT_TRUE(rows_eps.ok()) << rows_eps.status();
  absl::StatusOr<StepProgram> r = LowerToSteps(g, NumericMode::kFp32, &*rows_eps);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->steps.size(), 8u);
}

// Llama's rotary embedding (seven ops) is one rope step reading x and the two tables, at fp32 and
// fp16; a slice that is not x's first half leaves the ops as they are.
TEST(TensorOpsNetTest, RotaryEmbeddingIsOneStep) {
  const Graph g = testing::RopeNet();
  const WeightSet w = RandomWeights(g, 9);
  for (NumericMode mode : {NumericMode::kFp32, NumericMode::kFp16TensorCores}) {
    absl::StatusOr<StepProgram> p = LowerToSteps(g, mode, &w);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_EQ(p->steps.size(), 1u) << NumericModeName(mode);
    const Step& s = p->steps[0];
    EXPECT_EQ(s.kind, StepKind::kRope);
    EXPECT_EQ(s.fused, "rope");
    ASSERT_EQ(s.operands.size(), 3u);
    EXPECT_EQ(s.operands[1].weight, *g.FindTensor("cos"));
    EXPECT_EQ(s.operands[2].weight, *g.FindTensor("sin"));
    EXPECT_EQ(p->tensors[s.output].name, "rot");
    absl::StatusOr<std::vector<PlannedKernel>> k = UntunedStepKernels(g, *p, s, {});
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_EQ((*k)[0].spec.name_expression, "tunejit::rope<float>");
  }
  const Graph shifted = testing::RopeNet(/*lo_start=*/1);
  const WeightSet sw = RandomWeights(shifted, 9);
  absl::StatusOr<StepProgram> p = LowerToSteps(shifted, NumericMode::kFp32, &sw);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->steps.size(), 7u);
}

// At fp16 the conv's NHWC output, viewed as [N, H, W, C], is what the channel layer norm reads
// (float16, no transpose or convert step), and the norm's row-major output is the next convs'
// NHWC input as it is. At fp32 the conv writes
// NCHW, so the first transpose copies; the second is still a view, which the convs read through
// one layout convert.
TEST(TensorOpsNetTest, Fp16ChannelLayerNormTransposesAreViews) {
  const Graph g = testing::LayerNorm2dNet();
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores);
  ASSERT_TRUE(p.ok()) << p.status();
  // The sum, a graph output, is read back float32 NCHW, so it adds the convs' converted outputs.
  EXPECT_THAT(StepKinds(*p), ElementsAre("convert", "conv2d", "layer_norm", "conv2d", "conv2d",
                                         "convert", "convert", "add"));
  const StepTensor& rows = p->tensors[p->value_of[*g.FindTensor("to_nhwc.out")]];
  EXPECT_EQ(rows.alias_of, p->steps[1].output);
  EXPECT_FALSE(rows.nhwc);
  EXPECT_EQ(rows.shape, (std::vector<int64_t>{2, 6, 7, 32}));
  EXPECT_EQ(rows.dtype, DType::kF16);
  const StepTensor& back = p->tensors[p->value_of[*g.FindTensor("to_nchw.out")]];
  EXPECT_EQ(back.alias_of, p->steps[2].output);
  EXPECT_EQ(back.dtype, DType::kF16);
  EXPECT_TRUE(back.nhwc);
  EXPECT_EQ(back.shape, (std::vector<int64_t>{2, 32, 6, 7}));
  // The views keep their roots live: the conv's output through the norm, the norm's through
  // both convs.
  absl::StatusOr<StepMemory> m = PlanStepMemory(*p);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_GE(m->last[p->steps[1].output], 2);
  EXPECT_GE(m->last[p->steps[2].output], 4);
  absl::StatusOr<StepProgram> fp32 = LowerToSteps(g, NumericMode::kFp32);
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_THAT(StepKinds(*fp32), ElementsAre("conv2d", "transpose", "layer_norm", "convert",
                                            "conv2d", "conv2d", "add"));
}

// A Linear layer's GELU behind the reshape back to [N, H, W, C] is the dense's epilogue at fp16:
// no step between the two denses.
TEST(TensorOpsNetTest, Fp16GeluAfterALinearReshapeIsTheDensesEpilogue) {
  const Graph g = testing::GeluMlpNet();
  const WeightSet w = testing::GeluNetWeights(g, 6);
  absl::StatusOr<StepProgram> p = LowerToSteps(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_TRUE(p.ok()) << p.status();
  // The input's convert to float16; the last dense writes the float32 output itself.
  EXPECT_THAT(StepKinds(*p), ElementsAre("convert", "dense", "dense"));
  EXPECT_EQ(p->steps[1].epilogue.activation, Epilogue::Activation::kGelu);
  EXPECT_EQ(p->steps[1].fused, "bias+gelu");
  const StepTensor& out = p->tensors[p->steps[1].output];
  EXPECT_EQ(out.name, "gelu.half.out");
  EXPECT_EQ(out.NumElements(), 32 * 64);
  // The second dense reads the activation's rows as a view.
  EXPECT_EQ(p->tensors[p->steps[2].input].alias_of, p->steps[1].output);
  // At fp32 (no activation epilogue on its dense template) the GELU is one step.
  absl::StatusOr<StepProgram> fp32 = LowerToSteps(g, NumericMode::kFp32, &w);
  ASSERT_TRUE(fp32.ok()) << fp32.status();
  EXPECT_THAT(StepKinds(*fp32), ElementsAre("dense", "unary", "dense"));
}

TEST(TensorOpsNetTest, ReferenceForwardIsFiniteAndNormalizesTheAttention) {
  const Graph g = testing::TensorOpsNet();
  const WeightSet w = RandomWeights(g, 3);
  const std::vector<float> input = testing::NormalFloats(2 * 8 * 6 * 6, 4);
  absl::StatusOr<std::vector<std::vector<float>>> v = ReferenceForward(g, w, {{"input", input}});
  ASSERT_TRUE(v.ok()) << v.status();
  const std::vector<float>& probs = (*v)[*g.FindTensor("probs.out")];
  ASSERT_EQ(probs.size(), 2u * 37 * 37);
  for (int row = 0; row < 2 * 37; ++row) {
    double sum = 0;
    for (int j = 0; j < 37; ++j) sum += probs[row * 37 + j];
    EXPECT_NEAR(sum, 1.0, 1e-5);
  }
  for (float logit : (*v)[*g.FindTensor("logits")]) EXPECT_TRUE(std::isfinite(logit));
}

}  // namespace
}  // namespace tunejit
