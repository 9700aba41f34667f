// CheckCudnnSupport: what the cuDNN baseline can run, decided from the graph alone (no GPU), so
// the CPU tests cover it and Create fails before allocating anything.
#include <climits>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "baseline/cudnn_network.h"
#include "common/status_macros.h"
#include "graph/shape_inference.h"

namespace tunejit {
namespace {

absl::Status NodeError(int index, const Node& node, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat(NodeLabel(index, node), ": ", what));
}

bool IsSupportedOp(OpKind op) {
  switch (op) {
    case OpKind::kConv2d:
    case OpKind::kDense:
    case OpKind::kBiasAdd:
    case OpKind::kRelu:
    case OpKind::kMaxPool2d:
    case OpKind::kFlatten:
    case OpKind::kSoftmax:
    case OpKind::kAdd:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool2d:
    case OpKind::kClip:
      return true;
    default:
      return false;
  }
}

// cuDNN describes tensors with int dims and strides, so every tensor must hold < 2^31 elements.
absl::Status CheckTensor(const Graph& graph, int index, const Node& node, int id) {
  const TensorDesc& t = graph.tensor(id);
  if (t.dtype != DType::kF32) {
    return NodeError(index, node,
                     absl::StrCat("tensor '", t.name, "' is ", std::string(DTypeName(t.dtype)),
                                  "; the cuDNN baseline runs float32 (F32) only"));
  }
  if (t.NumElements() > INT_MAX) {
    return NodeError(index, node,
                     absl::StrCat("tensor '", t.name, "' [", absl::StrJoin(t.shape, ", "),
                                  "] has more elements than cuDNN's int dimensions allow"));
  }
  return absl::OkStatus();
}

absl::Status CheckAttrs(const Graph& graph, int index, const Node& node) {
  const NodeAttrs& a = node.attrs;
  if (node.op == OpKind::kClip && !ClipIsCudnnActivation(a)) {
    return NodeError(
        index, node,
        absl::StrCat("clip [", a.clip_min, ", ", a.clip_max,
                     "] is not a cuDNN activation (only [0, max], i.e. (clipped) ReLU)"));
  }
  const size_t rank = graph.tensor(node.inputs[0]).shape.size();
  if (node.op == OpKind::kSoftmax && SoftmaxAxis(a, rank) != 1) {
    return NodeError(index, node,
                     absl::StrCat("softmax over axis ", SoftmaxAxis(a, rank), " of a rank-", rank,
                                  " tensor: the baseline runs cuDNN's channel softmax (axis 1)"));
  }
  if (node.op != OpKind::kConv2d && node.op != OpKind::kMaxPool2d &&
      node.op != OpKind::kAvgPool2d) {
    return absl::OkStatus();
  }
  if (a.pad_top != a.pad_bottom || a.pad_left != a.pad_right) {
    return NodeError(index, node,
                     absl::StrCat("asymmetric padding (top ", a.pad_top, ", bottom ", a.pad_bottom,
                                  ", left ", a.pad_left, ", right ", a.pad_right,
                                  ") is not expressible in a cuDNN 2-D descriptor"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view BaselinePrecisionName(BaselinePrecision precision) {
  return precision == BaselinePrecision::kFp16 ? "fp16" : "fp32";
}

bool ClipIsCudnnActivation(const NodeAttrs& attrs) { return attrs.clip_min == 0.0f; }

absl::Status CheckCudnnSupport(const Graph& graph) {
  TUNEJIT_RETURN_IF_ERROR(graph.Validate());
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Node& node = graph.nodes()[i];
    if (!IsSupportedOp(node.op)) {
      return NodeError(
          i, node,
          absl::StrCat("the cuDNN baseline does not run ", std::string(OpKindName(node.op))));
    }
    for (int id : node.inputs) TUNEJIT_RETURN_IF_ERROR(CheckTensor(graph, i, node, id));
    TUNEJIT_RETURN_IF_ERROR(CheckTensor(graph, i, node, node.output));
    TUNEJIT_RETURN_IF_ERROR(CheckAttrs(graph, i, node));
  }
  return absl::OkStatus();
}

}  // namespace tunejit
