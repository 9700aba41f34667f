// File: ops/tensor_ops_reference.h
// CPU references of the general tensor ops (graph/graph.h: unary, binary, concat, transpose,
// slice, reduce_mean, layer_norm, matmul, softmax over any axis, gather): plain loops over
// row-major float32 tensors, double accumulation. They define what kernel_sources/tensor_ops.cu
// computes; the element functions are shared with it bit for bit where the math allows (float
// arithmetic in the same order), so most comparisons are exact and the transcendental ones within a
// few ulp.
//
//   std::vector<float> y = cpuref::Binary(BinaryFn::kMul, {2, 3}, a, {3}, b);  // [2, 3]
#ifndef TUNEJIT_OPS_TENSOR_OPS_REFERENCE_H_
#define TUNEJIT_OPS_TENSOR_OPS_REFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/elementwise_fn.h"

namespace tunejit::cpuref {

using Dims = std::vector<int64_t>;

// One element of a unary / binary op (hard_sigmoid reads alpha and beta).
float UnaryValue(UnaryFn fn, float x, float alpha = 0.2f, float beta = 0.5f);
float BinaryValue(BinaryFn fn, float a, float b);

std::vector<float> Unary(UnaryFn fn, absl::Span<const float> x, float alpha = 0.2f,
                         float beta = 0.5f);
// numpy broadcasting; the output has the broadcast shape (the caller checked that it exists).
std::vector<float> Binary(BinaryFn fn, const Dims& a_shape, absl::Span<const float> a,
                          const Dims& b_shape, absl::Span<const float> b);
std::vector<float> Concat(int axis, const std::vector<Dims>& shapes,
                          const std::vector<absl::Span<const float>>& inputs);
std::vector<float> Transpose(const Dims& shape, const Dims& perm, absl::Span<const float> x);
std::vector<float> Slice(const Dims& shape, int axis, int64_t start, int64_t end, int64_t step,
                         absl::Span<const float> x);
// Mean over `axes` (sorted); the output in row-major order of the kept dims.
std::vector<float> ReduceMean(const Dims& shape, const Dims& axes, absl::Span<const float> x);
// Normalizes over the dims from `axis` on: (x - mean) / sqrt(var + epsilon) * scale + bias.
std::vector<float> LayerNorm(const Dims& shape, int axis, float epsilon, absl::Span<const float> x,
                             absl::Span<const float> scale, absl::Span<const float> bias);
// The rotary position embedding over rows of D = shape.back() of [..., S, D] (tables [S, D]).
std::vector<float> Rope(const Dims& shape, absl::Span<const float> x,
                        absl::Span<const float> cos_table, absl::Span<const float> sin_table);
// RMS-normalizes each row of `cols`: x / sqrt(mean(x^2) + epsilon) * scale (Llama's, T5's).
std::vector<float> RmsNorm(int64_t cols, float epsilon, absl::Span<const float> x,
                           absl::Span<const float> scale);
// [..., M, K] x [..., K, N] with broadcast batch dims.
std::vector<float> MatMul(const Dims& a_shape, absl::Span<const float> a, const Dims& b_shape,
                          absl::Span<const float> b);
std::vector<float> SoftmaxAxis(const Dims& shape, int axis, absl::Span<const float> x);
// The table row an id reads (graph/graph.h gather): ids in [-rows, 0) count from the end, others
// outside [0, rows) are clamped.
int64_t GatherRow(int64_t id, int64_t rows);
// Rows of `table` [rows, ...] by `ids`: ids.size() rows of the table's other dims, in order.
std::vector<float> Gather(const Dims& table_shape, absl::Span<const float> table,
                          absl::Span<const int64_t> ids);

}  // namespace tunejit::cpuref

#endif  // TUNEJIT_OPS_TENSOR_OPS_REFERENCE_H_
