// File: executor/node_tasks.h
// What a graph asks of the kernel templates, at a precision: for each conv2d / dense node, the
// AutoTVM workloads of every task name that can implement it (as Relay's CUDA strategy offers
// them, autotvm/dispatch.h), with the node's FLOPs. The executor chooses among them with the
// tuning log; `tunejit tune` and `tunejit warm --model` tune / compile all of them, as TVM's
// extract_from_program does.
//
// Precision::kInt8 follows the seed log (TVM's relay.quantize defaults on VGG-16): a conv whose
// input and output channel counts are multiples of 4 runs int8 x int8 -> int32 (the first conv,
// with 3 input channels, stays float32); dense layers stay float32. With
// TaskOptions::int8_tensor_cores, every such conv the tensor-core template can express runs there
// instead (conv2d_nhwc_wgmma.cuda, int8 NHWC, IGMMA), and only there; the convs the rule keeps
// float (the RGB stem) and the dense layers then run float16 on wgmma as at Precision::kFp16
// (the stem on the stem template, requantizing to int8 NHWC in its epilogue), where
// float32 on the CUDA cores took a fifth of the network's time.
//
// A tensor-core conv followed by a 2x2 max pool (NodeTask::pool) becomes the pooled task
// conv2d_nhwc_wgmma_pool.cuda instead: the pool runs in the conv's kernel where its tiles allow.
//
// Precision::kFp16 is the Hopper tensor-core path: a conv2d_nhwc_wgmma.cuda can express
// (autotvm::Conv2dWgmmaImplementations) and every dense with K a multiple of 8 run float16 x
// float16 on wgmma with float32 accumulation, writing float16 activations (float32 for a layer
// no conv or dense reads after: the logits). A conv with too few channels for the template
// (VGG-16's 3-channel first conv) runs on conv2d_nchw_stem_mma.cuda when its patch is short
// (NodeTask::stem); anything else stays float32. The executor runs them NHWC
// (executor/step_program.h).
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<NodeTask> tasks, ExtractTasks(graph, Precision::kInt8));
//   for (const NodeTask& t : tasks) for (const auto& impl : t.implementations) ...
#ifndef TUNEJIT_EXECUTOR_NODE_TASKS_H_
#define TUNEJIT_EXECUTOR_NODE_TASKS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/dispatch.h"
#include "autotvm/workload.h"
#include "graph/graph.h"

namespace tunejit {

enum class Precision { kFp32, kInt8, kFp16 };

std::string_view PrecisionName(Precision precision);  // "fp32", "int8", "fp16"
// "fp32" / "int8" / "fp16" (case-sensitive); InvalidArgument naming the accepted values otherwise.
absl::StatusOr<Precision> ParsePrecision(std::string_view text);

struct NodeTask {
  int node = -1;      // graph node index (a conv2d or dense node)
  std::string name;   // the node's name, e.g. "features.0"
  bool int8 = false;  // runs int8 x int8 -> int32 at this precision
  bool nhwc = false;  // a conv on the tensor-core template: NHWC data and output
  // Precision::kFp16 on tensor cores: float16 data (NHWC for a conv), fp32 accumulation, and a
  // float16 output when `fp16_output` (a later conv or dense reads it), else float32.
  bool fp16 = false;
  bool fp16_output = false;
  // fp16: the conv has too few input channels for the wgmma template's 16-byte pixels (VGG-16's
  // RGB stem), so it runs on conv2d_nchw_stem_mma.cuda: float32 NCHW input and OIHW weight as
  // the graph has them, float16 products, NHWC output.
  bool stem = false;
  // A tensor-core conv whose value (after a bias_add and relu, each its value's only reader)
  // only a 2x2 max pool of stride 2 reads: that max_pool2d node, which the conv's step absorbs
  // (the implementations are then conv2d_nhwc_wgmma_pool.cuda's); -1 otherwise.
  int pool = -1;
  // Every task name that can implement the node, in Relay's order; priority as Relay's plevel.
  std::vector<autotvm::Implementation> implementations;
  double flops = 0;  // 2 x MACs
};

struct TaskOptions {
  // Precision::kInt8: the int8 convs the tensor-core template can express run on it (NHWC,
  // IGMMA) rather than on TVM's NCHW dp4a templates, and the dense layers float16 on wgmma.
  // Hopper only; off by default so that an AutoTVM log's int8 records keep applying.
  bool int8_tensor_cores = false;
};

// One NodeTask per conv2d / dense node, in node order. Unimplemented (naming the node) for a
// conv2d or dense the templates cannot express (e.g. a dtype other than float32).
absl::StatusOr<std::vector<NodeTask>> ExtractTasks(const Graph& graph, Precision precision,
                                                   const TaskOptions& options = {});

// The distinct workloads of `tasks` (one per task name and shape; a network repeating a layer
// shape lists it once), in first-use order: what a tuner tunes.
std::vector<autotvm::Workload> DistinctWorkloads(const std::vector<NodeTask>& tasks);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_NODE_TASKS_H_
