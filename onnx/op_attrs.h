// File: onnx/op_attrs.h
// Internal to the ONNX importer (onnx/import.h): the attributes and constant operands of the shape
// ops, read once for both the constant folder (onnx/fold.cc) and the mappers of activations
// (onnx/shape_ops.cc, onnx/slice_ops.cc), so that a folded op and an imported one follow the same
// rules and name the same things in errors. `x` is the dims of the node's input 0 (an activation's
// shape or a constant's dims). Errors name the node (Importer::Error / Unsupported).
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> to, ReshapeOutputDims(im, n, x));
#ifndef TUNEJIT_ONNX_OP_ATTRS_H_
#define TUNEJIT_ONNX_OP_ATTRS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_rules.h"

namespace tunejit::onnx_import {

// Constant input `i` as integers (an INT64 / INT32 / ... scalar or 1-D tensor, e.g. a shape).
absl::StatusOr<Dims> IntOperand(Importer& im, const onnx::NodeProto& n, int i, const char* role);

// Reshape: input 1 (the shape) with its 0 / -1 rules and allowzero.
absl::StatusOr<Dims> ReshapeOutputDims(Importer& im, const onnx::NodeProto& n, const Dims& x);
// Expand: x broadcast with input 1 (the shape, no negative dims).
absl::StatusOr<Dims> ExpandOutputDims(Importer& im, const onnx::NodeProto& n, const Dims& x);
// Flatten: [prod(x[:axis]), prod(x[axis:])].
absl::StatusOr<Dims> FlattenOutputDims(Importer& im, const onnx::NodeProto& n, const Dims& x);
// Unsqueeze / Squeeze: axes as the attribute before opset 13, input 1 from 13.
absl::StatusOr<Dims> UnsqueezeOutputDims(Importer& im, const onnx::NodeProto& n, const Dims& x);
absl::StatusOr<Dims> SqueezeOutputDims(Importer& im, const onnx::NodeProto& n, const Dims& x);
// Transpose: perm (default: the dims reversed), checked to be a permutation of `rank` dims.
absl::StatusOr<Dims> TransposePerm(Importer& im, const onnx::NodeProto& n, int64_t rank);
// Concat: the required axis, normalized.
absl::StatusOr<int64_t> ConcatAxis(Importer& im, const onnx::NodeProto& n, int64_t rank);
// Slice: inputs 1-4 (starts, ends, axes, steps), clamped per axis.
absl::StatusOr<std::vector<AxisSlice>> SliceRanges(Importer& im, const onnx::NodeProto& n,
                                                   const Dims& x);

struct SplitSpec {
  int64_t axis = 0;
  Dims sizes;  // one per output of the node
};
// Split: axis, and the sizes from input 1 (opset 13 on) or the attribute 'split' (before), else
// num_outputs (opset 18) or equal parts; num_outputs must agree with the node's outputs.
absl::StatusOr<SplitSpec> SplitOf(Importer& im, const onnx::NodeProto& n, const Dims& x);

struct GatherSpec {
  int64_t axis = 0;
  Dims index_dims;  // the indices' dims (empty: a scalar index)
  Dims indices;     // normalized to [0, x[axis])
};
// Gather: axis and the constant indices (negative ones count from the end; out of range: error).
absl::StatusOr<GatherSpec> GatherOf(Importer& im, const onnx::NodeProto& n, const Dims& x);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_OP_ATTRS_H_
