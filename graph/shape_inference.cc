#include "graph/shape_inference.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

std::string Shape(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

std::string Describe(int index, const TensorDesc& t) {
  return absl::StrCat("input ", index, " '", t.name, "' ", std::string(DTypeName(t.dtype)), " ",
                      Shape(t.shape));
}

absl::Status Fail(int index, const TensorDesc& t, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(Describe(index, t), ": ", why));
}

absl::Status ExpectRank(int index, const TensorDesc& t, size_t rank) {
  if (t.shape.size() == rank) return absl::OkStatus();
  return Fail(index, t, absl::StrCat("expected rank ", rank));
}

absl::Status ExpectDType(int index, const TensorDesc& t, std::initializer_list<DType> allowed) {
  for (DType d : allowed) {
    if (t.dtype == d) return absl::OkStatus();
  }
  std::vector<std::string> names;
  for (DType d : allowed) names.emplace_back(DTypeName(d));
  return Fail(index, t, absl::StrCat("dtype must be ", absl::StrJoin(names, " or ")));
}

absl::Status CheckWindow(const NodeAttrs& a, bool conv) {
  if (a.stride_h < 1 || a.stride_w < 1 || a.pad_top < 0 || a.pad_left < 0 || a.pad_bottom < 0 ||
      a.pad_right < 0 || (conv && (a.dilation_h < 1 || a.dilation_w < 1 || a.groups < 1)) ||
      (!conv && (a.pool_h < 1 || a.pool_w < 1))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attrs: strides (", a.stride_h, ", ", a.stride_w, ")",
        conv
            ? absl::StrCat(", dilation (", a.dilation_h, ", ", a.dilation_w, "), groups ", a.groups)
            : absl::StrCat(", pool (", a.pool_h, ", ", a.pool_w, ")"),
        " must be >= 1 and padding >= 0"));
  }
  return absl::OkStatus();
}

// Floor output size; an error when the (dilated) window does not fit the padded input.
absl::StatusOr<int64_t> OutDim(const char* axis, int64_t in, int pad0, int pad1, int64_t window,
                               int stride) {
  const int64_t span = in + pad0 + pad1 - window;
  if (span < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("window ", window, " is larger than padded ", axis, " ", in + pad0 + pad1));
  }
  return span / stride + 1;
}

absl::StatusOr<InferredOutput> Conv2d(const NodeAttrs& a, const TensorDesc& x,
                                      const TensorDesc& w) {
  TUNEJIT_RETURN_IF_ERROR(CheckWindow(a, true));
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(0, x, 4));
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(1, w, 4));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32, DType::kI8}));
  if (w.dtype != x.dtype) return Fail(1, w, "dtype must equal the data's");
  if (x.shape[1] % a.groups != 0 || w.shape[0] % a.groups != 0 ||
      w.shape[1] * a.groups != x.shape[1]) {
    return Fail(1, w,
                absl::StrCat("expected [CO, ", x.shape[1] / a.groups, ", KH, KW] (data CI ",
                             x.shape[1], " / groups ", a.groups, ", CO divisible by groups)"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int64_t oh, OutDim("H", x.shape[2], a.pad_top, a.pad_bottom,
                                              (w.shape[2] - 1) * a.dilation_h + 1, a.stride_h));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t ow, OutDim("W", x.shape[3], a.pad_left, a.pad_right,
                                              (w.shape[3] - 1) * a.dilation_w + 1, a.stride_w));
  return InferredOutput{{x.shape[0], w.shape[0], oh, ow},
                        x.dtype == DType::kI8 ? DType::kI32 : DType::kF32};
}

absl::StatusOr<InferredOutput> Dense(const TensorDesc& x, const TensorDesc& w) {
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(0, x, 2));
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(1, w, 2));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32, DType::kI8}));
  if (w.dtype != x.dtype) return Fail(1, w, "dtype must equal the data's");
  if (w.shape[1] != x.shape[1]) {
    return Fail(1, w, absl::StrCat("expected [N, ", x.shape[1], "] (K of the data)"));
  }
  return InferredOutput{{x.shape[0], w.shape[0]},
                        x.dtype == DType::kI8 ? DType::kI32 : DType::kF32};
}

// Pads must be smaller than the window so that every window holds at least one real element (a
// max pool never yields -inf, an average never divides by zero); ONNX and PyTorch exports obey it.
absl::Status CheckPoolPads(const NodeAttrs& a) {
  if (a.pad_top < a.pool_h && a.pad_bottom < a.pool_h && a.pad_left < a.pool_w &&
      a.pad_right < a.pool_w) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "attrs: pads (", a.pad_top, ", ", a.pad_left, ", ", a.pad_bottom, ", ", a.pad_right,
      ") must be smaller than the pool window (", a.pool_h, ", ", a.pool_w, ")"));
}

// max_pool2d (f32 or i8) and avg_pool2d (f32).
absl::StatusOr<InferredOutput> Pool(const NodeAttrs& a, const TensorDesc& x, bool max) {
  TUNEJIT_RETURN_IF_ERROR(CheckWindow(a, false));
  TUNEJIT_RETURN_IF_ERROR(CheckPoolPads(a));
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(0, x, 4));
  if (max) {
    TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32, DType::kI8}));
  } else {
    TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int64_t oh,
                           OutDim("H", x.shape[2], a.pad_top, a.pad_bottom, a.pool_h, a.stride_h));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t ow,
                           OutDim("W", x.shape[3], a.pad_left, a.pad_right, a.pool_w, a.stride_w));
  return InferredOutput{{x.shape[0], x.shape[1], oh, ow}, x.dtype};
}

absl::StatusOr<InferredOutput> GlobalAvgPool(const TensorDesc& x) {
  TUNEJIT_RETURN_IF_ERROR(ExpectRank(0, x, 4));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  return InferredOutput{{x.shape[0], x.shape[1], 1, 1}, x.dtype};
}

// The residual add: no broadcasting (the importer rejects it), so both operands match exactly.
absl::StatusOr<InferredOutput> Add(const TensorDesc& x, const TensorDesc& y) {
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(1, y, {DType::kF32}));
  if (y.shape != x.shape) {
    return Fail(1, y, absl::StrCat("expected the shape of input 0 ", Shape(x.shape)));
  }
  return InferredOutput{x.shape, x.dtype};
}

absl::StatusOr<InferredOutput> Clip(const NodeAttrs& a, const TensorDesc& x) {
  // Infinite bounds are fine (ONNX Clip without min or max); NaN or an empty range is not.
  if (std::isnan(a.clip_min) || std::isnan(a.clip_max) || a.clip_min > a.clip_max) {
    return absl::InvalidArgumentError(absl::StrCat("attrs: clip range [", a.clip_min, ", ",
                                                   a.clip_max, "] must be ordered, without NaN"));
  }
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  return InferredOutput{x.shape, x.dtype};
}

// x [N, C, ...] with a per-channel vector: bias_add's bias or a (de/re)quantize scale.
absl::Status ChannelVector(const TensorDesc& x, const TensorDesc& v, bool allow_one) {
  if (x.shape.size() < 2) return Fail(0, x, "expected rank >= 2 ([N, C, ...])");
  if (v.shape.size() == 1 && (v.shape[0] == x.shape[1] || (allow_one && v.shape[0] == 1))) {
    return absl::OkStatus();
  }
  return Fail(1, v,
              absl::StrCat("expected [", x.shape[1], "] (channels of input 0)",
                           allow_one ? " or [1]" : ""));
}

absl::StatusOr<InferredOutput> Other(OpKind op, const TensorDesc& x, const TensorDesc* v) {
  switch (op) {
    case OpKind::kBiasAdd:
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32, DType::kI32}));
      TUNEJIT_RETURN_IF_ERROR(ChannelVector(x, *v, false));
      if (v->dtype != x.dtype) return Fail(1, *v, "dtype must equal input 0's");
      return InferredOutput{x.shape, x.dtype};
    case OpKind::kRelu:
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32, DType::kI8, DType::kI32}));
      return InferredOutput{x.shape, x.dtype};
    case OpKind::kFlatten: {
      if (x.shape.empty()) return Fail(0, x, "expected rank >= 1");
      int64_t inner = 1;
      for (size_t i = 1; i < x.shape.size(); ++i) inner *= x.shape[i];
      return InferredOutput{{x.shape[0], inner}, x.dtype};
    }
    case OpKind::kQuantize:
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
      return InferredOutput{x.shape, DType::kI8};
    case OpKind::kDequantize:
    case OpKind::kRequantize:
      TUNEJIT_RETURN_IF_ERROR(op == OpKind::kDequantize
                                  ? ExpectDType(0, x, {DType::kI8, DType::kI32})
                                  : ExpectDType(0, x, {DType::kI32}));
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(1, *v, {DType::kF32}));
      TUNEJIT_RETURN_IF_ERROR(ChannelVector(x, *v, true));
      return InferredOutput{x.shape, op == OpKind::kDequantize ? DType::kF32 : DType::kI8};
    default:
      return absl::InternalError("unhandled op");
  }
}

bool IsTensorOp(OpKind op) {
  switch (op) {
    case OpKind::kSoftmax:
    case OpKind::kUnary:
    case OpKind::kBinary:
    case OpKind::kConcat:
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kSlice:
    case OpKind::kReduceMean:
    case OpKind::kLayerNorm:
    case OpKind::kMatMul:
    case OpKind::kGather:
      return true;
    default:
      return false;
  }
}

absl::Status CheckAxis(const char* what, int64_t axis, size_t rank) {
  if (axis >= 0 && axis < static_cast<int64_t>(rank)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("attrs: ", what, " ", axis, " is not a dim of a rank-", rank, " tensor"));
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

absl::StatusOr<InferredOutput> Concat(const NodeAttrs& a,
                                      absl::Span<const TensorDesc* const> inputs) {
  const TensorDesc& first = *inputs[0];
  TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", a.axis, first.shape.size()));
  std::vector<int64_t> out = first.shape;
  out[a.axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& t = *inputs[i];
    TUNEJIT_RETURN_IF_ERROR(ExpectDType(static_cast<int>(i), t, {DType::kF32}));
    bool fits = t.shape.size() == first.shape.size();
    for (size_t d = 0; fits && d < t.shape.size(); ++d) {
      fits = static_cast<int>(d) == a.axis || t.shape[d] == first.shape[d];
    }
    if (!fits) {
      return Fail(static_cast<int>(i), t,
                  absl::StrCat("expected the dims of input 0 ", Shape(first.shape),
                               " but for axis ", a.axis));
    }
    out[a.axis] += t.shape[a.axis];
  }
  return InferredOutput{out, DType::kF32};
}

absl::StatusOr<InferredOutput> Transpose(const NodeAttrs& a, const TensorDesc& x) {
  std::vector<bool> seen(x.shape.size(), false);
  bool ok = a.perm.size() == x.shape.size();
  std::vector<int64_t> out;
  for (size_t i = 0; ok && i < a.perm.size(); ++i) {
    const int64_t p = a.perm[i];
    ok = p >= 0 && p < static_cast<int64_t>(seen.size()) && !seen[p];
    if (ok) {
      seen[p] = true;
      out.push_back(x.shape[p]);
    }
  }
  if (!ok) {
    return Fail(0, x,
                absl::StrCat("attrs: perm ", Shape(a.perm), " is not a permutation of its ",
                             x.shape.size(), " dims"));
  }
  return InferredOutput{out, x.dtype};
}

absl::StatusOr<InferredOutput> Reshape(const NodeAttrs& a, const TensorDesc& x) {
  const bool positive =
      std::all_of(a.shape.begin(), a.shape.end(), [](int64_t d) { return d > 0; });
  if (!positive || Product(a.shape) != x.NumElements()) {
    return Fail(0, x,
                absl::StrCat("attrs: shape ", Shape(a.shape),
                             " must be positive dims of the same element count"));
  }
  return InferredOutput{a.shape, x.dtype};
}

absl::StatusOr<InferredOutput> Slice(const NodeAttrs& a, const TensorDesc& x) {
  TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", a.axis, x.shape.size()));
  const int64_t dim = x.shape[a.axis];
  if (a.step < 1 || a.start < 0 || a.start >= a.end || a.end > dim) {
    return Fail(
        0, x,
        absl::StrCat("attrs: slice [", a.start, ", ", a.end, ") step ", a.step, " of axis ", a.axis,
                     " (", dim, "): expected 0 <= start < end <= dim and step >= 1"));
  }
  std::vector<int64_t> out = x.shape;
  out[a.axis] = (a.end - a.start + a.step - 1) / a.step;
  return InferredOutput{out, x.dtype};
}

absl::StatusOr<InferredOutput> ReduceMean(const NodeAttrs& a, const TensorDesc& x) {
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  if (a.axes.empty() || !std::is_sorted(a.axes.begin(), a.axes.end()) ||
      std::adjacent_find(a.axes.begin(), a.axes.end()) != a.axes.end()) {
    return Fail(0, x, absl::StrCat("attrs: axes ", Shape(a.axes), " must be sorted and unique"));
  }
  std::vector<int64_t> out;
  for (size_t d = 0, k = 0; d < x.shape.size(); ++d) {
    const bool reduced = k < a.axes.size() && a.axes[k] == static_cast<int64_t>(d);
    if (reduced) ++k;
    if (!reduced) out.push_back(x.shape[d]);
    if (reduced && a.keepdims) out.push_back(1);
  }
  TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", a.axes.back(), x.shape.size()));
  TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", a.axes.front(), x.shape.size()));
  return InferredOutput{out, x.dtype};
}

absl::StatusOr<InferredOutput> LayerNorm(const NodeAttrs& a, const TensorDesc& x,
                                         const TensorDesc& scale, const TensorDesc& bias) {
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
  TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", a.axis, x.shape.size()));
  if (!(a.epsilon > 0) || !std::isfinite(a.epsilon)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attrs: epsilon ", a.epsilon, " must be positive and finite"));
  }
  const std::vector<int64_t> normalized(x.shape.begin() + a.axis, x.shape.end());
  for (int i : {1, 2}) {
    const TensorDesc& t = i == 1 ? scale : bias;
    TUNEJIT_RETURN_IF_ERROR(ExpectDType(i, t, {DType::kF32}));
    if (t.shape != normalized) {
      return Fail(
          i, t,
          absl::StrCat("expected ", Shape(normalized), " (input 0's dims from axis ", a.axis, ")"));
    }
  }
  return InferredOutput{x.shape, x.dtype};
}

absl::StatusOr<InferredOutput> MatMul(const TensorDesc& a, const TensorDesc& b) {
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, a, {DType::kF32}));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(1, b, {DType::kF32}));
  if (a.shape.size() < 2) return Fail(0, a, "expected rank >= 2 ([..., M, K])");
  if (b.shape.size() < 2) return Fail(1, b, "expected rank >= 2 ([..., K, N])");
  const int64_t k = a.shape.back();
  if (b.shape[b.shape.size() - 2] != k) {
    return Fail(1, b, absl::StrCat("expected [..., ", k, ", N] (K of input 0)"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(
      std::vector<int64_t> out,
      BroadcastShape(std::vector<int64_t>(a.shape.begin(), a.shape.end() - 2),
                     std::vector<int64_t>(b.shape.begin(), b.shape.end() - 2)));
  out.push_back(a.shape[a.shape.size() - 2]);
  out.push_back(b.shape.back());
  return InferredOutput{out, DType::kF32};
}

// Rows of `table` [V, ...] picked by `indices` (int64, any shape).
absl::StatusOr<InferredOutput> Gather(const TensorDesc& table, const TensorDesc& indices) {
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, table, {DType::kF32}));
  TUNEJIT_RETURN_IF_ERROR(ExpectDType(1, indices, {DType::kI64}));
  if (table.shape.empty()) return Fail(0, table, "expected rank >= 1 ([V, ...])");
  std::vector<int64_t> out = indices.shape;
  out.insert(out.end(), table.shape.begin() + 1, table.shape.end());
  return InferredOutput{out, DType::kF32};
}

absl::StatusOr<InferredOutput> TensorOp(OpKind op, const NodeAttrs& a,
                                        absl::Span<const TensorDesc* const> in) {
  const TensorDesc& x = *in[0];
  switch (op) {
    case OpKind::kConcat:
      return Concat(a, in);
    case OpKind::kLayerNorm:
      return LayerNorm(a, x, *in[1], *in[2]);
    case OpKind::kMatMul:
      return MatMul(x, *in[1]);
    case OpKind::kGather:
      return Gather(x, *in[1]);
    case OpKind::kBinary: {
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(1, *in[1], {DType::kF32}));
      TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> out, BroadcastShape(x.shape, in[1]->shape));
      return InferredOutput{out, DType::kF32};
    }
    case OpKind::kTranspose:
      return Transpose(a, x);
    case OpKind::kReshape:
      return Reshape(a, x);
    case OpKind::kSlice:
      return Slice(a, x);
    case OpKind::kReduceMean:
      return ReduceMean(a, x);
    case OpKind::kSoftmax:
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
      TUNEJIT_RETURN_IF_ERROR(CheckAxis("axis", SoftmaxAxis(a, x.shape.size()), x.shape.size()));
      return InferredOutput{x.shape, x.dtype};
    default:  // unary
      TUNEJIT_RETURN_IF_ERROR(ExpectDType(0, x, {DType::kF32}));
      return InferredOutput{x.shape, x.dtype};
  }
}

// 0: any number from one on (concat).
size_t InputCount(OpKind op) {
  switch (op) {
    case OpKind::kConv2d:
    case OpKind::kDense:
    case OpKind::kBiasAdd:
    case OpKind::kDequantize:
    case OpKind::kRequantize:
    case OpKind::kAdd:
    case OpKind::kBinary:
    case OpKind::kMatMul:
    case OpKind::kGather:
      return 2;
    case OpKind::kLayerNorm:
      return 3;
    case OpKind::kConcat:
      return 0;
    default:
      return 1;
  }
}

}  // namespace

InputKind ExpectedInputKind(OpKind op, int position) {
  switch (op) {
    case OpKind::kBinary:
    case OpKind::kConcat:
    case OpKind::kMatMul:
      return InputKind::kEither;
    case OpKind::kAdd:  // the residual is an activation
      return InputKind::kActivation;
    case OpKind::kLayerNorm:
      return position == 0 ? InputKind::kActivation : InputKind::kWeight;
    case OpKind::kGather:  // an embedding table, and the ids the model is given
      return position == 0 ? InputKind::kWeight : InputKind::kActivation;
    default:
      return position == 1 && InputCount(op) == 2 ? InputKind::kWeight : InputKind::kActivation;
  }
}

absl::StatusOr<InferredOutput> InferOutput(OpKind op, const NodeAttrs& attrs,
                                           absl::Span<const TensorDesc* const> inputs) {
  const size_t count = InputCount(op);
  if (count == 0 ? inputs.empty() : inputs.size() != count) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", count == 0 ? std::string("at least 1") : absl::StrCat(count),
                     " inputs, got ", inputs.size()));
  }
  if (IsTensorOp(op)) return TensorOp(op, attrs, inputs);
  switch (op) {
    case OpKind::kConv2d:
      return Conv2d(attrs, *inputs[0], *inputs[1]);
    case OpKind::kDense:
      return Dense(*inputs[0], *inputs[1]);
    case OpKind::kMaxPool2d:
      return Pool(attrs, *inputs[0], /*max=*/true);
    case OpKind::kAvgPool2d:
      return Pool(attrs, *inputs[0], /*max=*/false);
    case OpKind::kGlobalAvgPool2d:
      return GlobalAvgPool(*inputs[0]);
    case OpKind::kAdd:
      return Add(*inputs[0], *inputs[1]);
    case OpKind::kClip:
      return Clip(attrs, *inputs[0]);
    case OpKind::kQuantize:
      if (!(attrs.scale > 0) || !std::isfinite(attrs.scale)) {
        return absl::InvalidArgumentError(
            absl::StrCat("attrs: scale ", attrs.scale, " must be positive and finite"));
      }
      return Other(op, *inputs[0], nullptr);
    default:
      return Other(op, *inputs[0], inputs.size() > 1 ? inputs[1] : nullptr);
  }
}

}  // namespace tunejit
