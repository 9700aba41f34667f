// How the executor lowers attention (executor/attention_fusion.h, tests/executor/
// executor_test_util.h AttentionNet): at fp16 on the tensor cores, with the weights, ViT's chain
// (Q * c, K^T * c, Q K^T, softmax, P V) and BERT's ((Q K^T) / sqrt(D) + mask, softmax, P V),
// each with the transpose after them, are one attention step on attention_mma.cuda (its fallback
// kernel, the output written through strides into the transpose's [B, S, H, D]); no softmax,
// matmul, scale or transpose step is left of them. fp32, a missing weight set, a head dim the
// template does not take, or a chain tensor read elsewhere keep the unfused steps. CPU only.
#include <cmath>
#include <string>
#include <vector>

#include "autotvm/record.h"
#include "executor/attention_fusion.h"
#include "executor/step_kernels.h"
#include "executor/step_program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/split.h"
#include "tests/executor/executor_test_util.h"

namespace tunejit {
namespace {

using testing::AttentionStyle;
using ::testing::HasSubstr;

StepProgram Lower(const Graph& g, NumericMode mode, const WeightSet* w) {
  absl::StatusOr<StepProgram> p = LowerToSteps(g, mode, w);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : StepProgram{};
}

int CountKind(const StepProgram& p, StepKind kind) {
  int n = 0;
  for (const Step& s : p.steps) n += s.kind == kind ? 1 : 0;
  return n;
}

const Step* FindStep(const StepProgram& p, const std::string& name) {
  for (const Step& s : p.steps) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

int ValueOf(const Graph& g, const StepProgram& p, const std::string& tensor) {
  return p.value_of[*g.FindTensor(tensor)];
}

TEST(AttentionLowering, VitChainIsOneAttentionStep) {
  const Graph g = testing::AttentionNet(AttentionStyle::kVit, 2, 37, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 1);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 0);
  EXPECT_EQ(CountKind(p, StepKind::kMatMul), 0);
  EXPECT_EQ(CountKind(p, StepKind::kBinary), 0);  // both scales are in the step
  for (const char* gone : {"q.bhsd", "k.bhsd", "v.bhsd", "k.t", "q.scale", "k.scale", "scores",
                           "probs", "attend.bshd"}) {
    EXPECT_EQ(FindStep(p, gone), nullptr) << gone;
  }
  EXPECT_EQ(CountKind(p, StepKind::kTranspose), 0);
  const Step& s = *FindStep(p, "attend");
  EXPECT_EQ(s.kind, StepKind::kAttention);
  EXPECT_EQ(s.fused, "attention");
  ASSERT_EQ(s.operands.size(), 3u);
  // Q, K and V straight from their projections' float16 [B * S, E] outputs: no head transposes.
  EXPECT_EQ(s.operands[0].tensor, ValueOf(g, p, "q.bias_out"));
  EXPECT_EQ(s.operands[1].tensor, ValueOf(g, p, "k.bias_out"));
  EXPECT_EQ(s.operands[2].tensor, ValueOf(g, p, "v.bias_out"));
  for (const StepOperand& o : s.operands) EXPECT_EQ(p.tensors[o.tensor].dtype, DType::kF16);
  // The output is the transpose's [B, S, H, D], float16, read by the output dense as it is.
  EXPECT_EQ(s.output, ValueOf(g, p, "attend.bshd.out"));
  EXPECT_EQ(p.tensors[s.output].dtype, DType::kF16);
  EXPECT_EQ(p.tensors[s.output].shape, (std::vector<int64_t>{2, 37, 2, 64}));
  const AttentionParams& a = s.attention;
  EXPECT_EQ(a.batch, 2);
  EXPECT_EQ(a.heads, 2);
  EXPECT_EQ(a.seq_q, 37);
  EXPECT_EQ(a.seq_kv, 37);
  EXPECT_EQ(a.head_dim, 64);
  EXPECT_EQ(a.mask, AttentionMask::kNone);
  EXPECT_NEAR(s.attention_layout.scale, 0.125, 1e-7);
  const AttentionStrides& o = s.attention_layout.o;
  EXPECT_EQ(o.batch, 37 * 128);
  EXPECT_EQ(o.head, 64);
  EXPECT_EQ(o.seq, 128);
  for (const AttentionStrides* in :
       {&s.attention_layout.q, &s.attention_layout.k, &s.attention_layout.v}) {
    EXPECT_EQ(in->batch, 37 * 128);
    EXPECT_EQ(in->head, 64);
    EXPECT_EQ(in->seq, 128);
    EXPECT_EQ(in->offset, 0);
  }

  absl::StatusOr<std::vector<PlannedKernel>> k = UntunedStepKernels(g, p, s, {});
  ASSERT_TRUE(k.ok()) << k.status();
  ASSERT_EQ(k->size(), 1u);
  EXPECT_EQ((*k)[0].spec.name_expression,
            "tunejit::attention_fwd<tunejit::AttnTile<64, 64, 64, 4, 2>, "
            "tunejit::AttnMask::kNone>");
  EXPECT_EQ((*k)[0].args[5].int64s,
            (std::vector<int64_t>{37 * 128, 64, 128, 0, 37 * 128, 64, 128, 0, 37 * 128, 64, 128, 0,
                                  37 * 128, 64, 128, 0, 0}));
  ASSERT_TRUE(PlanStepMemory(p).ok());
}

TEST(AttentionLowering, BertChainTakesTheScaleAndTheMask) {
  const Graph g = testing::AttentionNet(AttentionStyle::kBert, 3, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 2);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 0);
  EXPECT_EQ(CountKind(p, StepKind::kBinary), 0);
  const Step& s = *FindStep(p, "attend");
  ASSERT_EQ(s.operands.size(), 4u);
  // The graph's float32 mask input as it is.
  EXPECT_EQ(s.operands[3].tensor, ValueOf(g, p, "mask"));
  EXPECT_EQ(p.tensors[s.operands[3].tensor].dtype, DType::kF32);
  EXPECT_EQ(s.attention.mask, AttentionMask::kF32);
  EXPECT_EQ(s.attention_layout.mask_batch, 128);
  EXPECT_NEAR(s.attention_layout.scale, 0.125, 1e-7);
  absl::StatusOr<std::vector<PlannedKernel>> k = UntunedStepKernels(g, p, s, {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT((*k)[0].spec.name_expression, HasSubstr("tunejit::AttnMask::kF32"));
}

// BERT through scaled_dot_product_attention: K^T is one transpose (0, 2, 3, 1) of K's
// [B, S, H, D] and a same-shape reshape follows P V; K is still read from its projection.
TEST(AttentionLowering, BertSdpaChainReadsKThroughTheMergedTranspose) {
  const Graph g = testing::AttentionNet(AttentionStyle::kBertSdpa, 2, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 8);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_EQ(CountKind(p, StepKind::kTranspose), 0);
  EXPECT_EQ(CountKind(p, StepKind::kBinary), 0);
  const Step& s = *FindStep(p, "attend");
  EXPECT_EQ(s.operands[1].tensor, ValueOf(g, p, "k.bias_out"));
  const AttentionStrides& k = s.attention_layout.k;
  EXPECT_EQ(k.batch, 128 * 128);
  EXPECT_EQ(k.head, 64);
  EXPECT_EQ(k.seq, 128);
  EXPECT_EQ(s.output, ValueOf(g, p, "attend.bshd.out"));
  EXPECT_EQ(s.attention_layout.o.seq, 128);
  EXPECT_NEAR(s.attention_layout.scale, 0.125, 1e-7);
}

// A boolean padding mask as torch.onnx exports it: a weight [B, 1, S, S] whose query rows repeat,
// read with a batch stride of S * S, and the NaN guard after the softmax inside the step.
TEST(AttentionLowering, BoolMaskChainTakesTheRepeatedMaskAndTheGuard) {
  const Graph g = testing::AttentionNet(AttentionStyle::kBertBoolMask, 3, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 2);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 0);
  EXPECT_EQ(CountKind(p, StepKind::kUnary), 0);
  const Step& s = *FindStep(p, "attend");
  ASSERT_EQ(s.operands.size(), 4u);
  EXPECT_EQ(s.operands[3].weight, *g.FindTensor("mask"));
  EXPECT_EQ(s.attention_layout.mask_batch, 128 * 128);
}

// A decoder's causal mask (a weight [1, 1, S, S]: 0 on keys j <= i, float32's lowest past them)
// is the kernel's causal mode: no mask operand, no mask read.
TEST(AttentionLowering, CausalMaskIsTheKernelsCausalMode) {
  const Graph g = testing::AttentionNet(AttentionStyle::kCausal, 2, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 3);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  ASSERT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 0);
  EXPECT_EQ(CountKind(p, StepKind::kBinary), 0);
  const Step& s = *FindStep(p, "attend");
  EXPECT_EQ(s.operands.size(), 3u);
  EXPECT_EQ(s.attention.mask, AttentionMask::kCausal);
  EXPECT_NEAR(s.attention_layout.scale, 0.125, 1e-7);
  absl::StatusOr<std::vector<PlannedKernel>> k = UntunedStepKernels(g, p, s, {});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT((*k)[0].spec.name_expression, HasSubstr("tunejit::AttnMask::kCausal>"));
  EXPECT_EQ((*k)[0].args[3].kind, KernelArg::Kind::kInt64);
  ASSERT_TRUE(PlanStepMemory(p).ok());
}

// A [1, 1, S, S] mask that is not causal (one key past the diagonal kept; or masked by a finite
// -1e20, which a softmax does not turn into an exact zero) keeps the unfused steps.
TEST(AttentionLowering, AlmostCausalMasksAreNotFused) {
  const Graph g = testing::AttentionNet(AttentionStyle::kCausal, 2, 64, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 3);
  const int mask = *g.FindTensor("mask");
  for (const float value : {0.0f, -1e20f}) {
    std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
    for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
      const absl::Span<const uint8_t> b = w.Get(id);
      bytes[id].assign(b.begin(), b.end());
    }
    std::memcpy(bytes[mask].data() + (5 * 64 + 9) * sizeof(float), &value, sizeof(float));
    absl::StatusOr<WeightSet> changed = WeightsFromImport(g, std::move(bytes), "attention net");
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_TRUE(FindAttentionChains(g, &*changed).empty()) << value;
  }
}

// A mask weight whose query rows differ is not one row per batch: the chain stays unfused.
TEST(AttentionLowering, MaskWithDifferentRowsIsNotFused) {
  const Graph g = testing::AttentionNet(AttentionStyle::kBertBoolMask, 2, 64, 2, 64);
  WeightSet w = testing::AttentionNetWeights(g, 2);
  const int mask = *g.FindTensor("mask");
  std::vector<std::vector<uint8_t>> bytes(g.tensors().size());
  for (int id : g.TensorsOfKind(TensorKind::kWeight)) {
    const absl::Span<const uint8_t> b = w.Get(id);
    bytes[id].assign(b.begin(), b.end());
  }
  const float causal = -INFINITY;
  std::memcpy(bytes[mask].data() + 5 * sizeof(float), &causal, sizeof(float));  // row 0 only
  absl::StatusOr<WeightSet> changed = WeightsFromImport(g, std::move(bytes), "attention net");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(FindAttentionChains(g, &*changed).empty());
  EXPECT_EQ(CountKind(Lower(g, NumericMode::kFp16TensorCores, &*changed), StepKind::kSoftmax), 1);
}

TEST(AttentionLowering, Fp32AndMissingWeightsKeepTheUnfusedSteps) {
  const Graph g = testing::AttentionNet(AttentionStyle::kBert);
  const WeightSet w = testing::AttentionNetWeights(g, 3);
  for (const StepProgram& p :
       {Lower(g, NumericMode::kFp32, &w), Lower(g, NumericMode::kFp16TensorCores, nullptr)}) {
    EXPECT_EQ(CountKind(p, StepKind::kAttention), 0);
    EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 1);
    EXPECT_EQ(CountKind(p, StepKind::kMatMul), 2);
  }
}

TEST(AttentionLowering, HeadDim32IsNotFused) {
  const Graph g = testing::AttentionNet(AttentionStyle::kVit, 2, 16, 4, 32);
  const WeightSet w = testing::AttentionNetWeights(g, 4, 32);
  EXPECT_TRUE(FindAttentionChains(g, &w).empty());
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  EXPECT_EQ(CountKind(p, StepKind::kAttention), 0);
  EXPECT_EQ(CountKind(p, StepKind::kSoftmax), 1);
}

// The step's kernel from the log's record for its workload, with the step's strides; the
// fallback without a record or with one the rules refuse.
TEST(AttentionLowering, StepKernelTakesTheLogsRecord) {
  const Graph g = testing::AttentionNet(AttentionStyle::kVit, 2, 37, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 7);
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  const Step& s = *FindStep(p, "attend");
  const autotvm::Target cuda = *autotvm::ParseTarget("cuda");
  const DeviceLimits hopper = DeviceLimits::ForArch(GpuArch{9, 0, true});
  auto record = [&](autotvm::HistoryBest& h, int64_t m, int64_t n, int64_t warps, int line) {
    autotvm::ConfigEntity c;
    c.knobs = {OtherKnob("tile_m", m), OtherKnob("tile_n", n), OtherKnob("warps", warps),
               OtherKnob("stages", 2)};
    autotvm::MeasureResult result;
    result.costs = {1e-5};
    h.Add(autotvm::LoadedRecord{
        autotvm::MakeRecord(cuda, MakeAttentionWorkload(s.attention), 0, c, result),
        "/logs/attention.log", line, ""});
  };
  autotvm::HistoryBest h;
  record(h, 128, 64, 8, 3);
  AttentionChoice chosen;
  absl::StatusOr<PlannedKernel> k = AttentionStepKernel(s, &h, cuda, hopper, &chosen);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->spec.name_expression, HasSubstr("AttnTile<64, 128, 64, 8, 2>"));
  EXPECT_EQ(chosen.record, "/logs/attention.log:3");
  EXPECT_THAT(chosen.config, HasSubstr("tile_m"));
  EXPECT_EQ(k->args[5].int64s[2], 128);  // the step's strides, not contiguous ones
  autotvm::HistoryBest refused;
  record(refused, 64, 64, 8, 4);  // 8 query rows a warp
  k = AttentionStepKernel(s, &refused, cuda, hopper, &chosen);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_THAT(k->spec.name_expression, HasSubstr("AttnTile<64, 64, 64, 4, 2>"));
  EXPECT_EQ(chosen.record, "");
}

// The chain as found: its nodes, the tensors and the scale multiplied out of both constants.
TEST(AttentionFusion, FindsTheVitChainWithItsNodesAndScale) {
  const Graph g = testing::AttentionNet(AttentionStyle::kVit);
  const WeightSet w = testing::AttentionNetWeights(g, 5);
  const std::vector<AttentionChain> chains = FindAttentionChains(g, &w);
  ASSERT_EQ(chains.size(), 1u);
  const AttentionChain& c = chains[0];
  std::vector<std::string> names;
  for (int n : c.nodes) names.push_back(g.nodes()[n].name);
  EXPECT_THAT(names, ::testing::ElementsAre("q.heads", "q.bhsd", "k.heads", "k.bhsd", "k.t",
                                            "v.heads", "v.bhsd", "q.scale", "k.scale", "scores",
                                            "probs", "attend", "attend.bshd"));
  EXPECT_EQ(g.tensor(c.q.tensor).name, "q.bias_out");
  EXPECT_EQ(g.tensor(c.k.tensor).name, "k.bias_out");
  EXPECT_EQ(g.tensor(c.v.tensor).name, "v.bias_out");
  EXPECT_EQ(g.tensor(c.output).name, "attend.bshd.out");
  EXPECT_NEAR(c.scale, 0.125, 1e-7);
  EXPECT_EQ(c.mask, -1);
}

// Q's head transpose also read by another node stays a step, and Q is read from its output as
// it is; K's and V's are still skipped.
TEST(AttentionFusion, ACopyReadElsewhereIsKept) {
  Graph g = testing::AttentionNet(AttentionStyle::kVit);
  ASSERT_TRUE(g.AddNode("q.also", OpKind::kUnary, {*g.FindTensor("q.bhsd.out")},
                        testing::Attrs(UnaryFn::kSigmoid), "q.also.out", TensorKind::kOutput)
                  .ok());
  const WeightSet w = testing::AttentionNetWeights(g, 6);
  const std::vector<AttentionChain> chains = FindAttentionChains(g, &w);
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(g.tensor(chains[0].q.tensor).name, "q.bhsd.out");
  EXPECT_EQ(chains[0].q.strides.seq, 64);
  EXPECT_EQ(g.tensor(chains[0].k.tensor).name, "k.bias_out");
  const StepProgram p = Lower(g, NumericMode::kFp16TensorCores, &w);
  EXPECT_EQ(CountKind(p, StepKind::kAttention), 1);
  EXPECT_NE(FindStep(p, "q.bhsd"), nullptr);
  EXPECT_EQ(FindStep(p, "k.bhsd"), nullptr);
}

}  // namespace
}  // namespace tunejit
