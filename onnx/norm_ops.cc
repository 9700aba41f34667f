// ReduceMean, ReduceL2, LayerNormalization and Softmax on activations: the normalizations of
// transformers and ConvNeXt, each over explicit (normalized) axes.
#include <cmath>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "onnx/const_ops.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

// LayerNormalization's scale or bias: a FLOAT constant that broadcasts to the normalized dims,
// as a weight of exactly those dims. Absent (the bias only): `fill`.
absl::StatusOr<int> NormParam(Importer& im, const NodeProto& n, int i, const char* role,
                              const Dims& normalized, float fill) {
  const std::string name = absl::StrCat(n.output(0), ".", role);
  // Materialized at the activation's size, not the file's: charged like a folded constant.
  TUNEJIT_RETURN_IF_ERROR(im.ChargeFold(n, normalized, DType::kF32));
  if (!im.HasInput(n, i)) {
    const std::vector<float> v(static_cast<size_t>(DimsProduct(normalized)), fill);
    return im.AddWeight(name, DType::kF32, normalized, PackBytes(v));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, im.ConstInput(n, i, role));
  absl::StatusOr<ConstTensor> full = BroadcastTo(*t, normalized);
  if (!full.ok() || !IsFloatType(t->dtype)) {
    return im.Unsupported(n, absl::StrCat("the ", role, " '", n.input(i), "' (",
                                          std::string(DTypeName(t->dtype)), " ", ShapeText(t->dims),
                                          ") must be FLOAT of the normalized "
                                          "dims ",
                                          ShapeText(normalized)));
  }
  return im.AddWeight(n.input(i), DType::kF32, normalized, PackBytes(full->Floats()));
}

// A reduction of input 0, an activation: its axes (the attribute before opset 18, input 1 from
// 18; none means all of them) and keepdims. `noop`: no axes with noop_with_empty_axes, where the
// output is the input.
struct Reduction {
  Dims x;  // the input's shape
  int in = -1;
  NodeAttrs attrs;
  bool noop = false;
};

absl::StatusOr<Reduction> ReductionOf(Importer& im, const NodeProto& n) {
  Reduction r;
  TUNEJIT_ASSIGN_OR_RETURN(r.x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(std::optional<Dims> axes, im.AxesOperand(n, 1, 18));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t keepdims, im.AttrInt(n, "keepdims", 1));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t noop_with_empty_axes, im.AttrInt(n, "noop_with_empty_axes", 0));
  TUNEJIT_ASSIGN_OR_RETURN(r.in, im.FloatInput(n, 0));
  r.attrs.keepdims = keepdims != 0;
  if (!axes || axes->empty()) {
    r.noop = noop_with_empty_axes != 0;
    if (r.noop) return r;
    for (size_t d = 0; d < r.x.size(); ++d) r.attrs.axes.push_back(static_cast<int64_t>(d));
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(r.attrs.axes,
                             im.AtNode(n, NormalizeAxes(*axes, static_cast<int64_t>(r.x.size()))));
  }
  if (r.attrs.axes.empty()) return im.Unsupported(n, "a reduction over no axes of a scalar");
  return r;
}

}  // namespace

// ReduceMean (ReductionOf).
absl::Status MapReduceMean(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Reduction r, ReductionOf(im, n));
  if (r.noop) return im.BindOutput(n, 0, Value::Tensor(r.in));
  return im.AddOutputNode(n, OpKind::kReduceMean, {r.in}, r.attrs);
}

// ReduceL2 (Swin V2's cosine attention normalizes q and k by it) as the ops it is made of:
// sqrt(count * mean(x * x)) over the axes' `count` elements.
absl::Status MapReduceL2(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Reduction r, ReductionOf(im, n));
  if (r.noop) return im.BindOutput(n, 0, Value::Tensor(r.in));
  const int in = r.in;
  const NodeAttrs& attrs = r.attrs;
  const Dims& x = r.x;
  int64_t count = 1;
  for (int64_t axis : attrs.axes) count *= x[axis];
  NodeAttrs mul;
  mul.binary = BinaryFn::kMul;
  TUNEJIT_ASSIGN_OR_RETURN(int squares, im.AddNode(n, OpKind::kBinary, {in, in}, mul,
                                                   im.OutName(n, ".squares"), ".squares"));
  TUNEJIT_ASSIGN_OR_RETURN(int mean, im.AddNode(n, OpKind::kReduceMean, {squares}, attrs,
                                                im.OutName(n, ".mean"), ".mean"));
  const int count_weight = im.AddWeight(absl::StrCat(n.output(0), ".count"), DType::kF32, {1},
                                        PackBytes(std::vector<float>{static_cast<float>(count)}));
  TUNEJIT_ASSIGN_OR_RETURN(int sum, im.AddNode(n, OpKind::kBinary, {mean, count_weight}, mul,
                                               im.OutName(n, ".sum"), ".sum"));
  NodeAttrs sqrt;
  sqrt.unary = UnaryFn::kSqrt;
  return im.AddOutputNode(n, OpKind::kUnary, {sum}, sqrt);
}

// LayerNormalization over the dims from `axis` on (stash_type only sets the precision of the
// statistics). The Mean / InvStdDev outputs are training outputs: they must be unused.
absl::Status MapLayerNormalization(Importer& im, const NodeProto& n) {
  TUNEJIT_RETURN_IF_ERROR(im.RequireUnusedOutputs(n, 1));
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", -1));
  NodeAttrs attrs;
  TUNEJIT_ASSIGN_OR_RETURN(
      int64_t a,
      im.AtNode(n, NormalizeAxis(axis, static_cast<int64_t>(x.size()), "attribute 'axis'")));
  attrs.axis = static_cast<int>(a);
  TUNEJIT_ASSIGN_OR_RETURN(attrs.epsilon, im.AttrFloat(n, "epsilon", 1e-5f));
  if (!(attrs.epsilon > 0) || !std::isfinite(attrs.epsilon)) {
    return im.Error(n, absl::StrCat("attribute 'epsilon' = ", attrs.epsilon,
                                    ": it must be positive and finite"));
  }
  const Dims normalized(x.begin() + a, x.end());
  TUNEJIT_ASSIGN_OR_RETURN(int scale, NormParam(im, n, 1, "scale", normalized, 1.f));
  TUNEJIT_ASSIGN_OR_RETURN(int bias, NormParam(im, n, 2, "bias", normalized, 0.f));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  return im.AddOutputNode(n, OpKind::kLayerNorm, {in, scale, bias}, attrs);
}

// Softmax over any axis from opset 13. Before, Softmax flattened the dims from `axis` on into one
// ("coerce to 2-D"): that is a softmax over the last axis only when axis is the last one.
absl::Status MapSoftmax(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  const bool coerce = im.opset() < 13;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", coerce ? 1 : -1));
  const int64_t rank = static_cast<int64_t>(x.size());
  TUNEJIT_ASSIGN_OR_RETURN(int64_t a, im.AtNode(n, NormalizeAxis(axis, rank, "attribute 'axis'")));
  if (coerce && a != rank - 1) {
    return im.Unsupported(
        n, absl::StrCat("attribute 'axis' = ", axis, " on ", ShapeText(x), " at opset ", im.opset(),
                        ": before opset 13 Softmax flattens the dims from axis on into one; only "
                        "axis = rank - 1 (a softmax over the last axis) is supported"));
  }
  NodeAttrs attrs;
  attrs.axis = static_cast<int>(a);
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  return im.AddOutputNode(n, OpKind::kSoftmax, {in}, attrs);
}

}  // namespace tunejit::onnx_import
