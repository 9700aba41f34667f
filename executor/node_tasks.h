// File: executor/node_tasks.h
// What a graph asks of the kernel templates at a numeric mode: for each conv2d / dense node, the
// mode it computes in and the AutoTVM workloads of every task name that can implement it there
// (the op templates' offers, ops/op_template.h OpTemplate::Implement), with the node's FLOPs. The
// executor chooses among them with the tuning log; `tunejit tune` and `tunejit warm --model` tune
// / compile all of them, as TVM's extract_from_program does.
//
// A node tries the modes of its ladder, best first, and takes the first at which a template
// implements it:
//   kFp32             every node: fp32.
//   kInt8Dp4a         a conv the quantization rule takes (groups 1, input and output channels in
//                     4s; TVM's relay.quantize on VGG-16 keeps the 3-channel first conv float):
//                     int8 (dp4a), then fp32; everything else fp32 (the dense layers too).
//   kInt8TensorCores  a conv the rule takes: int8 on wgmma (NHWC), then int8 dp4a; other convs
//                     and the dense layers float16 on wgmma (fp16 tensor cores), then fp32: the RGB
//                     stem on the stem template, requantizing to int8 NHWC in its epilogue, where
//                     float32 on the CUDA cores took a fifth of the network's time.
//   kFp16TensorCores  every conv and dense: float16 on wgmma with float32 accumulation (float16
//                     activations; float32 for a layer no conv or dense reads after: the logits),
//                     the stem template for a conv too narrow for wgmma, the NHWC depthwise
//                     template for a depthwise conv of multiplier 1, then fp32.
// A graph matmul of rank 3 ([XB, M, K] x [YB, K, N], equal batches or a batch of 1 on either
// side) in an fp32 network is a task too: batch_matmul.cuda, reading y as [B, K, N]
// (OperandForms::y_kn); other matmuls (other ranks or modes) have none and run untuned.
// A tensor-core conv followed by a 2x2 max pool becomes the pooled task
// (conv2d_nhwc_wgmma_pool.cuda, NodeTask::pool): the pool runs in the conv's kernel.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<NodeTask> tasks,
//                            ExtractTasks(graph, NumericMode::kInt8Dp4a));
//   for (const NodeTask& t : tasks) for (const auto& impl : t.implementations) ...
#ifndef TUNEJIT_EXECUTOR_NODE_TASKS_H_
#define TUNEJIT_EXECUTOR_NODE_TASKS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/dispatch.h"
#include "autotvm/workload.h"
#include "graph/graph.h"
#include "ops/numeric_mode.h"
#include "ops/op_template.h"

namespace tunejit {

struct NodeTask {
  int node = -1;     // graph node index (a conv2d, dense or rank-3 matmul node)
  std::string name;  // the node's name, e.g. "features.0"
  // The mode the node computes in: the network's, or the next one down its ladder.
  NumericMode mode = NumericMode::kFp32;
  // How its implementations take the data and give the output (NHWC; the stem's float32 NCHW
  // data).
  OperandForms forms;
  // Tensor-core float16: the output is float16 (a later conv or dense reads it), else float32.
  bool half_output = false;
  // A tensor-core conv whose value (after a bias_add and relu, each its value's only reader)
  // only a 2x2 max pool of stride 2 reads: that max_pool2d node, which the conv's step absorbs
  // (the implementations are then conv2d_nhwc_wgmma_pool.cuda's); -1 otherwise.
  int pool = -1;
  // Every task name that can implement the node, in Relay's order; priority as Relay's plevel.
  std::vector<autotvm::Implementation> implementations;
  double flops = 0;  // 2 x MACs

  bool int8() const { return IsInt8(mode); }  // int8 data, int32 accumulators
  bool half() const { return mode == NumericMode::kFp16TensorCores; }
};

// One NodeTask per conv2d / dense node (and fp32 rank-3 matmul node), in node order. Unimplemented
// (naming the node and the modes tried) for a conv2d or dense no template implements, or a graph
// that is not float32.
absl::StatusOr<std::vector<NodeTask>> ExtractTasks(const Graph& graph, NumericMode mode);

// The distinct workloads of `tasks` (one per task name and shape; a network repeating a layer
// shape lists it once), in first-use order: what a tuner tunes.
std::vector<autotvm::Workload> DistinctWorkloads(const std::vector<NodeTask>& tasks);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_NODE_TASKS_H_
