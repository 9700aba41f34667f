// File: graph/shape_inference.h
// Output shape and dtype of one node from its inputs' descriptions: the single place that knows
// each op's shape rule (graph/graph.h lists them). Used by Graph::AddNode to fill outputs and by
// Graph::Validate to check declared ones. Errors name the input index, tensor and field, without
// the node prefix (the caller adds it).
//
//   TUNEJIT_ASSIGN_OR_RETURN(InferredOutput out, InferOutput(node.op, node.attrs, inputs));
#ifndef TUNEJIT_GRAPH_SHAPE_INFERENCE_H_
#define TUNEJIT_GRAPH_SHAPE_INFERENCE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/broadcast.h"
#include "graph/graph.h"

namespace tunejit {

struct InferredOutput {
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
};

// InvalidArgument when the inputs do not fit the op (count, rank, dtype, channel counts, a window
// larger than the padded input, non-positive strides...).
absl::StatusOr<InferredOutput> InferOutput(OpKind op, const NodeAttrs& attrs,
                                           absl::Span<const TensorDesc* const> inputs);

// What input `position` of `op` must be: a weight (conv/dense weight, bias, scales, layer_norm's
// scale and bias), an activation (data, the residual), or either (binary, concat and matmul
// operands).
// The axis softmax normalizes over: attrs.axis, or the last of `rank` dims for a negative one.
inline int SoftmaxAxis(const NodeAttrs& attrs, size_t rank) {
  return attrs.axis < 0 ? static_cast<int>(rank) + attrs.axis : attrs.axis;
}

enum class InputKind { kActivation, kWeight, kEither };
InputKind ExpectedInputKind(OpKind op, int position);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_SHAPE_INFERENCE_H_
