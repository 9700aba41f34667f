// The general tensor ops on the CPU: the reference (ops/tensor_ops_reference.h) on hand-computed
// values, the plans (ops/tensor_ops.h: collapsed dims, argument checks), and an NVRTC build of
// every kernel the plans name (no GPU needed). Their GPU values: tensor_ops_gpu_test.cc.
#include "ops/tensor_ops.h"

#include <climits>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/tensor_ops_reference.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::vector<float> Iota(int n, float from = 0) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = from + i;
  return v;
}

TEST(TensorOpsReference, UnaryFunctions) {
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kSigmoid, 0), 0.5f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kHardSigmoid, 1, 0.2f, 0.5f), 0.7f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kHardSigmoid, 10, 0.2f, 0.5f), 1.0f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kHardSwish, 3), 3.0f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kHardSwish, 1), 1.0f * (1.0f / 6 + 0.5f));
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kHardSwish, -4), 0.0f);
  EXPECT_NEAR(cpuref::UnaryValue(UnaryFn::kGelu, 1), 0.8413447f, 1e-6);
  // 0.5 (1 + tanh(sqrt(2 / pi) 1.044715)) = 0.8411920 (the tanh form, a hair below the exact).
  EXPECT_NEAR(cpuref::UnaryValue(UnaryFn::kGeluTanh, 1), 0.8411920f, 1e-6);
  EXPECT_NEAR(cpuref::UnaryValue(UnaryFn::kGeluTanh, -3), -0.0036374f, 1e-6);
  EXPECT_NEAR(cpuref::UnaryValue(UnaryFn::kSilu, 1), 0.7310586f, 1e-6);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kReciprocal, 4), 0.25f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kReplaceNan, std::nanf(""), 0.5f), 0.5f);
  EXPECT_FLOAT_EQ(cpuref::UnaryValue(UnaryFn::kReplaceNan, -3, 0.5f), -3.0f);
  EXPECT_FLOAT_EQ(cpuref::BinaryValue(BinaryFn::kPow, 3, 2), 9.0f);
  EXPECT_FLOAT_EQ(cpuref::BinaryValue(BinaryFn::kDiv, 3, 2), 1.5f);
}

TEST(TensorOpsReference, BinaryBroadcastsBothWays) {
  // [2, 1] (op) [3]: a column against a row.
  EXPECT_THAT(cpuref::Binary(BinaryFn::kSub, {2, 1}, {10, 20}, {3}, {1, 2, 3}),
              ElementsAre(9, 8, 7, 19, 18, 17));
  // An SE gate: [1, 2, 2, 1] x [1, 2, 1, 1].
  EXPECT_THAT(cpuref::Binary(BinaryFn::kMul, {1, 2, 2, 1}, {1, 2, 3, 4}, {1, 2, 1, 1}, {10, 100}),
              ElementsAre(10, 20, 300, 400));
}

TEST(TensorOpsReference, ConcatTransposeSlice) {
  // [2, 1] ++ [2, 2] on axis 1.
  EXPECT_THAT(cpuref::Concat(1, {{2, 1}, {2, 2}}, {std::vector<float>{0, 1}, Iota(4, 10)}),
              ElementsAre(0, 10, 11, 1, 12, 13));
  // [2, 3] -> [3, 2].
  EXPECT_THAT(cpuref::Transpose({2, 3}, {1, 0}, Iota(6)), ElementsAre(0, 3, 1, 4, 2, 5));
  // Columns 1 and 3 of [2, 4].
  EXPECT_THAT(cpuref::Slice({2, 4}, 1, 1, 4, 2, Iota(8)), ElementsAre(1, 3, 5, 7));
}

TEST(TensorOpsReference, ReduceMeanLayerNormSoftmaxMatMul) {
  EXPECT_THAT(cpuref::ReduceMean({2, 3}, {1}, Iota(6)), ElementsAre(1, 4));
  EXPECT_THAT(cpuref::ReduceMean({2, 3}, {0}, Iota(6)), ElementsAre(1.5, 2.5, 3.5));
  EXPECT_THAT(cpuref::ReduceMean({2, 2, 2}, {0, 2}, Iota(8)), ElementsAre(2.5, 4.5));
  // Row [1, 3]: mean 2, variance 1 -> [-1, 1] / sqrt(1 + eps), then * [2, 3] + [0, 1].
  const float inv = 1.0f / std::sqrt(1.0f + 1e-5f);
  // Rotary embedding of one row of D 4 at S 1: r = (-x2, -x3, x0, x1).
  EXPECT_THAT(cpuref::Rope({1, 1, 4}, std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2}, {1, 1, 1, 1}),
              ElementsAre(1 - 3, 2 - 4, 6 + 1, 8 + 2));
  // RMS norm of [3, 4] (mean of squares 12.5): x / sqrt(12.5 + eps) * scale.
  EXPECT_THAT(
      cpuref::RmsNorm(2, 1e-6f, std::vector<float>{3, 4}, {2, 1}),
      ElementsAre(FloatNear(6 / std::sqrt(12.5f), 1e-6f), FloatNear(4 / std::sqrt(12.5f), 1e-6f)));
  EXPECT_THAT(cpuref::LayerNorm({1, 2}, 1, 1e-5f, std::vector<float>{1, 3}, {2, 3}, {0, 1}),
              Pointwise(FloatNear(1e-6), std::vector<float>{-2 * inv, 3 * inv + 1}));
  // Softmax over axis 0 of [2, 2]: each column.
  const float e = 1.0f / (1.0f + std::exp(-2.0f));
  EXPECT_THAT(cpuref::SoftmaxAxis({2, 2}, 0, std::vector<float>{0, 1, 2, 3}),
              Pointwise(FloatNear(1e-6), std::vector<float>{1 - e, 1 - e, e, e}));
  // [2, 1, 2] x [2, 1] (batch broadcast): [[0, 1]] and [[2, 3]] times [1, 2]^T.
  EXPECT_THAT(cpuref::MatMul({2, 1, 2}, Iota(4), {2, 1}, std::vector<float>{1, 2}),
              ElementsAre(2, 8));
}

// The Dims arguments of a plan: the first `rank` values of argument `index`.
std::vector<int64_t> DimsArg(const PlannedKernel& k, size_t index, size_t rank) {
  const std::vector<int64_t>& v = k.args.at(index).int64s;
  return std::vector<int64_t>(v.begin(), v.begin() + rank);
}

TEST(TensorOpsPlan, BinaryCollapsesToTheDimsThatMatter) {
  // An SE gate [32, 96, 56, 56] x [32, 96, 1, 1]: [3072 planes, 3136 pixels], b repeated.
  absl::StatusOr<PlannedKernel> k = BinaryKernel(BinaryFn::kMul, {32, 96, 56, 56}, {32, 96, 1, 1});
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.name_expression, "tunejit::binary<2, 2, float, float, float>");
  EXPECT_THAT(DimsArg(*k, 4, 2), ElementsAre(3072, 3136));
  EXPECT_THAT(DimsArg(*k, 5, 2), ElementsAre(3136, 1));
  EXPECT_THAT(DimsArg(*k, 6, 2), ElementsAre(1, 0));
  // Same shapes: one dim.
  k = BinaryKernel(BinaryFn::kAdd, {4, 5, 6}, {4, 5, 6});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->spec.name_expression, "tunejit::binary<0, 1, float, float, float>");
  EXPECT_THAT(BinaryKernel(BinaryFn::kAdd, {4, 5}, {3}).status().message(),
              HasSubstr("do not broadcast"));
}

TEST(TensorOpsPlan, CopiesAndTheirLimits) {
  // ViT's heads: [32, 197, 12, 64] -> [32, 12, 197, 64] keeps four dims.
  absl::StatusOr<PlannedKernel> t = TransposeKernel({32, 197, 12, 64}, {0, 2, 1, 3});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->spec.name_expression, "tunejit::strided_copy<4, float>");
  EXPECT_THAT(TransposeKernel({2, 3}, {0, 0}).status().message(), HasSubstr("not a permutation"));
  // The class token x[:, 0] of [32, 197, 768]: 32 rows of 768, from offset 0 at stride 197 * 768.
  absl::StatusOr<PlannedKernel> s = SliceKernel({32, 197, 768}, 1, 0, 1, 1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->spec.name_expression, "tunejit::strided_copy<2, float>");
  EXPECT_THAT(DimsArg(*s, 4, 2), ElementsAre(197 * 768, 1));
  EXPECT_THAT(SliceKernel({4}, 0, 3, 2, 1).status().message(), HasSubstr("slice: [3, 2)"));
  absl::StatusOr<std::vector<PlannedKernel>> c = ConcatKernels(1, {{2, 3, 4}, {2, 5, 4}});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->size(), 2u);
  EXPECT_EQ((*c)[1].args[0].index_or_int, 1);       // reads input 1
  EXPECT_EQ((*c)[1].args.back().index_or_int, 12);  // after the first input's 3 rows of 4
  EXPECT_THAT(ConcatKernels(1, {{2, 3}, {3, 3}}).status().message(), HasSubstr("does not fit"));
  // Seven dims that cannot merge are refused, naming the limit.
  EXPECT_THAT(TransposeKernel({2, 2, 2, 2, 2, 2, 2}, {6, 5, 4, 3, 2, 1, 0}).status().message(),
              HasSubstr("at most 6"));
}

TEST(TensorOpsPlan, ReductionsPickTheirKernel) {
  EXPECT_EQ(ReduceMeanKernel({8, 196, 768}, {2})->spec.name_expression,
            "tunejit::reduce_mean_rows<256>");
  EXPECT_EQ(ReduceMeanKernel({8, 96, 7, 7}, {2, 3})->spec.name_expression,
            "tunejit::reduce_mean_rows<256>");
  EXPECT_EQ(ReduceMeanKernel({8, 96, 7, 7}, {1})->spec.name_expression,
            "tunejit::reduce_mean_strided<float>");
  EXPECT_THAT(ReduceMeanKernel({8, 96, 7, 7}, {1, 3}).status().message(),
              HasSubstr("only consecutive axes"));
  // Attention's rows of 197 scores: a warp each; rows past 1024 values: a block each.
  EXPECT_EQ(SoftmaxAxisKernel({4, 12, 197, 197}, 3)->spec.name_expression,
            "tunejit::softmax_rows_warp<8>");
  EXPECT_EQ(SoftmaxAxisKernel({4, 1025}, 1)->spec.name_expression, "tunejit::softmax_rows<256>");
  EXPECT_EQ(LayerNormKernel(6272, 96, 1e-6f)->spec.name_expression,
            "tunejit::layer_norm_warp<float, 8>");
  EXPECT_EQ(LayerNormKernel(4, 1025, 1e-6f)->spec.name_expression,
            "tunejit::layer_norm<float, 256>");
  EXPECT_EQ(SoftmaxAxisKernel({4, 10, 7}, 1)->spec.name_expression, "tunejit::softmax_strided");
  EXPECT_THAT(LayerNormKernel(4, 8, 0.0f).status().message(), HasSubstr("epsilon 0"));
  EXPECT_EQ(RmsNormKernel(256, 128, 1e-6f, ElementType::kFloat16)->spec.name_expression,
            "tunejit::rms_norm_warp<tunejit::f16, 8>");
  EXPECT_EQ(RmsNormKernel(4, 4096, 1e-6f)->spec.name_expression, "tunejit::rms_norm<float, 256>");
  EXPECT_THAT(RmsNormKernel(4, 8, -1.0f).status().message(), HasSubstr("epsilon -1"));
  EXPECT_THAT(RopeKernel({2, 8, 15}).status().message(), HasSubstr("D even"));
  EXPECT_THAT(LayerNormKernel(4, 8, 1e-5f, ElementType::kInt8).status().message(),
              HasSubstr("float32 or float16"));
  absl::StatusOr<PlannedKernel> m = MatMulKernel({32, 12, 197, 64}, {32, 12, 64, 197});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->spec.name_expression, "tunejit::batched_matmul<1>");
  EXPECT_EQ(m->shape.grid[2], 384u);
  EXPECT_THAT(MatMulKernel({2, 3}, {4, 5}).status().message(), HasSubstr("[..., M, K]"));
}

// The gather's id rule (graph/graph.h): [-rows, 0) from the end, the rest clamped.
TEST(TensorOpsReference, GatherRowsByIds) {
  EXPECT_THAT(cpuref::Gather({3, 2}, Iota(6), std::vector<int64_t>{2, 0, -1, -3, 3, -4, 1000}),
              ElementsAre(4, 5, 0, 1, 4, 5, 0, 1, 4, 5, 0, 1, 4, 5));
  EXPECT_EQ(cpuref::GatherRow(INT64_MIN, 5), 0);
  EXPECT_EQ(cpuref::GatherRow(INT64_MAX, 5), 4);
}

TEST(TensorOpsPlan, GatherTakesTheTableAndTheIds) {
  absl::StatusOr<PlannedKernel> k = GatherKernel(30522, 768, 32 * 128);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->spec.name_expression, "tunejit::gather_rows");
  ASSERT_EQ(k->args.size(), 6u);
  EXPECT_EQ(k->args[0].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k->args[1].kind, KernelArg::Kind::kInput);
  EXPECT_EQ(k->args[1].index_or_int, 1);
  EXPECT_EQ(k->args[2].kind, KernelArg::Kind::kOutput);
  for (const auto& [rows, row, count] :
       std::vector<std::tuple<int64_t, int64_t, int64_t>>{{0, 8, 4}, {10, 0, 4}, {10, 8, 0}}) {
    EXPECT_THAT(GatherKernel(rows, row, count).status().message(), HasSubstr("gather:"));
  }
}

TEST(TensorOpsPlan, EveryKernelBuildsWithNvrtc) {
  std::vector<PlannedKernel> kernels;
  for (int fn = 0; fn <= static_cast<int>(UnaryFn::kGeluTanh); ++fn) {
    kernels.push_back(*UnaryKernel(static_cast<UnaryFn>(fn), 10));
  }
  for (int fn = 0; fn <= static_cast<int>(BinaryFn::kMin); ++fn) {
    kernels.push_back(*BinaryKernel(static_cast<BinaryFn>(fn), {2, 3, 4}, {3, 1}));
  }
  kernels.push_back(*TransposeKernel({2, 3, 4, 5, 6, 7}, {5, 4, 3, 2, 1, 0}));
  // The tensor-core path's fp16 activations (with float32 weights), and int8 copies.
  kernels.push_back(*UnaryKernel(UnaryFn::kHardSwish, 10, 0.2f, 0.5f, ElementType::kFloat16));
  kernels.push_back(*RmsNormKernel(256, 128, 1e-6f, ElementType::kFloat16));
  kernels.push_back(*RmsNormKernel(4, 4096, 1e-6f));
  kernels.push_back(*RopeKernel({2, 32, 128, 128}, ElementType::kFloat16));
  kernels.push_back(*RopeKernel({2, 2, 8, 16}));
  kernels.push_back(
      *BinaryKernel(BinaryFn::kMul, {2, 3}, {3},
                    {ElementType::kFloat16, ElementType::kFloat32, ElementType::kFloat16}));
  kernels.push_back((*ConcatKernels(1, {{2, 3}, {2, 1}}, ElementType::kFloat16))[0]);
  kernels.push_back(*SliceKernel({4, 5}, 1, 0, 2, 1, ElementType::kInt8));
  // elementwise.cu's steps that keep fp16 on the tensor-core path.
  kernels.push_back(*ClipKernel(10, 0.0f, 6.0f, ElementType::kFloat16));
  kernels.push_back(*BiasReluKernel(4, 8, 1, true, ElementType::kFloat16));
  kernels.push_back(*AddReluKernel(10, false, ElementType::kFloat16));
  kernels.push_back(*ReduceMeanKernel({4, 5, 6}, {1}));
  kernels.push_back(*ReduceMeanKernel({4, 5, 6}, {2}));
  kernels.push_back(*LayerNormKernel(4, 8, 1e-5f));     // a warp per row
  kernels.push_back(*LayerNormKernel(4, 1025, 1e-5f));  // a block per row
  kernels.push_back(*LayerNormKernel(4, 8, 1e-5f, ElementType::kFloat16));
  kernels.push_back(*LayerNormKernel(4, 1025, 1e-5f, ElementType::kFloat16));
  kernels.push_back(*SoftmaxAxisKernel({4, 5, 6}, 1));
  kernels.push_back(*SoftmaxAxisKernel({4, 5, 6}, 2));  // rows: a warp each
  kernels.push_back(*SoftmaxAxisKernel({2, 1500}, 1));  // rows: a block each
  kernels.push_back(*MatMulKernel({2, 3, 4, 5}, {3, 5, 6}));
  kernels.push_back(*GatherKernel(10, 8, 6));
  KernelCompiler compiler(nullptr);
  std::set<std::string> built;
  for (const PlannedKernel& k : kernels) {
    if (!built.insert(k.spec.name_expression).second) continue;
    absl::StatusOr<CompiledKernel> c = compiler.Compile(k.spec, GpuArch{9, 0});
    ASSERT_TRUE(c.ok()) << k.spec.name_expression << ": " << c.status();
  }
  EXPECT_GE(built.size(), 28u);
  EXPECT_THAT(UnaryKernel(UnaryFn::kExp, 4, 0, 0, ElementType::kInt8).status().message(),
              HasSubstr("float32 or float16"));
}

}  // namespace
}  // namespace tunejit
