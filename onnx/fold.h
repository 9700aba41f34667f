// File: onnx/fold.h
// Internal to the ONNX importer (onnx/import.h): constant folding at import. A node whose inputs
// are all constants is evaluated here when its op has an evaluator, and each output is bound as a
// constant named after its ONNX value. This is what removes the shape arithmetic that PyTorch
// writes around a dynamic batch (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) once --batch
// makes every shape static, and the small tables of attention (Expand of the class token, Where
// of -1 sizes, Sqrt of the head size).
//
//   Data movement (onnx/fold.cc): Reshape, Flatten, Squeeze, Unsqueeze, Concat, Gather,
//     GatherElements, Slice, Split, Expand, Transpose, ConstantOfShape.
//   Numbers (onnx/fold_math.cc), on INT64 / INT32 / INT8 / UINT8 / BOOL exactly and FLOAT /
//     DOUBLE in double precision: Add, Sub, Mul, Div, Mod, Pow, Min, Max, Neg, Abs, Sign, Sqrt,
//     Reciprocal, Exp, Log, Floor, Ceil, Round, Sigmoid, Tanh, Erf, Relu, Equal, Less,
//     LessOrEqual, Greater, GreaterOrEqual, Not, And, Or, Xor, Where, Cast, CastLike, Range, Cos,
//     Sin, Trilu, CumSum, Clip, MatMul.
// Integer overflow and division by zero are errors, never undefined behaviour. What folding may
// allocate is bounded (Importer::ChargeFold).
#ifndef TUNEJIT_ONNX_FOLD_H_
#define TUNEJIT_ONNX_FOLD_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "onnx/importer.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor.h"

namespace tunejit::onnx_import {

// Whether `op_type` has an evaluator.
bool CanFold(absl::string_view op_type);
// Evaluates `n`, whose present inputs are all constants, and binds its outputs.
absl::Status FoldNode(Importer& im, const onnx::NodeProto& n);

// What an evaluator sees: the node and its inputs (nullptr where omitted).
struct FoldArgs {
  Importer& im;
  const onnx::NodeProto& n;
  std::vector<std::shared_ptr<const ConstTensor>> in;

  // Input i, or an error naming it when omitted.
  absl::StatusOr<const ConstTensor*> Arg(int i) const;
  bool Has(int i) const { return i < static_cast<int>(in.size()) && in[i] != nullptr; }
  // A 1-D (or scalar) integer input's values, e.g. a shape.
  absl::StatusOr<std::vector<int64_t>> IntsArg(int i, const char* role) const;
  // Charges a result of `dims` to the fold budget (before it is allocated).
  absl::Status Charge(const std::vector<int64_t>& dims, DType dtype) const {
    return im.ChargeFold(n, dims, dtype);
  }
};

using Folded = absl::StatusOr<std::vector<ConstTensor>>;
using Folder = Folded (*)(const FoldArgs& a);

// The numeric evaluators (onnx/fold_math.cc); nullptr for other ops.
Folder FindMathFolder(absl::string_view op_type);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_FOLD_H_
