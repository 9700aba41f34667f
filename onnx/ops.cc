// The op table, and the simplest mappers: Relu, Clip, Dropout, Identity, Constant.
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;

// `op` applied to the float input, bound to output 0.
absl::Status Unary(Importer& im, const NodeProto& n, OpKind op, const NodeAttrs& attrs = {}) {
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, op, {x}, attrs, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

absl::Status MapRelu(Importer& im, const NodeProto& n) { return Unary(im, n, OpKind::kRelu); }

// A scalar bound of Clip (inputs 1 and 2 since opset 11); `fallback` when omitted.
absl::StatusOr<float> ClipBound(Importer& im, const NodeProto& n, int i, float fallback) {
  if (!im.HasInput(n, i)) return fallback;
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t,
                           im.ConstInput(n, i, i == 1 ? "min" : "max"));
  if (t->NumElements() != 1) {
    return im.Error(n, absl::StrCat("the ", i == 1 ? "min" : "max", " must be a scalar, got ",
                                    ShapeText(t->dims)));
  }
  return t->Floats()[0];
}

absl::Status MapClip(Importer& im, const NodeProto& n) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  TUNEJIT_ASSIGN_OR_RETURN(float lo, ClipBound(im, n, 1, -kInf));
  TUNEJIT_ASSIGN_OR_RETURN(float hi, ClipBound(im, n, 2, kInf));
  if (!(lo <= hi)) return im.Error(n, absl::StrCat("min ", lo, " > max ", hi));
  if (lo == 0.f && hi == kInf) return Unary(im, n, OpKind::kRelu);
  NodeAttrs a;
  a.clip_min = lo;
  a.clip_max = hi;
  return Unary(im, n, OpKind::kClip, a);
}

// Dropout (inference) and Identity: the output is the input.
absl::Status MapIdentity(Importer& im, const NodeProto& n) {
  TUNEJIT_RETURN_IF_ERROR(im.RequireUnusedOutputs(n, 1));  // Dropout's mask
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, 0));
  Value copy = *v;
  return im.BindOutput(n, 0, std::move(copy));
}

absl::StatusOr<ConstTensor> ConstantValue(Importer& im, const NodeProto& n) {
  if (n.attribute_size() != 1) return im.Error(n, "expects exactly one value attribute");
  const AttributeProto& a = n.attribute(0);
  auto pack = [](DType dtype, std::vector<int64_t> dims, const auto& values) {
    return ConstTensor{"", dtype, std::move(dims), PackBytes(values)};
  };
  if (a.name() == "value" && a.type() == AttributeProto::TENSOR) {
    return DecodeTensor(a.t(), im.tensor_source());
  }
  if (a.name() == "value_float" && a.type() == AttributeProto::FLOAT) {
    return pack(DType::kF32, {}, std::vector<float>{a.f()});
  }
  if (a.name() == "value_floats" && a.type() == AttributeProto::FLOATS) {
    return pack(DType::kF32, {a.floats_size()},
                std::vector<float>(a.floats().begin(), a.floats().end()));
  }
  if (a.name() == "value_int" && a.type() == AttributeProto::INT) {
    return pack(DType::kI64, {}, std::vector<int64_t>{a.i()});
  }
  if (a.name() == "value_ints" && a.type() == AttributeProto::INTS) {
    return pack(DType::kI64, {a.ints_size()},
                std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  return im.Unsupported(n, absl::StrCat("attribute '", a.name(),
                                        "' (sparse or string "
                                        "constants are not supported)"));
}

absl::Status MapConstant(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor t, ConstantValue(im, n));
  if (n.output_size() > 0) t.name = n.output(0);  // the value's name, as for an initializer
  return im.BindOutput(n, 0, Value::Constant(std::move(t)));
}

struct Entry {
  absl::string_view op_type;
  OpMapper map;
};

constexpr Entry kMappers[] = {
    {"Add", MapAdd},
    {"AveragePool", MapAveragePool},
    {"BatchNormalization", MapBatchNormalization},
    {"Cast", MapCast},
    {"Clip", MapClip},
    {"Concat", MapConcat},
    {"Constant", MapConstant},
    {"Conv", MapConv},
    {"DequantizeLinear", MapDequantizeLinear},
    {"Div", MapBinaryFunction},
    {"Dropout", MapIdentity},
    {"Erf", MapUnaryFunction},
    {"Exp", MapUnaryFunction},
    {"Expand", MapExpand},
    {"Flatten", MapFlatten},
    {"Gather", MapGather},
    {"Gelu", MapUnaryFunction},
    {"Gemm", MapGemm},
    {"GlobalAveragePool", MapGlobalAveragePool},
    {"HardSigmoid", MapUnaryFunction},
    {"HardSwish", MapUnaryFunction},
    {"Identity", MapIdentity},
    {"IsNaN", MapIsNaN},
    {"LayerNormalization", MapLayerNormalization},
    {"MatMul", MapMatMul},
    {"Max", MapBinaryFunction},
    {"MaxPool", MapMaxPool},
    {"Min", MapBinaryFunction},
    {"Mul", MapBinaryFunction},
    {"Neg", MapUnaryFunction},
    {"Pad", MapPad},
    {"Pow", MapBinaryFunction},
    {"QuantizeLinear", MapQuantizeLinear},
    {"Reciprocal", MapUnaryFunction},
    {"ReduceL2", MapReduceL2},
    {"ReduceMean", MapReduceMean},
    {"Relu", MapRelu},
    {"Reshape", MapReshape},
    {"Shape", MapShape},
    {"Sigmoid", MapUnaryFunction},
    {"Size", MapSize},
    {"Slice", MapSlice},
    {"Softmax", MapSoftmax},
    {"Split", MapSplit},
    {"Sqrt", MapUnaryFunction},
    {"Squeeze", MapSqueeze},
    {"Sub", MapBinaryFunction},
    {"Tanh", MapUnaryFunction},
    {"Transpose", MapTranspose},
    {"Unsqueeze", MapUnsqueeze},
    {"Where", MapWhere},
};

}  // namespace

OpMapper FindOpMapper(absl::string_view op_type) {
  for (const Entry& e : kMappers) {
    if (e.op_type == op_type) return e.map;
  }
  return nullptr;
}

}  // namespace tunejit::onnx_import
