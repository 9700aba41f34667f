#include "graph/graph.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "graph/shape_inference.h"

namespace tunejit {
namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status NodeError(int index, const Node& node, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(NodeLabel(index, node), ": ", what));
}

}  // namespace

std::string_view TensorKindName(TensorKind kind) {
  switch (kind) {
    case TensorKind::kInput:
      return "input";
    case TensorKind::kWeight:
      return "weight";
    case TensorKind::kActivation:
      return "activation";
    case TensorKind::kOutput:
      return "output";
  }
  return "?";
}

std::string_view OpKindName(OpKind op) {
  switch (op) {
    case OpKind::kConv2d:
      return "conv2d";
    case OpKind::kDense:
      return "dense";
    case OpKind::kBiasAdd:
      return "bias_add";
    case OpKind::kRelu:
      return "relu";
    case OpKind::kMaxPool2d:
      return "max_pool2d";
    case OpKind::kFlatten:
      return "flatten";
    case OpKind::kSoftmax:
      return "softmax";
    case OpKind::kQuantize:
      return "quantize";
    case OpKind::kDequantize:
      return "dequantize";
    case OpKind::kRequantize:
      return "requantize";
    case OpKind::kAdd:
      return "add";
    case OpKind::kAvgPool2d:
      return "avg_pool2d";
    case OpKind::kGlobalAvgPool2d:
      return "global_avg_pool2d";
    case OpKind::kClip:
      return "clip";
    case OpKind::kUnary:
      return "unary";
    case OpKind::kBinary:
      return "binary";
    case OpKind::kConcat:
      return "concat";
    case OpKind::kTranspose:
      return "transpose";
    case OpKind::kReshape:
      return "reshape";
    case OpKind::kSlice:
      return "slice";
    case OpKind::kReduceMean:
      return "reduce_mean";
    case OpKind::kLayerNorm:
      return "layer_norm";
    case OpKind::kMatMul:
      return "matmul";
    case OpKind::kGather:
      return "gather";
  }
  return "?";
}

int64_t TensorDesc::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string NodeLabel(int index, const Node& node) {
  return absl::StrCat("node ", index, " '", node.name, "' (", std::string(OpKindName(node.op)),
                      ")");
}

int Graph::AddTensor(TensorDesc desc) {
  tensors_.push_back(std::move(desc));
  return static_cast<int>(tensors_.size()) - 1;
}

absl::StatusOr<int> Graph::AddNode(std::string name, OpKind op, std::vector<int> inputs,
                                   const NodeAttrs& attrs, std::string output_name,
                                   TensorKind kind) {
  Node node{std::move(name), op, std::move(inputs), -1, attrs};
  std::vector<const TensorDesc*> descs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (node.inputs[i] < 0 || node.inputs[i] >= static_cast<int>(tensors_.size())) {
      return NodeError(static_cast<int>(nodes_.size()), node,
                       absl::StrCat("input ", i, ": no tensor with id ", node.inputs[i]));
    }
    descs.push_back(&tensors_[node.inputs[i]]);
  }
  absl::StatusOr<InferredOutput> out = InferOutput(op, attrs, descs);
  if (!out.ok()) {
    return NodeError(static_cast<int>(nodes_.size()), node, std::string(out.status().message()));
  }
  node.output = AddTensor({std::move(output_name), out->shape, out->dtype, kind});
  nodes_.push_back(std::move(node));
  return nodes_.back().output;
}

std::optional<int> Graph::FindTensor(std::string_view name) const {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].name == name) return static_cast<int>(i);
  }
  return std::nullopt;
}

std::vector<int> Graph::TensorsOfKind(TensorKind kind) const {
  std::vector<int> ids;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (tensors_[i].kind == kind) ids.push_back(static_cast<int>(i));
  }
  return ids;
}

absl::Status Graph::Validate() const {
  std::set<std::string> names;
  for (const TensorDesc& t : tensors_) {
    if (t.name.empty() || !names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "': name is empty or used twice"));
    }
    for (int64_t d : t.shape) {
      if (d <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor '", t.name, "': shape ", ShapeText(t.shape), " has a dim <= 0"));
      }
    }
  }
  std::set<std::string> node_names;
  std::vector<int> producer(tensors_.size(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!node_names.insert(nodes_[i].name).second) {
      return NodeError(static_cast<int>(i), nodes_[i], "node name used twice");
    }
    TUNEJIT_RETURN_IF_ERROR(ValidateNode(static_cast<int>(i), &producer));
  }
  for (size_t t = 0; t < tensors_.size(); ++t) {
    const TensorKind kind = tensors_[t].kind;
    if ((kind == TensorKind::kActivation || kind == TensorKind::kOutput) && producer[t] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", tensors_[t].name, "' (",
                                                     std::string(TensorKindName(kind)),
                                                     "): no node produces it"));
    }
  }
  return absl::OkStatus();
}

absl::Status Graph::ValidateNode(int index, std::vector<int>* producer) const {
  const Node& node = nodes_[index];
  std::vector<const TensorDesc*> descs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int id = node.inputs[i];
    if (id < 0 || id >= static_cast<int>(tensors_.size())) {
      return NodeError(index, node, absl::StrCat("input ", i, ": no tensor with id ", id));
    }
    const TensorDesc& t = tensors_[id];
    const bool produced = t.kind == TensorKind::kActivation || t.kind == TensorKind::kOutput;
    if (produced && (*producer)[id] < 0) {
      return NodeError(
          index, node,
          absl::StrCat("input ", i, " '", t.name, "' is used before a node produces it"));
    }
    const InputKind want = ExpectedInputKind(node.op, static_cast<int>(i));
    const bool is_weight = t.kind == TensorKind::kWeight;
    if (want != InputKind::kEither && (want == InputKind::kWeight) != is_weight) {
      return NodeError(index, node,
                       absl::StrCat("input ", i, " '", t.name, "' has kind ",
                                    std::string(TensorKindName(t.kind)), "; expected ",
                                    want == InputKind::kWeight ? "a weight" : "a non-weight"));
    }
    descs.push_back(&t);
  }
  absl::StatusOr<InferredOutput> inferred = InferOutput(node.op, node.attrs, descs);
  if (!inferred.ok()) return NodeError(index, node, std::string(inferred.status().message()));
  if (node.output < 0 || node.output >= static_cast<int>(tensors_.size())) {
    return NodeError(index, node, absl::StrCat("output: no tensor with id ", node.output));
  }
  const TensorDesc& out = tensors_[node.output];
  if (out.kind == TensorKind::kInput || out.kind == TensorKind::kWeight) {
    return NodeError(
        index, node,
        absl::StrCat("output '", out.name, "' is a graph ", std::string(TensorKindName(out.kind))));
  }
  if ((*producer)[node.output] >= 0) {
    return NodeError(index, node,
                     absl::StrCat("output '", out.name, "' is already produced by node ",
                                  (*producer)[node.output]));
  }
  if (out.shape != inferred->shape || out.dtype != inferred->dtype) {
    return NodeError(
        index, node,
        absl::StrCat("output '", out.name, "' is ", std::string(DTypeName(out.dtype)), " ",
                     ShapeText(out.shape), ", expected ", std::string(DTypeName(inferred->dtype)),
                     " ", ShapeText(inferred->shape)));
  }
  (*producer)[node.output] = index;
  return absl::OkStatus();
}

int64_t NodeMacs(const Graph& graph, const Node& node) {
  if (node.op != OpKind::kConv2d && node.op != OpKind::kDense) return 0;
  const TensorDesc& w = graph.tensor(node.inputs[1]);
  const TensorDesc& out = graph.tensor(node.output);
  // Each output element takes one MAC per weight element of its output channel / row.
  return out.NumElements() * (w.NumElements() / w.shape[0]);
}

int64_t GraphMacs(const Graph& graph) {
  int64_t total = 0;
  for (const Node& node : graph.nodes()) total += NodeMacs(graph, node);
  return total;
}

int OnlyReader(const Graph& graph, int t) {
  if (graph.tensor(t).kind != TensorKind::kActivation) return -1;
  int reader = -1;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const std::vector<int>& in = graph.nodes()[i].inputs;
    if (std::find(in.begin(), in.end(), t) == in.end()) continue;
    if (reader >= 0) return -1;
    reader = i;
  }
  return reader;
}

int SoleReader(const Graph& graph, int t, OpKind op) {
  const int reader = OnlyReader(graph, t);
  if (reader < 0) return -1;
  const Node& user = graph.nodes()[reader];
  if (user.op != op || user.inputs[0] != t) return -1;
  if (op == OpKind::kBiasAdd && graph.tensor(user.inputs[1]).kind != TensorKind::kWeight) return -1;
  return reader;
}

autotvm::Conv2dParams ConvGeometry(const Graph& graph, const Node& node) {
  const TensorDesc& data = graph.tensor(node.inputs[0]);
  const TensorDesc& weight = graph.tensor(node.inputs[1]);
  autotvm::Conv2dParams p;
  p.n = data.shape[0];
  p.ci = data.shape[1];
  p.h = data.shape[2];
  p.w = data.shape[3];
  p.co = weight.shape[0];
  p.kh = weight.shape[2];
  p.kw = weight.shape[3];
  p.groups = node.attrs.groups;
  p.stride_h = node.attrs.stride_h;
  p.stride_w = node.attrs.stride_w;
  p.pad_top = node.attrs.pad_top;
  p.pad_left = node.attrs.pad_left;
  p.pad_bottom = node.attrs.pad_bottom;
  p.pad_right = node.attrs.pad_right;
  p.dilation_h = node.attrs.dilation_h;
  p.dilation_w = node.attrs.dilation_w;
  return p;
}

}  // namespace tunejit
