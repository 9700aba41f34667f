// Shape ops on activations: Shape and Size (constants: every shape is static), Reshape, Flatten,
// Squeeze, Unsqueeze (flatten or reshape views), Transpose, Concat, Expand (a broadcasting add of
// zeros) and Pad (concats of the fill value). Their constant forms fold (onnx/fold.cc) with the
// same rules (onnx/op_attrs.h).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/const_ops.h"
#include "onnx/importer.h"
#include "onnx/op_attrs.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

// The dims of input 0, an activation or a constant.
absl::StatusOr<Dims> InputDims(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, im.Input(n, 0));
  if (v->is_constant()) return v->constant->dims;
  return im.graph().tensor(v->tensor).shape;
}

absl::Status BindReshaped(Importer& im, const NodeProto& n, absl::StatusOr<Dims> to) {
  TUNEJIT_RETURN_IF_ERROR(to.status());
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int y, ReshapeTensor(im, n, x, *std::move(to)));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

}  // namespace

absl::StatusOr<int> ReshapeTensor(Importer& im, const NodeProto& n, int x, Dims shape,
                                  absl::string_view suffix) {
  const Dims& in = im.graph().tensor(x).shape;
  if (shape == in) return x;
  const bool flatten = in.size() > 2 && shape.size() == 2 && shape[0] == in[0];
  NodeAttrs attrs;
  attrs.shape = shape;
  return im.AddNode(n, flatten ? OpKind::kFlatten : OpKind::kReshape, {x}, attrs,
                    im.OutName(n, suffix), suffix);
}

// Shape (opset 15's start / end included) of an activation's static shape or a constant.
absl::Status MapShape(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, InputDims(im, n));
  const int64_t rank = static_cast<int64_t>(x.size());
  TUNEJIT_ASSIGN_OR_RETURN(int64_t start, im.AttrInt(n, "start", 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t end, im.AttrInt(n, "end", rank));
  const SliceRange r = ClampSlice(start, end, 1, rank);
  const Dims dims(x.begin() + r.start, x.begin() + r.start + r.count);
  ConstTensor t = FromInts(DType::kI64, {r.count}, dims);
  t.name = n.output(0);
  return im.BindOutput(n, 0, Value::Constant(std::move(t)));
}

absl::Status MapSize(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, InputDims(im, n));
  ConstTensor t = FromInts(DType::kI64, {}, {DimsProduct(x)});
  t.name = n.output(0);
  return im.BindOutput(n, 0, Value::Constant(std::move(t)));
}

// A Reshape of int64 token ids (GPT-2's input_ids.view(-1, seq)) that keeps their shape: the ids
// themselves. Any other shape of ids would change the embedding's output shape: refused.
absl::Status BindSameIds(Importer& im, const NodeProto& n, int ids) {
  const Dims& x = im.graph().tensor(ids).shape;
  TUNEJIT_ASSIGN_OR_RETURN(Dims to, ReshapeOutputDims(im, n, x));
  if (to != x) {
    return im.Unsupported(
        n, absl::StrCat("a reshape of the int64 token ids '", n.input(0), "' from ", ShapeText(x),
                        " to ", ShapeText(to), ": only one that keeps their shape is supported"));
  }
  return im.BindOutput(n, 0, Value::Tensor(ids));
}

absl::Status MapReshape(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* in, im.Input(n, 0));
  if (!in->is_constant() && im.graph().tensor(in->tensor).dtype == DType::kI64) {
    return BindSameIds(im, n, in->tensor);
  }
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  absl::StatusOr<Dims> to = ReshapeOutputDims(im, n, x);
  if (!to.ok() && absl::StrContains(to.status().message(), " elements")) {
    // The usual cause: a static batch written into the shape, imported with another --batch.
    return absl::InvalidArgumentError(
        absl::StrCat(to.status().message(),
                     " (a batch size written into the file? export with a dynamic "
                     "batch, or import with the file's own)"));
  }
  return BindReshaped(im, n, std::move(to));
}

// Flatten: axis 1 is the flatten op; any other axis a reshape to [prod(:axis), prod(axis:)].
absl::Status MapFlatten(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, im.AttrInt(n, "axis", 1));
  if ((axis == 1 || axis == 1 - static_cast<int64_t>(x.size())) && x.size() >= 2) {
    TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
    return im.AddOutputNode(n, OpKind::kFlatten, {in}, {});
  }
  return BindReshaped(im, n, FlattenOutputDims(im, n, x));
}

absl::Status MapSqueeze(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  return BindReshaped(im, n, SqueezeOutputDims(im, n, x));
}

absl::Status MapUnsqueeze(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  return BindReshaped(im, n, UnsqueezeOutputDims(im, n, x));
}

absl::Status MapTranspose(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  NodeAttrs attrs;
  TUNEJIT_ASSIGN_OR_RETURN(attrs.perm, TransposePerm(im, n, static_cast<int64_t>(x.size())));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  bool identity = true;
  for (size_t i = 0; i < attrs.perm.size(); ++i) identity &= attrs.perm[i] == int64_t(i);
  if (identity) return im.BindOutput(n, 0, Value::Tensor(in));
  return im.AddOutputNode(n, OpKind::kTranspose, {in}, attrs);
}

// Pad in constant mode: along each padded axis, a concat of constants (the fill value) before and
// after the activation. Swin pads its feature maps to whole windows: at 224 (maps of 56, 28, 14,
// 7, windows of 7) that is no padding at all; Swin V2's windows of 8 at 256 pad the 28 x 28 map
// to 32 x 32. The pads are known once the shape arithmetic before them has folded. Other modes
// (reflect, edge, wrap) and negative pads (crops) are refused.
absl::Status MapPad(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::string mode, im.AttrString(n, "mode", "constant"));
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> pads, im.ConstInput(n, 1, "pads"));
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  const std::vector<int64_t> p = pads->Ints();
  const size_t rank = x.size();
  if (im.HasInput(n, 3)) return im.Unsupported(n, "the axes input (pads of every axis are)");
  if (p.size() != 2 * rank) {
    return im.Error(n, absl::StrCat("pads has ", p.size(), " values; a rank-", rank,
                                    " input needs ", 2 * rank));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.FloatInput(n, 0));
  if (std::all_of(p.begin(), p.end(), [](int64_t v) { return v == 0; })) {
    return im.BindOutput(n, 0, Value::Tensor(y));
  }
  if (mode != "constant" || std::any_of(p.begin(), p.end(), [](int64_t v) { return v < 0; })) {
    return im.Unsupported(n, absl::StrCat("pads [", absl::StrJoin(p, ", "), "] (mode '", mode,
                                          "'): only mode 'constant' with pads >= 0 is supported"));
  }
  float fill = 0.0f;
  if (im.HasInput(n, 2)) {
    TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> v,
                             im.ConstInput(n, 2, "constant_value"));
    if (v->NumElements() != 1) return im.Error(n, "constant_value must hold one value");
    fill = v->Floats()[0];
  }
  Dims shape = x;
  for (size_t axis = 0; axis < rank; ++axis) {
    const int64_t before = p[axis], after = p[rank + axis];
    if (before == 0 && after == 0) continue;
    // `count` rows of the fill value along `axis`, as a weight.
    auto fill_block = [&](int64_t count, const char* side) -> absl::StatusOr<int> {
      Dims block = shape;
      block[axis] = count;
      TUNEJIT_RETURN_IF_ERROR(im.ChargeFold(n, block, DType::kF32));
      return im.AddWeight(
          absl::StrCat(n.output(0), ".pad", axis, side), DType::kF32, block,
          PackBytes(std::vector<float>(static_cast<size_t>(DimsProduct(block)), fill)));
    };
    std::vector<int> parts;
    if (before > 0) {
      TUNEJIT_ASSIGN_OR_RETURN(int w, fill_block(before, ".before"));
      parts.push_back(w);
    }
    parts.push_back(y);
    if (after > 0) {
      TUNEJIT_ASSIGN_OR_RETURN(int w, fill_block(after, ".after"));
      parts.push_back(w);
    }
    NodeAttrs concat;
    concat.axis = static_cast<int>(axis);
    TUNEJIT_ASSIGN_OR_RETURN(
        y, im.AddNode(n, OpKind::kConcat, parts, concat, im.OutName(n, absl::StrCat(".axis", axis)),
                      absl::StrCat(".axis", axis)));
    shape[axis] += before + after;
  }
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// Expand of an activation (F.normalize's divisor expanded to its vector's shape): x + 0 over the
// broadcast shape, the zeros a weight of only the dims x is broadcast along, so that the binary
// op writes the copies.
absl::Status MapExpand(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims x, im.ActivationShape(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(Dims out, ExpandOutputDims(im, n, x));
  TUNEJIT_ASSIGN_OR_RETURN(int in, im.FloatInput(n, 0));
  if (out == x) return im.BindOutput(n, 0, Value::Tensor(in));
  Dims zeros(out.size(), 1);
  const size_t lead = out.size() - x.size();
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < lead || x[i - lead] != out[i]) zeros[i] = out[i];
  }
  TUNEJIT_RETURN_IF_ERROR(im.ChargeFold(n, zeros, DType::kF32));
  const int w =
      im.AddWeight(absl::StrCat(n.output(0), ".zeros"), DType::kF32, zeros,
                   PackBytes(std::vector<float>(static_cast<size_t>(DimsProduct(zeros)), 0.0f)));
  NodeAttrs add;
  add.binary = BinaryFn::kAdd;
  return im.AddOutputNode(n, OpKind::kBinary, {in, w}, add);
}

// Concat of activations and constants (those become weights).
absl::Status MapConcat(Importer& im, const NodeProto& n) {
  if (n.input_size() < 1) return im.Error(n, "has no inputs");
  TUNEJIT_ASSIGN_OR_RETURN(Dims first, InputDims(im, n));
  const int64_t rank = static_cast<int64_t>(first.size());
  NodeAttrs attrs;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t axis, ConcatAxis(im, n, rank));
  attrs.axis = static_cast<int>(axis);
  std::vector<int> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(const int id, im.TensorOrWeight(n, i));
    inputs.push_back(id);
  }
  if (inputs.size() == 1) return im.BindOutput(n, 0, Value::Tensor(inputs[0]));
  return im.AddOutputNode(n, OpKind::kConcat, std::move(inputs), attrs);
}

}  // namespace tunejit::onnx_import
