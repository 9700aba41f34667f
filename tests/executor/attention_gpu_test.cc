// The fused attention step end to end on a GPU (label gpu; skipped without one): AttentionNet
// (tests/executor/executor_test_util.h) in ViT's form (197 tokens, 2 heads of 64), BERT's (128
// tokens with a padding mask) and BERT's SDPA export's built at fp16, where the chain is one
// attention step on attention_mma.cuda, against the same network at fp32 (the unfused tensor-op
// path, itself checked against the CPU reference forward): within 1e-2 relative L2. Likewise the
// residual stream's add fused into a dense layer (ResidualStreamNet).
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/kernel_cache.h"
#include "executor/executor.h"
#include "executor/reference_forward.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "tests/executor/executor_gpu_util.h"
#include "tests/executor/executor_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::AttentionStyle;

using Inputs = std::map<std::string, std::vector<float>>;

// The logits of `g` built at `mode`, and whether a step ran as fused attention.
std::vector<float> Run(const Graph& g, const WeightSet& w, NumericMode mode, const Inputs& inputs,
                       bool* fused) {
  Gpu& gpu = SharedGpu("tunejit_attention_gpu_cache");
  ExecutorOptions options;
  options.mode = mode;
  options.progress = stderr;
  absl::StatusOr<Executor> ex = Executor::Build(*gpu.device, *gpu.compiler, g, w, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  if (!ex.ok()) return {};
  for (const auto& [name, values] : inputs) EXPECT_TRUE(ex->SetInput(name, values).ok()) << name;
  absl::Status run = ex->Run();
  EXPECT_TRUE(run.ok()) << run;
  *fused = false;
  for (const LayerInfo& layer : ex->layers()) *fused = *fused || layer.op == "attention";
  absl::StatusOr<std::vector<float>> out = ex->Output("logits");
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<float>{};
}

void ExpectFusedMatchesFp32(const Graph& g, const WeightSet& w, const Inputs& inputs) {
  bool fused32 = true, fused16 = false;
  const std::vector<float> fp32 = Run(g, w, NumericMode::kFp32, inputs, &fused32);
  const std::vector<float> fp16 = Run(g, w, NumericMode::kFp16TensorCores, inputs, &fused16);
  EXPECT_FALSE(fused32);
  EXPECT_TRUE(fused16);
  absl::StatusOr<std::vector<std::vector<float>>> ref = ReferenceForward(g, w, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  const std::vector<float>& want = (*ref)[*g.FindTensor("logits")];
  EXPECT_LT(cpuref::RelativeError(fp32, want), 1e-4);
  const double err = cpuref::RelativeError(fp16, fp32);
  std::printf("fused fp16 vs fp32: relative L2 %.3g\n", err);
  EXPECT_LT(err, 1e-2);
}

TEST(AttentionExecutorGpu, VitChainFusedMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::AttentionNet(AttentionStyle::kVit, 2, 197, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 7);
  ExpectFusedMatchesFp32(g, w, {{"input", testing::NormalFloats(2 * 197 * 128, 8)}});
}

TEST(AttentionExecutorGpu, BertSdpaChainFusedMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::AttentionNet(AttentionStyle::kBertSdpa, 2, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 11);
  ExpectFusedMatchesFp32(g, w, {{"input", testing::NormalFloats(2 * 128 * 128, 12)}});
}

TEST(AttentionExecutorGpu, BertChainWithMaskFusedMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const int64_t batch = 3, seq = 128;
  const Graph g = testing::AttentionNet(AttentionStyle::kBert, batch, seq, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 9);
  std::vector<float> mask(batch * seq, 0.0f);
  for (int64_t b = 1; b < batch; ++b) {
    for (int64_t j = seq - 20 * b; j < seq; ++j) mask[b * seq + j] = -10000.0f;
  }
  ExpectFusedMatchesFp32(g, w,
                         {{"input", testing::NormalFloats(batch * seq * 128, 10)}, {"mask", mask}});
}

// torchvision's nn.MultiheadAttention export: the fp16 build moves its [B, S] <-> [S, B]
// transposes across the projections (executor/row_transposes.h), the fp32 build keeps them.
TEST(AttentionExecutorGpu, MultiheadAttentionWithMovedTransposesMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::MhaNet(4, 197, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 15);
  ExpectFusedMatchesFp32(g, w, {{"input", testing::NormalFloats(4 * 197 * 128, 16)}});
}

// The residual stream's add in the second dense layer's epilogue (dense_wgmma.cuda reading the
// float16 stream in place), then a layer norm, against fp32.
TEST(AttentionExecutorGpu, ResidualStreamAddInTheDenseMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::ResidualStreamNet(4, 197, 256);
  const WeightSet w = RandomWeights(g, 17);
  const Inputs inputs = {{"input", testing::NormalFloats(4 * 197 * 256, 18)}};
  bool fused = false;
  const std::vector<float> fp32 = tunejit::Run(g, w, NumericMode::kFp32, inputs, &fused);
  Gpu& gpu = SharedGpu("tunejit_attention_gpu_cache");
  ExecutorOptions options;
  options.mode = NumericMode::kFp16TensorCores;
  absl::StatusOr<Executor> ex = Executor::Build(*gpu.device, *gpu.compiler, g, w, options);
  ASSERT_TRUE(ex.ok()) << ex.status();
  ASSERT_TRUE(ex->SetInput("input", inputs.at("input")).ok());
  ASSERT_TRUE(ex->Run().ok());
  bool residual_in_dense = false;
  for (const LayerInfo& layer : ex->layers()) {
    EXPECT_NE(layer.op, "add") << layer.name;
    residual_in_dense =
        residual_in_dense ||
        (layer.op == "dense" && layer.fused.find("residual_add") != std::string::npos);
  }
  EXPECT_TRUE(residual_in_dense);
  absl::StatusOr<std::vector<float>> fp16 = ex->Output("logits");
  ASSERT_TRUE(fp16.ok()) << fp16.status();
  absl::StatusOr<std::vector<std::vector<float>>> ref = ReferenceForward(g, w, inputs);
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_LT(cpuref::RelativeError(fp32, (*ref)[*g.FindTensor("logits")]), 1e-4);
  const double err = cpuref::RelativeError(*fp16, fp32);
  std::printf("residual stream fp16 vs fp32: relative L2 %.3g\n", err);
  EXPECT_LT(err, 1e-2);
}

// A boolean mask's -inf keys, every key of batch 2 masked: the unfused fp32 softmax gives NaN
// there and the guard 0, as the fused kernel does.
TEST(AttentionExecutorGpu, BoolMaskChainWithGuardFusedMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::AttentionNet(AttentionStyle::kBertBoolMask, 3, 128, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 13);
  ExpectFusedMatchesFp32(g, w, {{"input", testing::NormalFloats(3 * 128 * 128, 14)}});
}

// A decoder's causal mask (GPT-2's, Llama's) runs as the kernel's causal mode: its 197 tokens
// cross CTA and key-tile boundaries mid-diagonal.
TEST(AttentionExecutorGpu, CausalChainFusedMatchesFp32) {
  TUNEJIT_REQUIRE_GPU();
  const Graph g = testing::AttentionNet(AttentionStyle::kCausal, 2, 197, 2, 64);
  const WeightSet w = testing::AttentionNetWeights(g, 17);
  ExpectFusedMatchesFp32(g, w, {{"input", testing::NormalFloats(2 * 197 * 128, 18)}});
}

}  // namespace
}  // namespace tunejit
