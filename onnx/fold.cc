// The folder's dispatch and its data-movement evaluators (onnx/fold.h).
#include "onnx/fold.h"

#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "graph/shape_inference.h"
#include "onnx/const_ops.h"
#include "onnx/op_attrs.h"

namespace tunejit::onnx_import {
namespace {

using onnx::AttributeProto;

std::vector<ConstTensor> One(ConstTensor t) {
  std::vector<ConstTensor> out;
  out.push_back(std::move(t));
  return out;
}

Folded OneOf(absl::StatusOr<ConstTensor> t) {
  if (!t.ok()) return t.status();
  return One(*std::move(t));
}

// The data-movement ops keep input 0's elements: `dims` is their new shape.
Folded Reshaped(const FoldArgs& a, const ConstTensor& x, absl::StatusOr<Dims> dims) {
  TUNEJIT_RETURN_IF_ERROR(dims.status());
  TUNEJIT_RETURN_IF_ERROR(a.Charge(*dims, x.dtype));
  return One(WithDims(x, *dims));
}

Folded FoldReshape(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  return Reshaped(a, *x, ReshapeOutputDims(a.im, a.n, x->dims));
}

Folded FoldFlatten(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  return Reshaped(a, *x, FlattenOutputDims(a.im, a.n, x->dims));
}

Folded FoldUnsqueeze(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  return Reshaped(a, *x, UnsqueezeOutputDims(a.im, a.n, x->dims));
}

Folded FoldSqueeze(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  return Reshaped(a, *x, SqueezeOutputDims(a.im, a.n, x->dims));
}

Folded FoldTranspose(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(Dims perm,
                           TransposePerm(a.im, a.n, static_cast<int64_t>(x->dims.size())));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(x->dims, x->dtype));
  return One(TransposeConst(*x, perm));
}

Folded FoldConcat(const FoldArgs& a) {
  std::vector<const ConstTensor*> in;
  for (int i = 0; i < a.n.input_size(); ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* t, a.Arg(i));
    in.push_back(t);
  }
  if (in.empty() || in[0]->dims.empty()) return a.im.Error(a.n, "needs inputs of rank >= 1");
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis,
                           ConcatAxis(a.im, a.n, static_cast<int64_t>(in[0]->dims.size())));
  int64_t total = 0;
  for (const ConstTensor* t : in) total += static_cast<int64_t>(t->bytes.size());
  TUNEJIT_RETURN_IF_ERROR(a.Charge({total}, DType::kU8));
  return OneOf(a.im.AtNode(a.n, ConcatConst(in, axis)));
}

Folded FoldGather(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(GatherSpec g, GatherOf(a.im, a.n, x->dims));
  Dims out = x->dims;
  out[g.axis] = static_cast<int64_t>(g.indices.size());
  TUNEJIT_RETURN_IF_ERROR(a.Charge(out, x->dtype));
  return One(GatherConst(*x, g.axis, g.index_dims, g.indices));
}

// GatherElements (torch.gather): BERT's token type ids, its zeros buffer gathered by the position
// ids, all constants.
Folded FoldGatherElements(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* idx, a.Arg(1));
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, a.im.AttrInt(a.n, "axis", 0));
  TUNEJIT_ASSIGN_OR_RETURN(axis, a.im.AtNode(a.n, NormalizeAxis(axis, rank, "attribute 'axis'")));
  if (IsFloatType(idx->dtype)) {
    return a.im.Error(a.n, absl::StrCat("the indices must be integers, got ",
                                        std::string(DTypeName(idx->dtype))));
  }
  bool fits = static_cast<int64_t>(idx->dims.size()) == rank;
  for (int64_t k = 0; fits && k < rank; ++k) fits = k == axis || idx->dims[k] <= x->dims[k];
  if (!fits) {
    return a.im.Error(
        a.n, absl::StrCat("indices ", ShapeText(idx->dims), " do not fit data ", ShapeText(x->dims),
                          " (the same rank, no dim larger but on axis ", axis, ")"));
  }
  std::vector<int64_t> indices = idx->Ints();
  const int64_t dim = x->dims[axis];
  for (int64_t& i : indices) {
    const int64_t k = i < 0 ? i + dim : i;
    if (k < 0 || k >= dim) {
      return a.im.Error(a.n, absl::StrCat("index ", i, " is out of range for axis ", axis, " of ",
                                          ShapeText(x->dims)));
    }
    i = k;
  }
  TUNEJIT_RETURN_IF_ERROR(a.Charge(idx->dims, x->dtype));
  return One(GatherElementsConst(*x, axis, idx->dims, indices));
}

// ScatterND without a reduction: Swin's shifted-window attention mask, a zeros image whose
// regions are numbered through the indices of slices, all constants. Later indices win, as in
// ONNX's reference (which leaves duplicates undefined).
Folded FoldScatterND(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* idx, a.Arg(1));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* updates, a.Arg(2));
  TUNEJIT_ASSIGN_OR_RETURN(std::string reduction, a.im.AttrString(a.n, "reduction", "none"));
  if (reduction != "none") {
    return a.im.Unsupported(a.n, absl::StrCat("reduction '", reduction, "' (only 'none')"));
  }
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  const int64_t k = idx->dims.empty() ? 0 : idx->dims.back();
  if (IsFloatType(idx->dtype) || k < 1 || k > rank) {
    return a.im.Error(a.n, absl::StrCat("indices ", std::string(DTypeName(idx->dtype)), " ",
                                        ShapeText(idx->dims), " for data ", ShapeText(x->dims),
                                        ": expected integers whose last dim is 1..", rank));
  }
  Dims want(idx->dims.begin(), idx->dims.end() - 1);
  want.insert(want.end(), x->dims.begin() + k, x->dims.end());
  if (updates->dims != want || updates->dtype != x->dtype) {
    return a.im.Error(a.n, absl::StrCat("updates ", std::string(DTypeName(updates->dtype)), " ",
                                        ShapeText(updates->dims), ": expected ",
                                        std::string(DTypeName(x->dtype)), " ", ShapeText(want)));
  }
  TUNEJIT_RETURN_IF_ERROR(a.Charge(x->dims, x->dtype));
  const size_t es = static_cast<size_t>(DTypeSize(x->dtype));
  const int64_t block = DimsProduct(Dims(x->dims.begin() + k, x->dims.end()));
  const std::vector<int64_t> indices = idx->Ints();
  std::vector<uint8_t> bytes(x->bytes.begin(), x->bytes.end());
  for (size_t i = 0; i + k <= indices.size(); i += k) {
    int64_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int64_t dim = x->dims[j];
      int64_t v = indices[i + j];
      if (v < 0) v += dim;
      if (v < 0 || v >= dim) {
        return a.im.Error(a.n, absl::StrCat("index ", indices[i + j], " is out of range for axis ",
                                            j, " of ", ShapeText(x->dims)));
      }
      offset = offset * dim + v;
    }
    if (block == 0) continue;
    std::memcpy(bytes.data() + static_cast<size_t>(offset * block) * es,
                updates->bytes.data() + (i / k) * static_cast<size_t>(block) * es,
                static_cast<size_t>(block) * es);
  }
  return One(ConstTensor{"", x->dtype, x->dims, std::move(bytes)});
}

Folded FoldSlice(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<AxisSlice> slices, SliceRanges(a.im, a.n, x->dims));
  Dims out = x->dims;
  for (const AxisSlice& s : slices) out[s.axis] = s.range.count;
  TUNEJIT_RETURN_IF_ERROR(a.Charge(out, x->dtype));
  return One(SliceConst(*x, slices));
}

Folded FoldSplit(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(SplitSpec s, SplitOf(a.im, a.n, x->dims));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(x->dims, x->dtype));
  std::vector<ConstTensor> out;
  int64_t start = 0;
  for (int64_t size : s.sizes) {
    out.push_back(SliceConst(*x, {{s.axis, {start, start + size, 1, size}}}));
    start += size;
  }
  return out;
}

Folded FoldExpand(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(Dims out, ExpandOutputDims(a.im, a.n, x->dims));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(out, x->dtype));
  return OneOf(a.im.AtNode(a.n, BroadcastTo(*x, out)));
}

// ConstantOfShape's value attribute: one element of any decoded dtype; FLOAT 0 when absent.
absl::StatusOr<ConstTensor> FillValue(const FoldArgs& a) {
  const AttributeProto* v = a.im.Attr(a.n, "value");
  if (v == nullptr) return FromDoubles(DType::kF32, {1}, {0.0});
  if (v->type() != AttributeProto::TENSOR) {
    return a.im.Error(a.n, "attribute 'value' must be a TENSOR");
  }
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor t, DecodeTensor(v->t(), a.im.tensor_source()));
  if (t.NumElements() != 1) {
    return a.im.Error(
        a.n, absl::StrCat("attribute 'value' must hold one element, got ", ShapeText(t.dims)));
  }
  return t;
}

Folded FoldConstantOfShape(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims shape, IntOperand(a.im, a.n, 0, "shape"));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor value, FillValue(a));
  for (int64_t d : shape) {
    if (d < 0)
      return a.im.Error(a.n, absl::StrCat("shape ", ShapeText(shape), " has a negative dim"));
  }
  TUNEJIT_RETURN_IF_ERROR(a.Charge(shape, value.dtype));
  return OneOf(a.im.AtNode(a.n, BroadcastTo(WithDims(value, {}), shape)));
}

struct Entry {
  absl::string_view op_type;
  Folder fold;
};

constexpr Entry kFolders[] = {
    {"Concat", FoldConcat},       {"ConstantOfShape", FoldConstantOfShape},
    {"Expand", FoldExpand},       {"Flatten", FoldFlatten},
    {"Gather", FoldGather},       {"GatherElements", FoldGatherElements},
    {"Reshape", FoldReshape},     {"ScatterND", FoldScatterND},
    {"Slice", FoldSlice},         {"Split", FoldSplit},
    {"Squeeze", FoldSqueeze},     {"Transpose", FoldTranspose},
    {"Unsqueeze", FoldUnsqueeze},
};

Folder FindFolder(absl::string_view op_type) {
  for (const Entry& e : kFolders) {
    if (e.op_type == op_type) return e.fold;
  }
  return FindMathFolder(op_type);
}

}  // namespace

absl::StatusOr<const ConstTensor*> FoldArgs::Arg(int i) const {
  if (!Has(i)) return im.Error(n, absl::StrCat("input ", i, " is missing"));
  return in[i].get();
}

absl::StatusOr<std::vector<int64_t>> FoldArgs::IntsArg(int i, const char* role) const {
  return IntOperand(im, n, i, role);
}

bool CanFold(absl::string_view op_type) { return FindFolder(op_type) != nullptr; }

absl::Status FoldNode(Importer& im, const onnx::NodeProto& n) {
  FoldArgs args{im, n, {}};
  for (int i = 0; i < n.input_size(); ++i) {
    if (!im.HasInput(n, i)) {
      args.in.push_back(nullptr);
      continue;
    }
    TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, im.ConstInput(n, i, "input"));
    args.in.push_back(std::move(t));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<ConstTensor> out, FindFolder(n.op_type())(args));
  TUNEJIT_RETURN_IF_ERROR(im.RequireUnusedOutputs(n, static_cast<int>(out.size())));
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) >= n.output_size()) break;
    out[i].name = n.output(static_cast<int>(i));
    TUNEJIT_RETURN_IF_ERROR(
        im.BindOutput(n, static_cast<int>(i), Value::Constant(std::move(out[i]))));
  }
  return absl::OkStatus();
}

}  // namespace tunejit::onnx_import
