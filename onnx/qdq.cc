// QuantizeLinear / DequantizeLinear (QDQ) models, as TensorRT's pytorch-quantization and ONNX
// Runtime's int8 tools write them, imported as the float graph they fake-quantize:
//   x -> Q(s) -> DQ(s)         an activation: the identity; s becomes x's activation scale
//                              (OnnxModel::activation_scales), which `--precision int8` uses
//                              instead of calibrating x (ExecutorOptions::activation_scales)
//   DQ(int8 / int32 const)     the float constant q * s (per tensor, or per slice of `axis`): a
//   DQ(Q(float const))         fake-quantized weight, or a bias
// The graph keeps no quantization op, so fp32 runs the float graph and int8 quantizes it our way:
// weights per output channel as max |w| / 127, which gives back the file's q and s exactly when
// each output channel's max |q| is 127 (symmetric max calibration); a warning says when not.
// Only symmetric int8 is supported (zero points 0): what our int8 kernels compute.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

// QuantizeLinear's output_dtype attribute value for INT8 (opset 21), TensorProto::INT8.
constexpr int64_t kOnnxInt8 = onnx::TensorProto::INT8;

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

int8_t Saturate(double v) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(v), -128.0, 127.0));  // half to even
}

// The scales of a Q/DQ node over x of `dims`: one (per tensor) or one per slice along `axis`.
struct QParams {
  std::vector<float> scales;
  int64_t axis = 0;
  int64_t inner = 1;  // elements per scale slice run (product of dims after axis)
  float At(int64_t i, const std::vector<int64_t>& dims) const {
    if (scales.size() == 1) return scales[0];
    return scales[(i / inner) % dims[axis]];
  }
};

// Zero point: absent (DQ: 0 of its input's type; Q: UINT8 unless opset 21's output_dtype says
// INT8), or all zeros of `expected` (the int8 Q output, or the DQ constant's type).
absl::Status CheckZeroPoint(Importer& im, const NodeProto& n, DType expected) {
  if (!im.HasInput(n, 2)) {
    if (n.op_type() == "DequantizeLinear") return absl::OkStatus();
    TUNEJIT_ASSIGN_OR_RETURN(int64_t out_type, im.AttrInt(n, "output_dtype", 0));
    if (out_type == kOnnxInt8) return absl::OkStatus();
    return im.Unsupported(n,
                          "no zero point means UINT8: only symmetric INT8 (zero point 0) "
                          "quantization is supported");
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> zp,
                           im.ConstInput(n, 2, "zero point"));
  const std::vector<int64_t> v = zp->Ints();
  if (zp->dtype != expected || std::any_of(v.begin(), v.end(), [](int64_t z) { return z != 0; })) {
    return im.Unsupported(
        n, absl::StrCat("zero point '", n.input(2), "' is ", std::string(DTypeName(zp->dtype)), " ",
                        ShapeText(zp->dims),
                        ": only symmetric int8 (zero point 0) quantization is supported"));
  }
  return absl::OkStatus();
}

absl::StatusOr<QParams> ReadQParams(Importer& im, const NodeProto& n,
                                    const std::vector<int64_t>& dims, bool allow_axis) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t block, im.AttrInt(n, "block_size", 0));
  if (block != 0) return im.Unsupported(n, "blocked quantization (block_size)");
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> s, im.ConstInput(n, 1, "scale"));
  QParams q;
  q.scales = s->Floats();
  if (q.scales.empty()) return im.Error(n, "the scale is empty");
  for (float v : q.scales) {
    if (s->dtype != DType::kF32 || !(v > 0) || !std::isfinite(v)) {
      return im.Error(n, "the scale must be FLOAT, positive and finite");
    }
  }
  if (q.scales.size() == 1) return q;
  TUNEJIT_ASSIGN_OR_RETURN(q.axis, im.AttrInt(n, "axis", 1));
  if (q.axis < 0) q.axis += static_cast<int64_t>(dims.size());
  if (!allow_axis || q.axis < 0 || q.axis >= static_cast<int64_t>(dims.size()) ||
      s->dims.size() != 1 || s->dims[0] != dims[q.axis]) {
    return im.Unsupported(n, absl::StrCat("scale ", ShapeText(s->dims), " over ", ShapeText(dims),
                                          ": per-axis scales only for constants, with one scale "
                                          "per slice of the axis"));
  }
  for (size_t i = static_cast<size_t>(q.axis) + 1; i < dims.size(); ++i) q.inner *= dims[i];
  return q;
}

// Q(constant): folded to an int8 constant (the DQ after it makes the fake-quantized float).
absl::Status QuantizeConstant(Importer& im, const NodeProto& n, const ConstTensor& x) {
  TUNEJIT_ASSIGN_OR_RETURN(QParams q, ReadQParams(im, n, x.dims, true));
  const std::vector<float> f = x.Floats();
  if (std::any_of(f.begin(), f.end(), [](float e) { return std::isnan(e); })) {
    return im.Error(n, absl::StrCat("constant '", x.name, "' holds NaN, which has no int8 value"));
  }
  std::vector<int8_t> v(f.size());
  for (size_t i = 0; i < f.size(); ++i) v[i] = Saturate(f[i] / q.At(i, x.dims));
  return im.BindOutput(n, 0, Value::Constant({x.name, DType::kI8, x.dims, PackBytes(v)}));
}

// The executor re-derives int8 weights per output channel (dim 0 of a conv weight and of a
// Gemm transB weight, as PyTorch exports them) as max |w| / 127; a channel whose max |q| is not
// 127 then gets other integers than the file's (a finer grid: still q * s within half a step).
void WarnIfNotMaxCalibrated(Importer& im, const ConstTensor& x, const std::vector<int64_t>& q) {
  if (x.dims.empty() || x.dims[0] < 1) return;
  const size_t per_channel = q.size() / static_cast<size_t>(x.dims[0]);
  int64_t off = 0;
  for (int64_t c = 0; c < x.dims[0]; ++c) {
    int64_t max_abs = 0;
    for (size_t i = 0; i < per_channel; ++i) {
      max_abs = std::max<int64_t>(max_abs, std::abs(q[c * per_channel + i]));
    }
    if (max_abs != 0 && max_abs != 127) ++off;
  }
  if (off == 0) return;
  im.Warn(absl::StrCat("int8 weight '", x.name, "': ", off, " of ", x.dims[0],
                       " output channels have max |q| below 127, so int8 re-quantizes them (max "
                       "|w| / 127 per channel) to other integers than the file's"));
}

// DQ(constant): the float values q * s.
absl::Status DequantizeConstant(Importer& im, const NodeProto& n, const ConstTensor& x) {
  if (x.dtype != DType::kI8 && x.dtype != DType::kI32) {
    return im.Unsupported(n, absl::StrCat("dequantizing ", std::string(DTypeName(x.dtype)),
                                          ": only INT8 weights and INT32 biases"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckZeroPoint(im, n, x.dtype));
  TUNEJIT_ASSIGN_OR_RETURN(QParams q, ReadQParams(im, n, x.dims, true));
  const std::vector<int64_t> ints = x.Ints();
  if (x.dtype == DType::kI8) WarnIfNotMaxCalibrated(im, x, ints);
  std::vector<float> f(ints.size());
  for (size_t i = 0; i < ints.size(); ++i) f[i] = static_cast<float>(ints[i]) * q.At(i, x.dims);
  return im.BindOutput(n, 0, Value::Constant({x.name, DType::kF32, x.dims, PackBytes(f)}));
}

}  // namespace

absl::Status MapQuantizeLinear(Importer& im, const NodeProto& n) {
  TUNEJIT_RETURN_IF_ERROR(CheckZeroPoint(im, n, DType::kI8));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, 0));
  if (v->is_constant()) return QuantizeConstant(im, n, *v->constant);
  if (v->qdq_scale > 0) return im.Error(n, "input is already quantized");
  const TensorDesc& t = im.graph().tensor(v->tensor);
  if (t.dtype != DType::kF32) return im.Error(n, "input is not float32");
  TUNEJIT_ASSIGN_OR_RETURN(QParams q, ReadQParams(im, n, t.shape, false));
  Value out = Value::Tensor(v->tensor);
  out.qdq_scale = q.scales[0];
  return im.BindOutput(n, 0, std::move(out));
}

absl::Status MapDequantizeLinear(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, 0));
  if (v->is_constant()) return DequantizeConstant(im, n, *v->constant);
  if (v->qdq_scale <= 0) {
    return im.Unsupported(n, absl::StrCat("input '", n.input(0),
                                          "' is not a QuantizeLinear output or an int8 "
                                          "initializer"));
  }
  TUNEJIT_RETURN_IF_ERROR(CheckZeroPoint(im, n, DType::kI8));
  TUNEJIT_ASSIGN_OR_RETURN(QParams q,
                           ReadQParams(im, n, im.graph().tensor(v->tensor).shape, false));
  if (q.scales[0] != v->qdq_scale) {
    return im.Unsupported(n, absl::StrCat("scale ", q.scales[0],
                                          " differs from its QuantizeLinear's ", v->qdq_scale));
  }
  // DQ(Q(x)) is x rounded to the int8 grid: the float graph keeps x, the executor the grid.
  const int x = v->tensor;
  im.SetActivationScale(x, q.scales[0]);
  return im.BindOutput(n, 0, Value::Tensor(x));
}

}  // namespace tunejit::onnx_import
