// File: onnx/const_ops.h
// Internal to the ONNX importer (onnx/import.h): constants (ConstTensor) reshaped, broadcast,
// transposed, sliced, gathered and joined, for the constant folder (onnx/fold.cc) and for mappers
// that reshape a constant operand (LayerNormalization's scale). Data movement works on element
// bytes, so any dtype the importer decodes keeps its exact values; the numeric conversions
// (FromDoubles / FromInts) saturate rather than overflow.
//
//   TUNEJIT_ASSIGN_OR_RETURN(ConstTensor b, BroadcastTo(bias, {2, 3, 4}));
#ifndef TUNEJIT_ONNX_CONST_OPS_H_
#define TUNEJIT_ONNX_CONST_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "onnx/shape_rules.h"
#include "onnx/tensor.h"

namespace tunejit::onnx_import {

// FLOAT or DOUBLE: arithmetic on it is floating point; every other decoded dtype is an integer
// (BOOL included).
bool IsFloatType(DType t);

// A constant of `dtype` over `dims` holding `values` converted (NaN and out-of-range values
// saturate for integer dtypes; BOOL is value != 0).
ConstTensor FromDoubles(DType dtype, Dims dims, const std::vector<double>& values);
ConstTensor FromInts(DType dtype, Dims dims, const std::vector<int64_t>& values);

// `in` viewed with other dims of the same element count (bytes unchanged).
ConstTensor WithDims(const ConstTensor& in, Dims dims);
// numpy broadcasting of `in` to `dims` (in's dims right-aligned, each equal or 1); an error when
// they do not broadcast that way.
absl::StatusOr<ConstTensor> BroadcastTo(const ConstTensor& in, const Dims& dims);
// Output dim k is input dim perm[k] (perm: a permutation, checked by the caller).
ConstTensor TransposeConst(const ConstTensor& in, const Dims& perm);
// The elements of each AxisSlice (clamped: onnx/shape_rules.h), any step sign.
ConstTensor SliceConst(const ConstTensor& in, const std::vector<AxisSlice>& slices);
// data's `axis` indexed by `indices` (already normalized to [0, dim)), whose dims `index_dims`
// replace that axis in the output.
ConstTensor GatherConst(const ConstTensor& data, int64_t axis, const Dims& index_dims,
                        const std::vector<int64_t>& indices);
// GatherElements: out has index_dims (the data's rank); out[o] = data[o with dim `axis` replaced
// by indices[o]] (indices already normalized to [0, data.dims[axis]); index_dims[k] <= data.dims[k]
// elsewhere, checked by the caller).
ConstTensor GatherElementsConst(const ConstTensor& data, int64_t axis, const Dims& index_dims,
                                const std::vector<int64_t>& indices);
// Joined along `axis` (normalized); dims must agree elsewhere and dtypes match.
absl::StatusOr<ConstTensor> ConcatConst(const std::vector<const ConstTensor*>& in, int64_t axis);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_CONST_OPS_H_
