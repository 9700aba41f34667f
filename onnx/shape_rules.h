// File: onnx/shape_rules.h
// Internal to the ONNX importer (onnx/import.h): ONNX's shape rules as plain functions of dims,
// shared by the constant folder (onnx/fold.cc) and the mappers of activations (onnx/shape_ops.cc,
// onnx/slice_ops.cc, ...), so a folded Reshape and an imported one agree. Errors are
// InvalidArgument without the node prefix (callers add it through Importer::Error).
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> to, ReshapeTarget({2, 3, 4}, {0, -1}, false));
//   // to == [2, 12]
#ifndef TUNEJIT_ONNX_SHAPE_RULES_H_
#define TUNEJIT_ONNX_SHAPE_RULES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"

namespace tunejit::onnx_import {

using Dims = std::vector<int64_t>;

// Product of `dims` (callers bound the dims, so no overflow).
int64_t DimsProduct(const Dims& dims);

// `axis` in [-rank, rank) as [0, rank); an error naming `what` ("axis") otherwise.
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank, const char* what = "axis");
// Each axis normalized; sorted; a repeated axis is an error.
absl::StatusOr<Dims> NormalizeAxes(const Dims& axes, int64_t rank);

// Reshape's output dims: a 0 copies the input dim at that index (unless `allowzero`, where it
// means 0), one -1 is inferred from the element count.
absl::StatusOr<Dims> ReshapeTarget(const Dims& in, const Dims& to, bool allowzero);
// Unsqueeze's: a 1 inserted at each of `axes` (normalized against the output rank).
absl::StatusOr<Dims> UnsqueezeDims(const Dims& in, const Dims& axes);
// Squeeze's: `axes` removed (each must be 1); no axes: every 1 removed.
absl::StatusOr<Dims> SqueezeDims(const Dims& in, const std::optional<Dims>& axes);
// Flatten's: [prod(in[:axis]), prod(in[axis:])], axis in [-rank, rank].
absl::StatusOr<Dims> FlattenDims(const Dims& in, int64_t axis);

// One axis of ONNX Slice after clamping: elements start, start + step, ... (`count` of them).
struct SliceRange {
  int64_t start = 0, end = 0, step = 1, count = 0;
};
// ONNX's clamping (negative starts / ends count from the end; INT64_MAX means "to the end"; a
// negative step walks backwards). step must not be 0.
SliceRange ClampSlice(int64_t start, int64_t end, int64_t step, int64_t dim);

// One axis of a Slice node: which input axis and its clamped range.
struct AxisSlice {
  int64_t axis = 0;
  SliceRange range;
};
// starts / ends / axes / steps of a Slice node (axes and steps may be empty: all axes from 0,
// steps 1) over `in`, each axis normalized and clamped. Errors: sizes that differ, a repeated
// axis, a zero step.
absl::StatusOr<std::vector<AxisSlice>> SliceAxes(const Dims& in, const Dims& starts,
                                                 const Dims& ends, const Dims& axes,
                                                 const Dims& steps);

// Sizes of the outputs of Split over a dim of `dim` elements: `split` when given (its sum must be
// dim), else `outputs` parts: equal ones (dim divisible), or with `ceil_parts` (opset 18's
// num_outputs) ceil(dim / outputs) each and a smaller last one.
absl::StatusOr<Dims> SplitSizes(int64_t dim, const Dims& split, int64_t outputs, bool ceil_parts);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_SHAPE_RULES_H_
