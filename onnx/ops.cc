// The op table, and the element-wise and shape ops: Relu, Clip, Add, Flatten, Reshape, Softmax,
// Dropout, Identity, Constant.
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

absl::StatusOr<std::vector<int64_t>> ActivationShape(Importer& im, const NodeProto& n, int i) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, i));
  if (v->is_constant()) {
    return im.Unsupported(n, absl::StrCat("input ", i, " ('", n.input(i),
                                          "') is a constant; expected an activation"));
  }
  return im.graph().tensor(v->tensor).shape;
}

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

// A constant broadcast against x [N, C, ...] that varies only along C (or is a single value):
// its C values, or nullopt.
std::optional<std::vector<float>> ChannelVector(const ConstTensor& c,
                                                const std::vector<int64_t>& x) {
  if (x.size() < 2 || c.dtype != DType::kF32) return std::nullopt;
  std::vector<float> v = c.Floats();
  if (v.size() == 1) return std::vector<float>(static_cast<size_t>(x[1]), v[0]);
  if (c.dims.size() > x.size()) return std::nullopt;
  std::vector<int64_t> dims(x.size() - c.dims.size(), 1);  // right-aligned broadcasting
  dims.insert(dims.end(), c.dims.begin(), c.dims.end());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != (i == 1 ? x[1] : 1)) return std::nullopt;
  }
  return v;
}

absl::Status AddConstant(Importer& im, const NodeProto& n, int x_input, const ConstTensor& c) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ActivationShape(im, n, x_input));
  std::optional<std::vector<float>> bias = ChannelVector(c, shape);
  if (!bias) {
    return im.Unsupported(
        n, absl::StrCat("adding the constant '", c.name, "' ", ShapeText(c.dims), " to ",
                        ShapeText(shape), ": only a per-channel (dim 1) bias is supported"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, x_input));
  std::vector<uint8_t> bytes = PackBytes(*bias);
  const int b = im.AddWeight(c.name.empty() ? n.input(1 - x_input) : c.name, DType::kF32,
                             {shape[1]}, std::move(bytes));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kBiasAdd, {x, b}, {}, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

absl::Status MapAdd(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* a, im.Input(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* b, im.Input(n, 1));
  if (a->is_constant() && b->is_constant()) {
    return im.Unsupported(n, "both inputs are constants");
  }
  if (a->is_constant() || b->is_constant()) {
    return AddConstant(im, n, a->is_constant() ? 1 : 0, *(a->is_constant() ? a : b)->constant);
  }
  const std::vector<int64_t> sa = im.graph().tensor(a->tensor).shape;
  const std::vector<int64_t> sb = im.graph().tensor(b->tensor).shape;
  if (sa != sb) {
    return im.Unsupported(n, absl::StrCat("adding ", ShapeText(sa), " and ", ShapeText(sb),
                                          ": two activations must have the same shape"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.FloatInput(n, 1));
  TUNEJIT_ASSIGN_OR_RETURN(int out, im.AddNode(n, OpKind::kAdd, {x, y}, {}, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(out));
}

absl::Status MapFlatten(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ActivationShape(im, n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 1));
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < 0) axis += rank;
  if (axis != 1) {
    return im.Unsupported(
        n, absl::StrCat("axis ", axis, " on ", ShapeText(shape), ": only axis 1 ([N, -1])"));
  }
  return Unary(im, n, OpKind::kFlatten);
}

// Reshape to [N, -1] or an equivalent ([N, prod(rest)], with 0 / -1 for N): a flatten.
absl::Status MapReshape(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, ActivationShape(im, n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> s, im.ConstInput(n, 1, "shape"));
  const std::vector<int64_t> to = s->Ints();
  int64_t inner = 1;
  for (size_t i = 1; i < x.size(); ++i) inner *= x[i];
  const bool keeps_batch = !x.empty() && to.size() == 2 && (to[0] == 0 || to[0] == x[0]);
  const bool flatten = to.size() == 2 && ((keeps_batch && to[1] == -1) ||
                                          (to[1] == inner && (keeps_batch || to[0] == -1)));
  if (!flatten) {
    return im.Unsupported(n, absl::StrCat("reshape of ", ShapeText(x), " to ", ShapeText(to),
                                          ": only [N, -1] (a flatten) is supported (a batch size "
                                          "written into the file? export with a dynamic batch)"));
  }
  return Unary(im, n, OpKind::kFlatten);
}

absl::Status MapSoftmax(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, ActivationShape(im, n, 0));
  // The default axis was 1 ("coerce to 2-D") before opset 13, then -1; for 2-D inputs both mean
  // "over the columns".
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", im.opset() < 13 ? 1 : -1));
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  if (x.size() != 2 || axis != 1) {
    return im.Unsupported(n, absl::StrCat("softmax over axis ", axis, " of ", ShapeText(x),
                                          ": only the last axis of a 2-D tensor"));
  }
  return Unary(im, n, OpKind::kSoftmax);
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
    {"Clip", MapClip},
    {"Constant", MapConstant},
    {"Conv", MapConv},
    {"DequantizeLinear", MapDequantizeLinear},
    {"Dropout", MapIdentity},
    {"Flatten", MapFlatten},
    {"Gemm", MapGemm},
    {"GlobalAveragePool", MapGlobalAveragePool},
    {"Identity", MapIdentity},
    {"MatMul", MapMatMul},
    {"MaxPool", MapMaxPool},
    {"QuantizeLinear", MapQuantizeLinear},
    {"Relu", MapRelu},
    {"Reshape", MapReshape},
    {"Softmax", MapSoftmax},
};

}  // namespace

OpMapper FindOpMapper(absl::string_view op_type) {
  for (const Entry& e : kMappers) {
    if (e.op_type == op_type) return e.map;
  }
  return nullptr;
}

}  // namespace tunejit::onnx_import
