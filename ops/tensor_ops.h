// File: ops/tensor_ops.h
// Plans of the general tensor ops (kernel_sources/tensor_ops.cu; what they compute:
// ops/tensor_ops_reference.h, the graph ops: graph/graph.h). Like ops/elementwise.h they have no
// knobs: each builder returns the launches of one op, over row-major float32 tensors. Input and
// output indices follow the graph node's inputs (input k is the node's input k), output 0.
// Shapes are collapsed to the fewest dims that describe the access; more than six dims left is
// Unimplemented, a malformed shape InvalidArgument. Element types: float32 unless given; unary,
// binary and the copies (transpose, slice, concat) also take float16 (computed in float: the
// tensor-core path's NHWC activations stay fp16), and the copies int8.
//
//   TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k, BinaryKernel(BinaryFn::kMul, {32, 96, 56, 56},
//                                                          {32, 96, 1, 1}));
#ifndef TUNEJIT_OPS_TENSOR_OPS_H_
#define TUNEJIT_OPS_TENSOR_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/elementwise_fn.h"
#include "ops/elementwise.h"
#include "ops/op_template.h"

namespace tunejit {

using TensorDims = std::vector<int64_t>;

// y = fn(x) over `total` floats (hard_sigmoid reads alpha and beta).
absl::StatusOr<PlannedKernel> UnaryKernel(UnaryFn fn, int64_t total, float alpha = 0.2f,
                                          float beta = 0.5f,
                                          ElementType type = ElementType::kFloat32);
// y = a (fn) b with numpy broadcasting; inputs 0 a, 1 b.
struct BinaryTypes {
  ElementType a = ElementType::kFloat32, b = ElementType::kFloat32, out = ElementType::kFloat32;
};
absl::StatusOr<PlannedKernel> BinaryKernel(BinaryFn fn, const TensorDims& a, const TensorDims& b,
                                           BinaryTypes types = {});
// y = x with dims permuted (output dim i is input dim perm[i]).
absl::StatusOr<PlannedKernel> TransposeKernel(const TensorDims& shape, const TensorDims& perm,
                                              ElementType type = ElementType::kFloat32);
// y = x[..., start:end:step, ...] on `axis`.
absl::StatusOr<PlannedKernel> SliceKernel(const TensorDims& shape, int axis, int64_t start,
                                          int64_t end, int64_t step,
                                          ElementType type = ElementType::kFloat32);
// y = the inputs joined on `axis`: one launch per input (kernel k reads input k into its slice).
absl::StatusOr<std::vector<PlannedKernel>> ConcatKernels(int axis,
                                                         const std::vector<TensorDims>& shapes,
                                                         ElementType type = ElementType::kFloat32);
// Mean over `axes` (sorted, unique), which must be consecutive once dims of 1 are dropped
// (Unimplemented otherwise: the kernels reduce the middle of [outer, count, inner]). float16 only
// with dims after the reduced ones (an NHWC global average pool).
absl::StatusOr<PlannedKernel> ReduceMeanKernel(const TensorDims& shape, const TensorDims& axes,
                                               ElementType type = ElementType::kFloat32);
// Layer normalization of `rows` rows of `cols`; inputs 0 x, 1 scale [cols], 2 bias [cols]
// (float32); x and the output float32 or float16 (math in float32).
absl::StatusOr<PlannedKernel> LayerNormKernel(int64_t rows, int64_t cols, float epsilon,
                                              ElementType type = ElementType::kFloat32);
// The rotary position embedding (Llama's) over [..., S, D], D even: inputs 0 x, 1 cos and 2 sin
// tables (float32 [S, D]); y = x cos + rotate_half(x) sin, rotate_half(x) = concat(-x[D/2:],
// x[:D/2]). x and the output float32 or float16.
absl::StatusOr<PlannedKernel> RopeKernel(const TensorDims& shape,
                                         ElementType type = ElementType::kFloat32);
// RMS normalization (Llama's, T5's) of `rows` rows of `cols`: x * scale / sqrt(mean(x^2) + eps);
// inputs 0 x, 1 scale [cols] (float32); x and the output float32 or float16.
absl::StatusOr<PlannedKernel> RmsNormKernel(int64_t rows, int64_t cols, float epsilon,
                                            ElementType type = ElementType::kFloat32);
// Softmax over `axis`.
absl::StatusOr<PlannedKernel> SoftmaxAxisKernel(const TensorDims& shape, int axis);
// [..., M, K] x [..., K, N] with broadcast batch dims; inputs 0 a, 1 b.
absl::StatusOr<PlannedKernel> MatMulKernel(const TensorDims& a, const TensorDims& b);
// `count` rows of `row` floats picked by int64 ids from a table of `rows` such rows (an
// embedding); inputs 0 the table (float32), 1 the ids (int64, read on the device). An id in
// [-rows, 0) counts from the end, any other outside [0, rows) is clamped (graph/graph.h gather).
absl::StatusOr<PlannedKernel> GatherKernel(int64_t rows, int64_t row, int64_t count);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_TENSOR_OPS_H_
