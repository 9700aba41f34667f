#include "executor/node_tasks.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// The 2x2 max pool of stride 2 without padding that conv `node`'s value reaches through an
// optional bias_add and relu (each the only reader of the value before it), or -1.
int PoolAfterConv(const Graph& graph, int node) {
  int t = graph.nodes()[node].output;
  for (OpKind op : {OpKind::kBiasAdd, OpKind::kRelu}) {
    if (int fused = SoleReader(graph, t, op); fused >= 0) t = graph.nodes()[fused].output;
  }
  const int pool = SoleReader(graph, t, OpKind::kMaxPool2d);
  if (pool < 0) return -1;
  const NodeAttrs& a = graph.nodes()[pool].attrs;
  const bool two_by_two = a.pool_h == 2 && a.pool_w == 2 && a.stride_h == 2 && a.stride_w == 2 &&
                          a.pad_top == 0 && a.pad_left == 0 && a.pad_bottom == 0 &&
                          a.pad_right == 0;
  return two_by_two ? pool : -1;
}

// Whether a conv2d or dense reads what `node` computes, directly or through other ops: then its
// output is an fp16 activation inside the network; otherwise it leaves at the graph's edge (the
// logits) in float32. Nodes are in topological order, so one forward pass finds them.
bool FeedsConvOrDense(const Graph& graph, int node) {
  std::vector<bool> reached(graph.tensors().size(), false);
  reached[graph.nodes()[node].output] = true;
  for (size_t i = node + 1; i < graph.nodes().size(); ++i) {
    const Node& n = graph.nodes()[i];
    bool reads = false;
    for (int input : n.inputs) reads = reads || reached[input];
    if (!reads) continue;
    if (n.op == OpKind::kConv2d || n.op == OpKind::kDense) return true;
    reached[n.output] = true;
  }
  return false;
}

// Relay.quantize's rule for which convs run int8: whole 4-channel groups, groups 1.
bool QuantizesToInt8(const autotvm::Conv2dParams& p) {
  return p.groups == 1 && p.ci % 4 == 0 && p.co % 4 == 0;
}

// The modes a node tries, best first (node_tasks.h).
std::vector<NumericMode> ModeLadder(NumericMode network, bool conv, bool quantizes) {
  using M = NumericMode;
  switch (network) {
    case M::kInt8Dp4a:
      if (conv && quantizes) return {M::kInt8Dp4a, M::kFp32};
      return {M::kFp32};
    case M::kInt8TensorCores:
      if (conv && quantizes) return {M::kInt8TensorCores, M::kInt8Dp4a};
      return {M::kFp16TensorCores, M::kFp32};
    case M::kFp16TensorCores:
      return {M::kFp16TensorCores, M::kFp32};
    case M::kFp32:
      break;
  }
  return {M::kFp32};
}

absl::Status RequireFloat(const Graph& graph, int index, const Node& node) {
  for (int input : {node.inputs[0], node.inputs[1]}) {
    if (graph.tensor(input).dtype != DType::kF32) {
      return absl::UnimplementedError(
          absl::StrCat(NodeLabel(index, node), ": input '", graph.tensor(input).name, "' is ",
                       std::string(DTypeName(graph.tensor(input).dtype)),
                       "; the graph must be float32 (tunejit quantizes "
                       "it itself at --precision int8)"));
    }
  }
  return absl::OkStatus();
}

// The node's request in a network at `mode`: its geometry, whether it writes float16 (in the
// tensor-core modes), and for a conv the 2x2 pool its value reaches (-1 for none).
OpRequest RequestFor(const Graph& graph, int i, NumericMode mode, int* pool) {
  const Node& node = graph.nodes()[i];
  OpRequest r;
  *pool = -1;
  if (node.op == OpKind::kConv2d) {
    r.op = OpRequest::Op::kConv2d;
    r.conv = ConvGeometry(graph, node);
    *pool = PoolAfterConv(graph, i);
  } else {
    r.op = OpRequest::Op::kDense;
    r.dense.m = graph.tensor(node.inputs[0]).shape[0];
    r.dense.k = graph.tensor(node.inputs[0]).shape[1];
    r.dense.n = graph.tensor(node.inputs[1]).shape[0];
  }
  r.half_output = UsesTensorCores(mode) && FeedsConvOrDense(graph, i);
  return r;
}

// The offers for the node at `mode`: the pooled conv's where a pool follows and a template fuses
// it, else the plain op's.
std::vector<OpOffer> OffersAt(OpRequest request, NumericMode mode, int pool, bool* pooled) {
  request.mode = mode;
  *pooled = false;
  if (pool >= 0) {
    OpRequest fused = request;
    fused.op = OpRequest::Op::kConv2dMaxPool;
    std::vector<OpOffer> offers = OffersFor(fused);
    if (!offers.empty()) {
      *pooled = true;
      return offers;
    }
  }
  return OffersFor(request);
}

// A graph matmul node of rank 3 ([B, M, K] x [B, K, N], a batch of 1 on either side
// broadcasting; a second operand of rank 2 is a batch of 1) as batch_matmul.cuda's request, at
// fp32 networks only; nullopt for any other matmul (it stays on tensor_ops.cu's kernel).
std::optional<OpRequest> BatchMatmulRequest(const Graph& graph, const Node& node,
                                            NumericMode mode) {
  if (mode != NumericMode::kFp32 || node.inputs.size() != 2) return std::nullopt;
  const TensorDesc& x = graph.tensor(node.inputs[0]);
  const TensorDesc& y = graph.tensor(node.inputs[1]);
  const TensorDesc& out = graph.tensor(node.output);
  if (x.dtype != DType::kF32 || y.dtype != DType::kF32 || out.dtype != DType::kF32 ||
      x.shape.size() != 3 || (y.shape.size() != 3 && y.shape.size() != 2) ||
      out.shape.size() != 3) {
    return std::nullopt;
  }
  autotvm::BatchMatmulParams p;
  p.x_batch = x.shape[0];
  p.y_batch = y.shape.size() == 3 ? y.shape[0] : 1;
  p.m = x.shape[1];
  p.k = x.shape[2];
  p.n = y.shape.back();
  const bool batches = p.x_batch == p.y_batch || p.x_batch == 1 || p.y_batch == 1;
  if (!batches || y.shape[y.shape.size() - 2] != p.k ||
      out.shape != std::vector<int64_t>{p.batch(), p.m, p.n}) {
    return std::nullopt;
  }
  OpRequest r;
  r.op = OpRequest::Op::kBatchMatMul;
  r.mode = mode;
  r.batch_matmul = p;
  return r;
}

std::string LadderText(const std::vector<NumericMode>& ladder) {
  return absl::StrJoin(ladder, ", ",
                       [](std::string* out, NumericMode m) { out->append(NumericModeName(m)); });
}

}  // namespace

absl::StatusOr<std::vector<NodeTask>> ExtractTasks(const Graph& graph, NumericMode mode) {
  std::vector<NodeTask> tasks;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Node& node = graph.nodes()[i];
    if (node.op == OpKind::kMatMul) {
      // Tuned where batch_matmul.cuda takes it; otherwise the untuned tensor-op step.
      const std::optional<OpRequest> request = BatchMatmulRequest(graph, node, mode);
      std::vector<OpOffer> offers = request ? OffersFor(*request) : std::vector<OpOffer>{};
      if (offers.empty()) continue;
      NodeTask task;
      task.node = i;
      task.name = node.name;
      task.mode = request->mode;
      task.forms = offers.front().forms;
      task.flops = request->batch_matmul.Flops();
      for (OpOffer& offer : offers) task.implementations.push_back(std::move(offer.implementation));
      tasks.push_back(std::move(task));
      continue;
    }
    if (node.op != OpKind::kConv2d && node.op != OpKind::kDense) continue;
    TUNEJIT_RETURN_IF_ERROR(RequireFloat(graph, i, node));
    NodeTask task;
    task.node = i;
    task.name = node.name;
    task.flops = 2.0 * static_cast<double>(NodeMacs(graph, node));
    int pool = -1;
    const OpRequest request = RequestFor(graph, i, mode, &pool);
    const bool conv = node.op == OpKind::kConv2d;
    const std::vector<NumericMode> ladder =
        ModeLadder(mode, conv, conv && QuantizesToInt8(request.conv));
    for (NumericMode m : ladder) {
      bool pooled = false;
      std::vector<OpOffer> offers = OffersAt(request, m, pool, &pooled);
      if (offers.empty()) continue;
      task.mode = m;
      task.forms = offers.front().forms;
      task.half_output = task.half() && request.half_output;
      task.pool = pooled ? pool : -1;
      for (OpOffer& offer : offers) task.implementations.push_back(std::move(offer.implementation));
      break;
    }
    if (task.implementations.empty()) {
      return absl::UnimplementedError(absl::StrCat(
          NodeLabel(i, node), ": no kernel template implements it at ", LadderText(ladder)));
    }
    tasks.push_back(std::move(task));
  }
  return tasks;
}

std::vector<autotvm::Workload> DistinctWorkloads(const std::vector<NodeTask>& tasks) {
  std::vector<autotvm::Workload> out;
  std::unordered_set<std::string> seen;
  for (const NodeTask& task : tasks) {
    for (const autotvm::Implementation& impl : task.implementations) {
      if (seen.insert(impl.workload.Key()).second) out.push_back(impl.workload);
    }
  }
  return out;
}

}  // namespace tunejit
