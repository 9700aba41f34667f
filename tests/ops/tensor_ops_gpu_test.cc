// The general tensor ops' kernels (kernel_sources/tensor_ops.cu) on a GPU against the CPU
// reference (ops/tensor_ops_reference.h), every output element, on shapes of the zoo's models
// (SE gates, ViT heads, ConvNeXt's channels-last layer norm) and odd ones. Skipped without a GPU.
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "common/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/tensor_ops.h"
#include "ops/tensor_ops_reference.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::Bytes;
using testing::FromBytes;

int64_t Count(const TensorDims& d) {
  int64_t n = 1;
  for (int64_t v : d) n *= v;
  return n;
}

class TensorOpsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    harness_ = testing::MakeHarness();
    ASSERT_NE(harness_, nullptr);
  }
  std::vector<float> Run(std::vector<PlannedKernel> kernels,
                         const std::vector<std::vector<float>>& inputs, size_t out_elements) {
    OpPlan plan;
    plan.kernels = std::move(kernels);
    std::vector<std::vector<uint8_t>> in;
    for (const std::vector<float>& v : inputs) in.push_back(Bytes(v));
    auto out = harness_->Run(plan, in, {out_elements * sizeof(float)});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? FromBytes<float>((*out)[0]) : std::vector<float>();
  }
  std::vector<float> Run(absl::StatusOr<PlannedKernel> k,
                         const std::vector<std::vector<float>>& inputs, size_t out_elements) {
    EXPECT_TRUE(k.ok()) << k.status();
    if (!k.ok()) return {};
    return Run(std::vector<PlannedKernel>{*std::move(k)}, inputs, out_elements);
  }
  std::unique_ptr<testing::GpuHarness> harness_;
};

// Relative L2 distance below `bound` (transcendentals and summation order differ by ulps).
void ExpectClose(const std::vector<float>& got, const std::vector<float>& want, double bound,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_LT(cpuref::RelativeError(got, want), bound) << what;
}

TEST_F(TensorOpsGpu, UnaryFunctions) {
  const std::vector<float> x = testing::RandomFloats(1000, 1);
  for (int fn = 0; fn <= static_cast<int>(UnaryFn::kGeluTanh); ++fn) {
    const UnaryFn f = static_cast<UnaryFn>(fn);
    std::vector<float> in = x;
    if (f == UnaryFn::kSqrt) {
      for (float& v : in) v = std::abs(v);
    }
    if (f == UnaryFn::kReplaceNan) {
      for (size_t i = 0; i < in.size(); i += 7) in[i] = std::nanf("");
    }
    ExpectClose(Run(UnaryKernel(f, in.size(), 0.25f, 0.4f), {in}, in.size()),
                cpuref::Unary(f, in, 0.25f, 0.4f), 1e-6, std::string(UnaryFnName(f)));
  }
}

TEST_F(TensorOpsGpu, BinaryBroadcasts) {
  const std::vector<std::pair<TensorDims, TensorDims>> cases = {
      {{4, 96, 14, 14}, {4, 96, 1, 1}},  // SE gate
      {{8, 197, 768}, {768}},            // a bias on the last dim
      {{3, 1, 5}, {4, 1}},               // both broadcast
      {{7, 5}, {}},                      // a scalar
  };
  for (int fn = 0; fn <= static_cast<int>(BinaryFn::kMin); ++fn) {
    const BinaryFn f = static_cast<BinaryFn>(fn);
    for (const auto& [sa, sb] : cases) {
      std::vector<float> a = testing::RandomFloats(Count(sa), 2);
      std::vector<float> b = testing::RandomFloats(Count(sb), 3);
      if (f == BinaryFn::kPow) {
        for (float& v : a) v = std::abs(v) + 0.5f;
      }
      const std::vector<float> want = cpuref::Binary(f, sa, a, sb, b);
      ExpectClose(Run(BinaryKernel(f, sa, sb), {a, b}, want.size()), want, 1e-6,
                  std::string(BinaryFnName(f)));
    }
  }
}

TEST_F(TensorOpsGpu, TransposeSliceConcat) {
  const TensorDims shape = {3, 17, 5, 8};
  const std::vector<float> x = testing::RandomFloats(Count(shape), 4);
  for (const TensorDims& perm : std::vector<TensorDims>{{0, 2, 1, 3}, {3, 2, 1, 0}, {0, 2, 3, 1}}) {
    EXPECT_EQ(Run(TransposeKernel(shape, perm), {x}, x.size()), cpuref::Transpose(shape, perm, x));
  }
  for (const auto& [axis, start, end, step] :
       std::vector<std::tuple<int, int64_t, int64_t, int64_t>>{
           {1, 0, 1, 1}, {1, 3, 17, 4}, {3, 2, 8, 3}, {0, 1, 3, 1}}) {
    const std::vector<float> want = cpuref::Slice(shape, axis, start, end, step, x);
    EXPECT_EQ(Run(SliceKernel(shape, axis, start, end, step), {x}, want.size()), want);
  }
  const std::vector<TensorDims> parts = {{2, 3, 4, 4}, {2, 5, 4, 4}, {2, 1, 4, 4}};
  std::vector<std::vector<float>> inputs;
  std::vector<absl::Span<const float>> spans;
  for (size_t k = 0; k < parts.size(); ++k)
    inputs.push_back(testing::RandomFloats(Count(parts[k]), 5 + k));
  for (const std::vector<float>& v : inputs) spans.emplace_back(v);
  const std::vector<float> want = cpuref::Concat(1, parts, spans);
  absl::StatusOr<std::vector<PlannedKernel>> c = ConcatKernels(1, parts);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Run(*c, inputs, want.size()), want);
}

TEST_F(TensorOpsGpu, ReductionsLayerNormSoftmax) {
  const TensorDims shape = {4, 37, 6, 5};
  const std::vector<float> x = testing::RandomFloats(Count(shape), 6);
  for (const TensorDims& axes : std::vector<TensorDims>{{3}, {2, 3}, {1}, {1, 2}}) {
    const std::vector<float> want = cpuref::ReduceMean(shape, axes, x);
    ExpectClose(Run(ReduceMeanKernel(shape, axes), {x}, want.size()), want, 1e-6, "reduce_mean");
  }
  for (int axis = 0; axis < 4; ++axis) {
    ExpectClose(Run(SoftmaxAxisKernel(shape, axis), {x}, x.size()),
                cpuref::SoftmaxAxis(shape, axis, x), 1e-6, "softmax");
  }
  // ConvNeXt's layer norms over 768 and 96 channels and a short odd row (a warp per row, rows
  // not filling the last block), and rows past a warp's 1024 values (a block per row).
  for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{
           {98, 768}, {1001, 96}, {5, 37}, {3, 1024}, {3, 1500}}) {
    const std::vector<float> in = testing::RandomFloats(rows * cols, 7);
    const std::vector<float> scale = testing::RandomFloats(cols, 8),
                             bias = testing::RandomFloats(cols, 9);
    ExpectClose(Run(LayerNormKernel(rows, cols, 1e-6f), {in, scale, bias}, in.size()),
                cpuref::LayerNorm({rows, cols}, 1, 1e-6f, in, scale, bias), 1e-5, "layer_norm");
    ExpectClose(Run(RmsNormKernel(rows, cols, 1e-6f), {in, scale}, in.size()),
                cpuref::RmsNorm(cols, 1e-6f, in, scale), 1e-5, "rms_norm");
  }
}

// Llama's rotary embedding of q [2, 4, 37, 64] (a sequence that is no multiple of anything),
// float32 and float16.
TEST_F(TensorOpsGpu, RotaryEmbedding) {
  const TensorDims shape = {2, 4, 37, 64};
  const std::vector<float> x = testing::RandomFloats(Count(shape), 12);
  const std::vector<float> cos = testing::RandomFloats(37 * 64, 13),
                           sin = testing::RandomFloats(37 * 64, 14);
  ExpectClose(Run(RopeKernel(shape), {x, cos, sin}, x.size()), cpuref::Rope(shape, x, cos, sin),
              1e-6, "rope");
}

TEST_F(TensorOpsGpu, BatchedMatMul) {
  const std::vector<std::pair<TensorDims, TensorDims>> cases = {
      {{2, 3, 37, 20}, {2, 3, 20, 33}},  // attention-like, tails in every dim
      {{4, 17, 9}, {9, 5}},              // batch on one side only
      {{1, 16, 16}, {3, 16, 16}},
  };
  for (const auto& [sa, sb] : cases) {
    const std::vector<float> a = testing::RandomFloats(Count(sa), 10);
    const std::vector<float> b = testing::RandomFloats(Count(sb), 11);
    const std::vector<float> want = cpuref::MatMul(sa, a, sb, b);
    ExpectClose(Run(MatMulKernel(sa, sb), {a, b}, want.size()), want, 1e-6, "matmul");
  }
}

// The tensor-core path's fp16 activations stay fp16 through the element-wise ops: an fp16 SE
// gate (an fp16 activation times a float32 per-channel weight), hard_swish, clip, bias_add and
// the residual add, within
// fp16 rounding (2^-11 relative per value) of the float reference on the same fp16 inputs.
TEST_F(TensorOpsGpu, Fp16ElementwiseOps) {
  const TensorDims x_shape = {2, 7, 7, 24}, w_shape = {24};  // NHWC, channel weights
  std::vector<float> x = testing::RandomFloats(Count(x_shape), 12);
  const std::vector<uint16_t> xh = testing::ToHalves(x);
  for (size_t i = 0; i < x.size(); ++i) x[i] = HalfToFloat(xh[i]);  // the values the GPU reads
  const std::vector<float> w = testing::RandomFloats(Count(w_shape), 13);
  auto run = [&](absl::StatusOr<PlannedKernel> k, std::vector<std::vector<uint8_t>> in) {
    EXPECT_TRUE(k.ok()) << k.status();
    OpPlan plan;
    if (k.ok()) plan.kernels.push_back(*k);
    auto out = harness_->Run(plan, in, {x.size() * 2});
    EXPECT_TRUE(out.ok()) << out.status();
    std::vector<float> got;
    if (!out.ok()) return got;
    for (uint16_t h : FromBytes<uint16_t>((*out)[0])) got.push_back(HalfToFloat(h));
    return got;
  };
  ExpectClose(
      run(BinaryKernel(BinaryFn::kMul, x_shape, w_shape,
                       {ElementType::kFloat16, ElementType::kFloat32, ElementType::kFloat16}),
          {Bytes(xh), Bytes(w)}),
      cpuref::Binary(BinaryFn::kMul, x_shape, x, w_shape, w), 1e-3, "fp16 mul");
  ExpectClose(run(UnaryKernel(UnaryFn::kHardSwish, x.size(), 0.2f, 0.5f, ElementType::kFloat16),
                  {Bytes(xh)}),
              cpuref::Unary(UnaryFn::kHardSwish, x), 1e-3, "fp16 hard_swish");
  // The elementwise.cu steps that keep fp16: ReLU6, an NHWC bias_add (+relu), the residual add.
  ExpectClose(run(ClipKernel(x.size(), 0.0f, 6.0f, ElementType::kFloat16), {Bytes(xh)}),
              cpuref::Clip(x, 0.0f, 6.0f), 1e-3, "fp16 clip");
  ExpectClose(
      run(BiasReluKernel(2 * 7 * 7, 24, 1, true, ElementType::kFloat16), {Bytes(xh), Bytes(w)}),
      cpuref::BiasRelu(x, 24, 1, w, true), 1e-3, "fp16 NHWC bias_add+relu");
  ExpectClose(run(AddReluKernel(x.size(), false, ElementType::kFloat16), {Bytes(xh), Bytes(xh)}),
              cpuref::Binary(BinaryFn::kAdd, x_shape, x, x_shape, x), 1e-3, "fp16 add");
  // The channel layer norm of an NHWC activation viewed as [N, H, W, C] rows.
  const std::vector<float> bias = testing::RandomFloats(24, 14);
  ExpectClose(run(LayerNormKernel(2 * 7 * 7, 24, 1e-6f, ElementType::kFloat16),
                  {Bytes(xh), Bytes(w), Bytes(bias)}),
              cpuref::LayerNorm(x_shape, 3, 1e-6f, x, w, bias), 2e-3, "fp16 layer_norm");
}

// BERT's word embedding lookup (a vocabulary of 30522 rows of 768, 2 x 128 ids) and a small
// table with ids out of range both ways (clamped, graph/graph.h) and counted from the end: every
// output float equals the CPU reference's (a copy, no arithmetic).
TEST_F(TensorOpsGpu, GatherRowsByInt64Ids) {
  struct Case {
    int64_t rows, row;
    std::vector<int64_t> ids;
  };
  std::vector<int64_t> tokens(2 * 128);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i * 7919 % 30522);
  const std::vector<Case> cases = {
      {30522, 768, tokens},
      {5, 3, {0, 4, -1, -5, 5, -6, INT64_MAX, INT64_MIN, 2}},
  };
  for (const Case& c : cases) {
    const std::vector<float> table = testing::RandomFloats(c.rows * c.row, 11);
    const std::vector<float> want = cpuref::Gather({c.rows, c.row}, table, c.ids);
    OpPlan plan;
    absl::StatusOr<PlannedKernel> k =
        GatherKernel(c.rows, c.row, static_cast<int64_t>(c.ids.size()));
    ASSERT_TRUE(k.ok()) << k.status();
    plan.kernels.push_back(*std::move(k));
    auto out = harness_->Run(plan, {Bytes(table), Bytes(c.ids)}, {want.size() * sizeof(float)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(FromBytes<float>((*out)[0]), want) << c.rows << " rows";
  }
}

}  // namespace
}  // namespace tunejit
