// Conv, BatchNormalization (folded into the conv) and the pools: the ops with an NCHW window.
#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

// Window attributes beyond this are certainly corrupt; the bound keeps shape math far from
// overflow.
constexpr int64_t kMaxAttr = 1 << 16;

// `name` (2 or 4 values, default `fallback`) with every value in [lo, kMaxAttr].
absl::StatusOr<std::vector<int64_t>> PairAttr(const Importer& im, const NodeProto& n,
                                              const char* name, size_t count,
                                              std::vector<int64_t> fallback, int64_t lo) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> v, im.AttrInts(n, name));
  if (v.empty()) v = std::move(fallback);
  if (v.size() != count) {
    return im.Unsupported(n, absl::StrCat("attribute ", name, " has ", v.size(),
                                          " values; 2-D windows need ", count));
  }
  for (int64_t x : v) {
    if (x < lo || x > kMaxAttr) {
      return im.Error(n, absl::StrCat("attribute ", name, " = [", absl::StrJoin(v, ", "),
                                      "]: values must be in ", lo, "..", kMaxAttr));
    }
  }
  return v;
}

// SAME_UPPER / SAME_LOWER padding of one axis: output ceil(in / stride).
void SamePads(int64_t in, int64_t window, int64_t stride, bool upper, int* begin, int* end) {
  const int64_t out = (in + stride - 1) / stride;
  const int64_t total = std::max<int64_t>(0, (out - 1) * stride + window - in);
  const int64_t small = total / 2;
  *begin = static_cast<int>(upper ? small : total - small);
  *end = static_cast<int>(total - *begin);
}

// The 4-D input's shape (an NCHW activation).
absl::StatusOr<std::vector<int64_t>> NchwShape(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, 0));
  if (v->is_constant()) return im.Unsupported(n, "input 0 is a constant; expected an activation");
  const std::vector<int64_t>& shape = im.graph().tensor(v->tensor).shape;
  if (shape.size() != 4) {
    return im.Unsupported(
        n, absl::StrCat("expects a 4-D NCHW input (2-D window), got ", ShapeText(shape)));
  }
  return shape;
}

// Strides, pads (explicit or auto_pad) and dilations of a window op over a 4-D `x`.
absl::StatusOr<NodeAttrs> WindowAttrs(const Importer& im, const NodeProto& n,
                                      const std::vector<int64_t>& x, int64_t kh, int64_t kw) {
  NodeAttrs a;
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> s, PairAttr(im, n, "strides", 2, {1, 1}, 1));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> d, PairAttr(im, n, "dilations", 2, {1, 1}, 1));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> p, PairAttr(im, n, "pads", 4, {0, 0, 0, 0}, 0));
  TUNEJIT_ASSIGN_OR_RETURN(std::string auto_pad, im.AttrString(n, "auto_pad", "NOTSET"));
  a.stride_h = static_cast<int>(s[0]);
  a.stride_w = static_cast<int>(s[1]);
  a.dilation_h = static_cast<int>(d[0]);
  a.dilation_w = static_cast<int>(d[1]);
  a.pool_h = static_cast<int>(kh);
  a.pool_w = static_cast<int>(kw);
  if (auto_pad == "NOTSET" || auto_pad.empty()) {
    a.pad_top = static_cast<int>(p[0]);
    a.pad_left = static_cast<int>(p[1]);
    a.pad_bottom = static_cast<int>(p[2]);
    a.pad_right = static_cast<int>(p[3]);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    const bool upper = auto_pad == "SAME_UPPER";
    SamePads(x[2], (kh - 1) * d[0] + 1, s[0], upper, &a.pad_top, &a.pad_bottom);
    SamePads(x[3], (kw - 1) * d[1] + 1, s[1], upper, &a.pad_left, &a.pad_right);
  } else if (auto_pad != "VALID") {
    return im.Error(n, absl::StrCat("auto_pad '", auto_pad, "' is not an ONNX value"));
  }
  return a;
}

// kernel_shape (required for pools; for Conv it must agree with the weight when present).
absl::StatusOr<std::vector<int64_t>> KernelShape(const Importer& im, const NodeProto& n) {
  if (im.Attr(n, "kernel_shape") == nullptr) return im.Error(n, "kernel_shape is missing");
  return PairAttr(im, n, "kernel_shape", 2, {}, 1);
}

absl::Status RequireNoDilation(const Importer& im, const NodeProto& n, const NodeAttrs& a) {
  if (a.dilation_h == 1 && a.dilation_w == 1) return absl::OkStatus();
  return im.Unsupported(n, "dilated pooling is not supported");
}

// ceil_mode = 1: the extra end padding that makes the floor output size the ceil one. ONNX and
// PyTorch drop a last window that would start in the end padding.
int CeilExtra(int64_t in, int pad0, int pad1, int64_t window, int stride) {
  const int64_t span = in + pad0 + pad1 - window;
  if (span < 0) return 0;
  int64_t out = (span + stride - 1) / stride + 1;
  if ((out - 1) * stride >= in + pad0) --out;
  return static_cast<int>(std::max<int64_t>(0, (out - 1) * stride + window - (in + pad0 + pad1)));
}

absl::Status CeilMode(const Importer& im, const NodeProto& n, const std::vector<int64_t>& x,
                      NodeAttrs* a, bool* changed) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t ceil_mode, im.AttrInt(n, "ceil_mode", 0));
  const int eh = ceil_mode ? CeilExtra(x[2], a->pad_top, a->pad_bottom, a->pool_h, a->stride_h) : 0;
  const int ew = ceil_mode ? CeilExtra(x[3], a->pad_left, a->pad_right, a->pool_w, a->stride_w) : 0;
  a->pad_bottom += eh;
  a->pad_right += ew;
  *changed = eh > 0 || ew > 0;
  return absl::OkStatus();
}

// A float32 constant of exactly `count` elements (a per-channel parameter).
absl::StatusOr<std::vector<float>> ChannelParam(Importer& im, const NodeProto& n, int i,
                                                const char* role, int64_t count) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, im.ConstInput(n, i, role));
  if (t->dtype != DType::kF32 || t->NumElements() != count) {
    return im.Error(n, absl::StrCat("the ", role, " '", n.input(i), "' must be FLOAT with ", count,
                                    " values, got ", std::string(DTypeName(t->dtype)), " ",
                                    ShapeText(t->dims)));
  }
  return t->Floats();
}

absl::StatusOr<std::shared_ptr<const ConstTensor>> ConvWeight(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> w, im.ConstInput(n, 1, "weight"));
  if (w->dims.size() != 4 || w->dims[0] < 1 || w->dims[2] < 1 || w->dims[3] < 1) {
    return im.Unsupported(n, absl::StrCat("only 2-D convolutions (weight [CO, CI/group, KH, KW]) "
                                          "are supported; weight is ",
                                          ShapeText(w->dims)));
  }
  if (w->dtype != DType::kF32) {
    return im.Unsupported(
        n, absl::StrCat("weight is ", std::string(DTypeName(w->dtype)), "; expected FLOAT"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> k, im.AttrInts(n, "kernel_shape"));
  if (!k.empty() && k != std::vector<int64_t>{w->dims[2], w->dims[3]}) {
    return im.Error(n, absl::StrCat("kernel_shape [", absl::StrJoin(k, ", "),
                                    "] does not match the weight ", ShapeText(w->dims)));
  }
  return w;
}

absl::StatusOr<NodeAttrs> ConvAttrs(Importer& im, const NodeProto& n, const ConstTensor& w) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, NchwShape(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(NodeAttrs a, WindowAttrs(im, n, x, w.dims[2], w.dims[3]));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t group, im.AttrInt(n, "group", 1));
  if (group < 1 || group > x[1]) {
    return im.Error(n, absl::StrCat("group ", group, " must be in 1..", x[1], " (input channels)"));
  }
  a.groups = static_cast<int>(group);
  a.pool_h = a.pool_w = 2;  // unused by conv2d: keep the struct's defaults
  return a;
}

// The BatchNormalization parameters as y = k x + shift per channel: k = gamma / sqrt(var + eps),
// shift = beta - mean k.
struct BnAffine {
  std::vector<double> k, shift;
};

absl::StatusOr<BnAffine> BnParams(Importer& im, const NodeProto& n, int64_t c) {
  TUNEJIT_ASSIGN_OR_RETURN(float eps, im.AttrFloat(n, "epsilon", 1e-5f));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> gamma, ChannelParam(im, n, 1, "scale", c));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> beta, ChannelParam(im, n, 2, "B", c));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> mean, ChannelParam(im, n, 3, "mean", c));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> var, ChannelParam(im, n, 4, "var", c));
  BnAffine p;
  for (int64_t i = 0; i < c; ++i) {
    p.k.push_back(gamma[i] / std::sqrt(static_cast<double>(var[i]) + eps));
    p.shift.push_back(beta[i] - mean[i] * p.k.back());
  }
  return p;
}

// The conv whose output BatchNormalization `n` reads, when the BN can fold into it: the conv's
// output is read by this node alone. nullptr otherwise.
const Importer::ConvRecord* FoldableConv(Importer& im, const NodeProto& n, const Value& x) {
  if (x.is_constant() || x.qdq_scale > 0) return nullptr;
  auto conv = im.convs().find(x.tensor);
  if (conv == im.convs().end() || conv->second.value != n.input(0)) return nullptr;
  if (im.Consumers(n.input(0)) != 1 || im.IsGraphOutput(n.input(0))) return nullptr;
  return &conv->second;
}

// w'[c] = w[c] k[c], b'[c] = b[c] k[c] + shift[c].
absl::Status FoldIntoConv(Importer& im, const NodeProto& n, Importer::ConvRecord rec, int y) {
  const int64_t c = im.graph().tensor(rec.weight).shape[0];
  TUNEJIT_ASSIGN_OR_RETURN(BnAffine p, BnParams(im, n, c));
  std::vector<float> w = UnpackFloats(im.WeightBytes(rec.weight));
  std::vector<float> b =
      rec.bias >= 0 ? UnpackFloats(im.WeightBytes(rec.bias)) : std::vector<float>(c);
  const size_t per_channel = w.size() / static_cast<size_t>(c);
  for (int64_t k = 0; k < c; ++k) {
    for (size_t i = 0; i < per_channel; ++i) {
      float& v = w[k * per_channel + i];
      v = static_cast<float>(v * p.k[k]);
    }
    b[k] = static_cast<float>(b[k] * p.k[k] + p.shift[k]);
  }
  im.SetWeightBytes(rec.weight, PackBytes(w));
  if (rec.bias >= 0) {
    im.SetWeightBytes(rec.bias, PackBytes(b));
  } else {
    rec.bias = im.AddWeight(absl::StrCat(n.output(0), ".bias"), DType::kF32, {c}, PackBytes(b));
    TUNEJIT_ASSIGN_OR_RETURN(
        y, im.AddNode(n, OpKind::kBiasAdd, {y, rec.bias}, {}, im.OutName(n), ".bias_add"));
  }
  rec.value = n.output(0);
  im.convs()[y] = rec;
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// Elsewhere (DenseNet normalizes concatenations): x * k as a binary multiply by a [C, 1, ...]
// weight, then + shift as a bias_add.
absl::Status StandaloneBatchNorm(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, im.ActivationShape(n, 0));
  if (x.size() < 2) {
    return im.Unsupported(n, absl::StrCat("input ", ShapeText(x), ": expected [N, C, ...]"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(BnAffine p, BnParams(im, n, x[1]));
  std::vector<int64_t> scale_dims(x.size() - 1, 1);
  scale_dims[0] = x[1];
  const int scale = im.AddWeight(absl::StrCat(n.output(0), ".scale"), DType::kF32, scale_dims,
                                 PackBytes(std::vector<float>(p.k.begin(), p.k.end())));
  const int shift = im.AddWeight(absl::StrCat(n.output(0), ".shift"), DType::kF32, {x[1]},
                                 PackBytes(std::vector<float>(p.shift.begin(), p.shift.end())));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  NodeAttrs mul;
  mul.binary = BinaryFn::kMul;
  TUNEJIT_ASSIGN_OR_RETURN(
      int y, im.AddNode(n, OpKind::kBinary, {in, scale}, mul, im.OutName(n, ".scaled"), ".scale"));
  return im.AddOutputNode(n, OpKind::kBiasAdd, {y, shift}, {});
}

// A grouped convolution (1 < group < input channels: ResNeXt, RegNet) as the convolutions of its
// groups on slices of the input channels, each with its bias, joined by a concat: every group is
// an ordinary convolution, and no kernel template implements groups between one and depthwise.
// Group g's weight is rows [g CO / G, (g + 1) CO / G) of the file's, shared, not copied.
absl::Status MapGroupedConv(Importer& im, const NodeProto& n, const ConstTensor& w, NodeAttrs attrs,
                            int x) {
  const int64_t groups = attrs.groups;
  const int64_t ci = im.graph().tensor(x).shape[1], co = w.dims[0];
  if (ci % groups != 0 || co % groups != 0 || w.dims[1] != ci / groups) {
    return im.Error(n, absl::StrCat("group ", groups, " needs input channels (", ci,
                                    ") and output channels (", co,
                                    ") divisible by it and a weight [CO, CI / group, KH, KW]; the "
                                    "weight is ",
                                    ShapeText(w.dims)));
  }
  std::vector<float> bias;
  if (im.HasInput(n, 2)) {
    TUNEJIT_ASSIGN_OR_RETURN(bias, ChannelParam(im, n, 2, "bias", co));
  }
  const int64_t cig = ci / groups, cog = co / groups;
  const size_t group_bytes = static_cast<size_t>(cog * cig * w.dims[2] * w.dims[3]) * sizeof(float);
  const std::string weight_name = w.name.empty() ? n.input(1) : w.name;
  attrs.groups = 1;
  std::vector<int> outputs;
  for (int64_t g = 0; g < groups; ++g) {
    const std::string tag = absl::StrCat(".group", g);
    NodeAttrs slice;
    slice.axis = 1;
    slice.start = g * cig;
    slice.end = (g + 1) * cig;
    TUNEJIT_ASSIGN_OR_RETURN(
        int in, im.AddNode(n, OpKind::kSlice, {x}, slice, im.OutName(n, tag + ".in"), tag + ".in"));
    const int weight =
        im.AddWeight(weight_name + tag, DType::kF32, {cog, cig, w.dims[2], w.dims[3]},
                     w.bytes.Slice(static_cast<size_t>(g) * group_bytes, group_bytes));
    TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kConv2d, {in, weight}, attrs,
                                               im.OutName(n, tag + ".conv"), tag));
    if (!bias.empty()) {
      const int b = im.AddWeight(
          n.input(2) + tag, DType::kF32, {cog},
          PackBytes(std::vector<float>(bias.begin() + g * cog, bias.begin() + (g + 1) * cog)));
      TUNEJIT_ASSIGN_OR_RETURN(
          y, im.AddNode(n, OpKind::kBiasAdd, {y, b}, {}, im.OutName(n, tag), tag + ".bias_add"));
    }
    outputs.push_back(y);
  }
  NodeAttrs concat;
  concat.axis = 1;
  return im.AddOutputNode(n, OpKind::kConcat, outputs, concat);
}

}  // namespace

absl::Status MapConv(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> w, ConvWeight(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(NodeAttrs attrs, ConvAttrs(im, n, *w));
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  if (attrs.groups > 1 && attrs.groups < im.graph().tensor(x).shape[1]) {
    return MapGroupedConv(im, n, *w, attrs, x);
  }
  const int weight =
      im.AddWeight(w->name.empty() ? n.input(1) : w->name, DType::kF32, w->dims, w->bytes);
  int bias = -1;
  if (im.HasInput(n, 2)) {
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> b, ChannelParam(im, n, 2, "bias", w->dims[0]));
    bias = im.AddWeight(n.input(2), DType::kF32, {w->dims[0]}, PackBytes(b));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kConv2d, {x, weight}, attrs,
                                             im.OutName(n, bias < 0 ? "" : ".conv")));
  const int conv_output = y;
  if (bias >= 0) {
    TUNEJIT_ASSIGN_OR_RETURN(
        y, im.AddNode(n, OpKind::kBiasAdd, {y, bias}, {}, im.OutName(n), ".bias_add"));
  }
  im.convs()[y] = {weight, bias, conv_output, n.output(0)};
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// y = gamma (x - mean) / sqrt(var + eps) + beta: folded into the conv before it when that conv's
// output feeds only this node, else a per-channel multiply and bias_add.
absl::Status MapBatchNormalization(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t training, im.AttrInt(n, "training_mode", 0));
  if (training != 0) return im.Unsupported(n, "training_mode = 1 (inference only)");
  TUNEJIT_RETURN_IF_ERROR(im.RequireUnusedOutputs(n, 1));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* x, im.Input(n, 0));
  const Importer::ConvRecord* conv = FoldableConv(im, n, *x);
  if (conv == nullptr) return StandaloneBatchNorm(im, n);
  return FoldIntoConv(im, n, *conv, x->tensor);
}

absl::Status MapMaxPool(Importer& im, const NodeProto& n) {
  TUNEJIT_RETURN_IF_ERROR(im.RequireUnusedOutputs(n, 1));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t order, im.AttrInt(n, "storage_order", 0));
  if (order != 0) return im.Unsupported(n, "storage_order = 1 (column-major) is not supported");
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, NchwShape(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> k, KernelShape(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(NodeAttrs a, WindowAttrs(im, n, x, k[0], k[1]));
  TUNEJIT_RETURN_IF_ERROR(RequireNoDilation(im, n, a));
  bool changed = false;
  TUNEJIT_RETURN_IF_ERROR(CeilMode(im, n, x, &a, &changed));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kMaxPool2d, {in}, a, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

absl::Status MapAveragePool(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> x, NchwShape(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> k, KernelShape(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(NodeAttrs a, WindowAttrs(im, n, x, k[0], k[1]));
  TUNEJIT_RETURN_IF_ERROR(RequireNoDilation(im, n, a));
  bool changed = false;
  TUNEJIT_RETURN_IF_ERROR(CeilMode(im, n, x, &a, &changed));
  if (changed) {
    // The extra end padding would be averaged in (or change the divisor): not the ONNX result.
    return im.Unsupported(n, "ceil_mode = 1 changes the output size here; not supported");
  }
  TUNEJIT_ASSIGN_OR_RETURN(int64_t include_pad, im.AttrInt(n, "count_include_pad", 0));
  a.count_include_pad = include_pad != 0;
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  const bool identity = a.pool_h == 1 && a.pool_w == 1 && a.stride_h == 1 && a.stride_w == 1 &&
                        a.pad_top == 0 && a.pad_left == 0 && a.pad_bottom == 0 && a.pad_right == 0;
  // torchvision's AdaptiveAvgPool2d((7, 7)) on a 7x7 map exports as this 1x1 pool: nothing to do.
  if (identity) return im.BindOutput(n, 0, Value::Tensor(in));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kAvgPool2d, {in}, a, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

absl::Status MapGlobalAveragePool(Importer& im, const NodeProto& n) {
  TUNEJIT_RETURN_IF_ERROR(NchwShape(im, n).status());
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kGlobalAvgPool2d, {in}, {}, im.OutName(n)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

}  // namespace tunejit::onnx_import
