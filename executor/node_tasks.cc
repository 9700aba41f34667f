#include "executor/node_tasks.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tunejit {
namespace {

// The conv's AutoTVM parameters at `precision` (NCHW, the dtypes the int8 rule picks).
autotvm::Conv2dParams ConvParams(const Graph& graph, const Node& node, Precision precision) {
  autotvm::Conv2dParams p = ConvGeometry(graph, node);
  // Depthwise convs stay float: the int8 templates need whole 4-channel groups (groups == 1).
  const bool int8 =
      precision == Precision::kInt8 && p.groups == 1 && p.ci % 4 == 0 && p.co % 4 == 0;
  if (int8) {
    p.data_dtype = p.kernel_dtype = "int8";
    p.out_dtype = "int32";
  }
  return p;
}

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

// Precision::kFp16: the tensor-core implementations of the node with float16 data (and a
// float16 output when a later conv or dense reads it), or none (the node stays float32).
std::vector<autotvm::Implementation> Fp16Conv(autotvm::Conv2dParams p, bool fp16_out) {
  p.data_dtype = p.kernel_dtype = "float16";
  p.out_dtype = fp16_out ? "float16" : "float32";
  return autotvm::Conv2dWgmmaImplementations(p);
}
std::vector<autotvm::Implementation> Fp16Dense(autotvm::DenseParams p, bool fp16_out) {
  p.data_dtype = "float16";
  p.out_dtype = fp16_out ? "float16" : "float32";
  return autotvm::DenseWgmmaImplementations(p);
}

// An fp16 conv too narrow for the tensor-core template (VGG-16's RGB stem) on the stem template,
// which reads the float32 NCHW input and weight as they are; none when it cannot take it.
std::vector<autotvm::Implementation> Fp16StemConv(autotvm::Conv2dParams p, bool fp16_out) {
  p.out_dtype = fp16_out ? "float16" : "float32";
  return autotvm::Conv2dStemImplementations(p);
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

// A tensor-core conv with a 2x2 max pool after it becomes the pooled task (NodeTask::pool).
void PoolInto(const Graph& graph, NodeTask* task) {
  const int pool = PoolAfterConv(graph, task->node);
  if (pool < 0) return;
  absl::StatusOr<autotvm::Conv2dParams> parsed =
      autotvm::ParseConv2dWorkload(task->implementations.front().workload);
  if (!parsed.ok()) return;
  std::vector<autotvm::Implementation> pooled = autotvm::Conv2dWgmmaPoolImplementations(*parsed);
  if (pooled.empty()) return;
  task->implementations = std::move(pooled);
  task->pool = pool;
}

}  // namespace

std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kInt8:
      return "int8";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp32:
      break;
  }
  return "fp32";
}

absl::StatusOr<Precision> ParsePrecision(std::string_view text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "int8") return Precision::kInt8;
  if (text == "fp16") return Precision::kFp16;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown precision '", std::string(text), "' (expected fp32, int8 or fp16)"));
}

absl::StatusOr<std::vector<NodeTask>> ExtractTasks(const Graph& graph, Precision precision,
                                                   const TaskOptions& options) {
  std::vector<NodeTask> tasks;
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Node& node = graph.nodes()[i];
    if (node.op != OpKind::kConv2d && node.op != OpKind::kDense) continue;
    absl::Status float_inputs = RequireFloat(graph, i, node);
    if (!float_inputs.ok()) return float_inputs;
    NodeTask task;
    task.node = i;
    task.name = node.name;
    task.flops = 2.0 * static_cast<double>(NodeMacs(graph, node));
    if (node.op == OpKind::kConv2d) {
      autotvm::Conv2dParams p = ConvParams(graph, node, precision);
      task.int8 = p.data_dtype == "int8";
      const bool int8_tensor_cores = precision == Precision::kInt8 && options.int8_tensor_cores;
      if (task.int8 && int8_tensor_cores) {
        task.implementations = autotvm::Conv2dWgmmaImplementations(p);
        task.nhwc = !task.implementations.empty();
      } else if (precision == Precision::kFp16 || int8_tensor_cores) {
        // fp16, or a conv the int8 rule keeps float (the RGB stem) with int8 on the tensor
        // cores: the same float16 workload either way (so fp16 logs' records apply), its float32
        // accumulators requantized to int8 NHWC when int8 convs read it (a float32 NCHW stem took
        // 1.4 ms and its transpose to NHWC 0.8 ms of 10.7). The RGB stem itself has too few
        // channels for the tensor-core template: the stem template takes it.
        task.fp16_output = FeedsConvOrDense(graph, i);
        task.implementations = Fp16Conv(p, task.fp16_output);
        if (task.implementations.empty()) {
          task.implementations = Fp16StemConv(p, task.fp16_output);
          task.stem = !task.implementations.empty();
        }
        task.fp16 = task.nhwc = !task.implementations.empty();
      }
      if (task.nhwc && !task.stem) PoolInto(graph, &task);
      if (task.implementations.empty()) task.implementations = autotvm::Conv2dImplementations(p);
    } else {
      autotvm::DenseParams p;
      p.m = graph.tensor(node.inputs[0]).shape[0];
      p.k = graph.tensor(node.inputs[0]).shape[1];
      p.n = graph.tensor(node.inputs[1]).shape[0];
      // int8 on the tensor cores leaves no dense on the CUDA cores either: float16 on wgmma.
      if (precision == Precision::kFp16 ||
          (precision == Precision::kInt8 && options.int8_tensor_cores)) {
        task.fp16_output = FeedsConvOrDense(graph, i);
        task.implementations = Fp16Dense(p, task.fp16_output);
        task.fp16 = !task.implementations.empty();
      }
      if (task.implementations.empty()) task.implementations = autotvm::DenseImplementations(p);
    }
    if (!task.fp16) task.fp16_output = false;
    if (task.implementations.empty()) {
      return absl::UnimplementedError(
          absl::StrCat(NodeLabel(i, node), ": no kernel template implements it"));
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
