#include "onnx/op_attrs.h"

#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/broadcast.h"
#include "common/status_macros.h"
#include "onnx/const_ops.h"

namespace tunejit::onnx_import {

using onnx::NodeProto;

absl::StatusOr<Dims> IntOperand(Importer& im, const NodeProto& n, int i, const char* role) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, im.ConstInput(n, i, role));
  if (IsFloatType(t->dtype) || t->dims.size() > 1) {
    return im.Error(n, absl::StrCat("the ", role, " (input ", i, " '", n.input(i),
                                    "') must be a 1-D integer tensor, got ",
                                    std::string(DTypeName(t->dtype)), " ", ShapeText(t->dims)));
  }
  return t->Ints();
}

absl::StatusOr<Dims> ReshapeOutputDims(Importer& im, const NodeProto& n, const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims to, IntOperand(im, n, 1, "shape"));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t allowzero, im.AttrInt(n, "allowzero", 0));
  return im.AtNode(n, ReshapeTarget(x, to, allowzero != 0));
}

absl::StatusOr<Dims> ExpandOutputDims(Importer& im, const NodeProto& n, const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims shape, IntOperand(im, n, 1, "shape"));
  for (int64_t d : shape) {
    if (d < 0) return im.Error(n, absl::StrCat("shape ", ShapeText(shape), " has a negative dim"));
  }
  return im.AtNode(n, BroadcastShape(x, shape));
}

absl::StatusOr<Dims> FlattenOutputDims(Importer& im, const NodeProto& n, const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 1));
  return im.AtNode(n, FlattenDims(x, axis));
}

absl::StatusOr<Dims> UnsqueezeOutputDims(Importer& im, const NodeProto& n, const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(std::optional<Dims> axes, im.AxesOperand(n, 1, 13));
  if (!axes) return im.Error(n, "the axes are missing");
  return im.AtNode(n, UnsqueezeDims(x, *axes));
}

absl::StatusOr<Dims> SqueezeOutputDims(Importer& im, const NodeProto& n, const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(std::optional<Dims> axes, im.AxesOperand(n, 1, 13));
  return im.AtNode(n, SqueezeDims(x, axes));
}

absl::StatusOr<Dims> TransposePerm(Importer& im, const NodeProto& n, int64_t rank) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims perm, im.AttrInts(n, "perm"));
  if (im.Attr(n, "perm") == nullptr) {
    for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool ok = static_cast<int64_t>(perm.size()) == rank;
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < rank && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  if (!ok) {
    return im.Error(n, absl::StrCat("attribute 'perm' ", ShapeText(perm),
                                    " is not a permutation of the input's ", rank, " dims"));
  }
  return perm;
}

absl::StatusOr<int64_t> ConcatAxis(Importer& im, const NodeProto& n, int64_t rank) {
  if (im.Attr(n, "axis") == nullptr) return im.Error(n, "attribute 'axis' is missing");
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 0));
  return im.AtNode(n, NormalizeAxis(axis, rank, "attribute 'axis'"));
}

absl::StatusOr<std::vector<AxisSlice>> SliceRanges(Importer& im, const NodeProto& n,
                                                   const Dims& x) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims starts, IntOperand(im, n, 1, "starts"));
  TUNEJIT_ASSIGN_OR_RETURN(Dims ends, IntOperand(im, n, 2, "ends"));
  Dims axes, steps;
  if (im.HasInput(n, 3)) {
    TUNEJIT_ASSIGN_OR_RETURN(axes, IntOperand(im, n, 3, "axes"));
  }
  if (im.HasInput(n, 4)) {
    TUNEJIT_ASSIGN_OR_RETURN(steps, IntOperand(im, n, 4, "steps"));
  }
  return im.AtNode(n, SliceAxes(x, starts, ends, axes, steps));
}

namespace {

// The explicit split sizes: input 1 from opset 13, the attribute before (the other form is an
// error); empty when absent.
absl::StatusOr<Dims> ExplicitSplit(Importer& im, const NodeProto& n) {
  const bool has_attr = im.Attr(n, "split") != nullptr;
  if (im.opset() >= 13) {
    if (has_attr) {
      return im.Error(n, absl::StrCat("attribute 'split' is not valid from opset 13 (this model "
                                      "is opset ",
                                      im.opset(), "): the sizes are input 1"));
    }
    if (!im.HasInput(n, 1)) return Dims{};
    return IntOperand(im, n, 1, "split");
  }
  if (im.HasInput(n, 1)) {
    return im.Error(n, absl::StrCat("input 1 (split) is an opset 13 form; this model is opset ",
                                    im.opset(), ", where the sizes are the attribute 'split'"));
  }
  return im.AttrInts(n, "split");
}

}  // namespace

absl::StatusOr<SplitSpec> SplitOf(Importer& im, const NodeProto& n, const Dims& x) {
  SplitSpec spec;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 0));
  TUNEJIT_ASSIGN_OR_RETURN(spec.axis,
                           im.AtNode(n, NormalizeAxis(axis, static_cast<int64_t>(x.size()))));
  TUNEJIT_ASSIGN_OR_RETURN(Dims split, ExplicitSplit(im, n));
  const bool has_num = im.Attr(n, "num_outputs") != nullptr;
  if (has_num) {
    TUNEJIT_ASSIGN_OR_RETURN(int64_t num, im.AttrInt(n, "num_outputs", 0));
    if (im.opset() < 18) {
      return im.Error(n, absl::StrCat("attribute 'num_outputs' is an opset 18 attribute; this "
                                      "model is opset ",
                                      im.opset()));
    }
    if (!split.empty()) return im.Error(n, "both the split sizes and num_outputs are given");
    if (num != n.output_size()) {
      return im.Error(n, absl::StrCat("attribute 'num_outputs' is ", num, " but the node has ",
                                      n.output_size(), " outputs"));
    }
  }
  TUNEJIT_ASSIGN_OR_RETURN(spec.sizes,
                           im.AtNode(n, SplitSizes(x[spec.axis], split, n.output_size(), has_num)));
  return spec;
}

absl::StatusOr<GatherSpec> GatherOf(Importer& im, const NodeProto& n, const Dims& x) {
  GatherSpec spec;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 0));
  TUNEJIT_ASSIGN_OR_RETURN(
      spec.axis,
      im.AtNode(n, NormalizeAxis(axis, static_cast<int64_t>(x.size()), "attribute 'axis'")));
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, im.ConstInput(n, 1, "indices"));
  if (IsFloatType(t->dtype)) {
    return im.Error(
        n, absl::StrCat("the indices must be integers, got ", std::string(DTypeName(t->dtype))));
  }
  spec.index_dims = t->dims;
  const int64_t dim = x[spec.axis];
  for (int64_t i : t->Ints()) {
    const int64_t k = i < 0 ? i + dim : i;
    if (k < 0 || k >= dim) {
      return im.Error(n, absl::StrCat("index ", i, " is out of range for axis ", spec.axis, " of ",
                                      ShapeText(x)));
    }
    spec.indices.push_back(k);
  }
  return spec;
}

}  // namespace tunejit::onnx_import
