// Slice, Split and Gather on activations, as slice nodes (one per sliced axis or output); the
// class token of a ViT (x[:, 0], a Gather of a scalar index) is a slice and a reshape dropping the
// axis. Their constant forms fold (onnx/fold.cc) with the same rules (onnx/op_attrs.h). A Gather
// of a constant table by int64 activations (BERT's token ids into its word embeddings) is a
// gather node, the table a weight.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/const_ops.h"
#include "onnx/importer.h"
#include "onnx/op_attrs.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

// Elements [start, start + count) of `axis` of x (step 1) as a slice node.
absl::StatusOr<int> SliceNode(Importer& im, const NodeProto& n, int x, int64_t axis,
                              const SliceRange& r, std::string out_name, absl::string_view suffix) {
  NodeAttrs attrs;
  attrs.axis = static_cast<int>(axis);
  attrs.start = r.start;
  attrs.end = r.start + (r.count - 1) * r.step + 1;  // the last element taken, plus one
  attrs.step = r.step;
  return im.AddNode(n, OpKind::kSlice, {x}, attrs, std::move(out_name), suffix);
}

SliceRange Range(int64_t start, int64_t count) { return {start, start + count, 1, count}; }

// "0, 2, 5" (the first few of many, then "...").
std::string IndicesText(const Dims& v) {
  constexpr size_t kShown = 8;
  if (v.size() <= kShown) return absl::StrJoin(v, ", ");
  return absl::StrCat(absl::StrJoin(v.begin(), v.begin() + kShown, ", "), ", ...");
}

bool WholeAxis(const SliceRange& r, int64_t dim) {
  return r.start == 0 && r.step == 1 && r.count == dim;
}

// Gather of constant `table` on axis 0 by the int64 activation input 1: an embedding lookup, run on
// the device (graph/graph.h gather: ids out of range are clamped there, not checked here).
absl::Status MapEmbeddingGather(Importer& im, const NodeProto& n, const ConstTensor& table) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* ids, im.Input(n, 1));
  // Constant ids with a constant table fold before mapping; the check keeps tensor ids valid.
  const bool int64 = !ids->is_constant() && ids->qdq_scale == 0 &&
                     im.graph().tensor(ids->tensor).dtype == DType::kI64;
  if (!int64) {
    const std::string got = ids->is_constant() ? "a constant"
                            : ids->qdq_scale > 0
                                ? "a QuantizeLinear output"
                                : std::string(DTypeName(im.graph().tensor(ids->tensor).dtype));
    return im.Unsupported(n, absl::StrCat("the indices '", n.input(1),
                                          "' of a constant table must be an INT64 activation "
                                          "(token ids), got ",
                                          got));
  }
  const int64_t rank = static_cast<int64_t>(table.dims.size());
  if (rank == 0) return im.Error(n, "the data is a scalar: Gather needs rank >= 1");
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 0));
  TUNEJIT_ASSIGN_OR_RETURN(axis, im.AtNode(n, NormalizeAxis(axis, rank, "attribute 'axis'")));
  if (axis != 0) {
    return im.Unsupported(
        n, absl::StrCat("axis ", axis, " of the constant table ", ShapeText(table.dims),
                        " by activation indices: only axis 0 (an embedding lookup) is supported"));
  }
  if (!IsFloatType(table.dtype)) {
    return im.Unsupported(
        n, absl::StrCat("the table '", n.input(0), "' is ", std::string(DTypeName(table.dtype)),
                        ": a lookup by activation indices reads a float table"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int w, im.ConstantWeight(n, table, n.input(0), 0));
  return im.AddOutputNode(n, OpKind::kGather, {w, ids->tensor}, {});
}

}  // namespace

// Slice with step >= 1: one slice node per axis that is narrowed, chained.
absl::Status MapSlice(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<AxisSlice> slices, SliceRanges(im, n, x));
  std::vector<AxisSlice> narrowed;
  for (const AxisSlice& s : slices) {
    if (s.range.step < 0) {
      return im.Unsupported(n, absl::StrCat("steps: step ", s.range.step, " on axis ", s.axis,
                                            ": only positive steps are supported on activations "
                                            "(no reversing slices)"));
    }
    if (s.range.count == 0) {
      return im.Unsupported(
          n, absl::StrCat("starts / ends: the slice of axis ", s.axis, " (", x[s.axis],
                          ") is empty: empty tensors are not "
                          "supported"));
    }
    if (!WholeAxis(s.range, x[s.axis])) narrowed.push_back(s);
  }
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.FloatInput(n, 0));
  for (size_t k = 0; k < narrowed.size(); ++k) {
    const bool last = k + 1 == narrowed.size();
    const std::string suffix = last ? "" : absl::StrCat(".axis", narrowed[k].axis);
    TUNEJIT_ASSIGN_OR_RETURN(
        y, SliceNode(im, n, y, narrowed[k].axis, narrowed[k].range, im.OutName(n, suffix), suffix));
  }
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// Split: one slice node per output (an output that is the whole input is the input).
absl::Status MapSplit(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(SplitSpec spec, SplitOf(im, n, x));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  int64_t start = 0;
  for (int i = 0; i < n.output_size(); ++i) {
    const int64_t size = spec.sizes[i];
    const std::string& name = n.output(i);
    const int64_t first = start;
    start += size;
    if (name.empty()) continue;
    if (size == 0) {
      if (im.Consumers(name) == 0 && !im.IsGraphOutput(name)) continue;
      return im.Unsupported(n, absl::StrCat("split: output ", i, " ('", name,
                                            "') is empty: empty tensors are not supported"));
    }
    int y = in;
    if (size != x[spec.axis]) {
      TUNEJIT_ASSIGN_OR_RETURN(y, SliceNode(im, n, in, spec.axis, Range(first, size),
                                            im.OutName(n, "", i), absl::StrCat(".", i)));
    }
    TUNEJIT_RETURN_IF_ERROR(im.BindOutput(n, i, Value::Tensor(y)));
  }
  return absl::OkStatus();
}

// Gather on an activation with constant indices: a scalar index k is x's axis narrowed to
// [k, k + 1) and then dropped (a reshape); a 1-D run of consecutive increasing indices a, a + 1,
// ... is a slice. Other index patterns would need a gather op the graph does not have.
absl::Status MapGather(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* data, im.Input(n, 0));
  if (data->is_constant()) return MapEmbeddingGather(im, n, *data->constant);
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(GatherSpec g, GatherOf(im, n, x));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  const int64_t dim = x[g.axis];
  if (g.index_dims.empty()) {
    int y = in;
    if (dim != 1) {
      TUNEJIT_ASSIGN_OR_RETURN(y, SliceNode(im, n, in, g.axis, Range(g.indices[0], 1),
                                            im.OutName(n, ".slice"), ".slice"));
    }
    Dims dropped = x;
    dropped.erase(dropped.begin() + g.axis);
    TUNEJIT_ASSIGN_OR_RETURN(y, ReshapeTensor(im, n, y, dropped));
    return im.BindOutput(n, 0, Value::Tensor(y));
  }
  bool run = g.index_dims.size() == 1 && !g.indices.empty();
  for (size_t k = 1; run && k < g.indices.size(); ++k)
    run = g.indices[k] == g.indices[0] + int64_t(k);
  if (!run) {
    return im.Unsupported(
        n, absl::StrCat("indices ", ShapeText(g.index_dims), " (", IndicesText(g.indices),
                        ") on axis ", g.axis,
                        ": on an activation only a constant scalar index (x[:, k]) or a 1-D run "
                        "of consecutive increasing indices (x[:, a:b]) is supported"));
  }
  const SliceRange r = Range(g.indices[0], static_cast<int64_t>(g.indices.size()));
  if (WholeAxis(r, dim)) return im.BindOutput(n, 0, Value::Tensor(in));
  TUNEJIT_ASSIGN_OR_RETURN(int y, SliceNode(im, n, in, g.axis, r, im.OutName(n), ""));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

}  // namespace tunejit::onnx_import
