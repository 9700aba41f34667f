// File: executor/step_program.h
// The executor's lowering (executor/executor.h), on the host: a validated Graph at a numeric mode
// becomes a flat list of Steps, each one kernel plan at run time:
//  * conv2d / dense absorb a following bias_add and relu into their epilogue (when the
//    intermediate tensors have no other consumer and are not graph outputs); a tensor-core conv
//    also the 2x2 max pool after them (NodeTask::pool: conv2d_nhwc_wgmma_pool.cuda), its step
//    writing the pool's output; an fp16 tensor-core step (unpooled, not requantized) also the
//    activation after its value (and after a fused residual add): a clip (ReLU6), a hard_swish,
//    or silu as x * sigmoid(x), read by nothing else, when every template implementing the node
//    takes one (OpTemplate::takes_activation; Epilogue::activation);
//  * max_pool2d, avg_pool2d, global_avg_pool2d, clip, a standalone bias_add (+relu) and the
//    residual add (+relu, fused when the add's output has no other consumer) are elementwise
//    steps; a relu that cannot be fused runs as a clip step to [0, inf). Where their input is an
//    fp16 NHWC tensor-core output, max pools, global average pools, clips, standalone bias_adds
//    and residual adds (both operands so) stay fp16 NHWC;
//  * flatten and reshape are views: the step tensor aliases its input's bytes (no step);
//  * the general tensor ops (unary, binary, concat, transpose, slice, reduce_mean, layer_norm,
//    matmul, softmax, gather) run on ops/tensor_ops.h's kernels, one step each, reading their
//    inputs as Step::operands (weights among them as float32): float32 row-major, except that
//    element-wise ops and copies keep an fp16 (NHWC) input's form; x * sigmoid(x) is one silu step,
//    and with the weights PyTorch's five-op exact GELU one gelu step. A matmul with a NodeTask
//    (fp32, rank 3: batch_matmul.cuda) is a tuned step (Step::task), its kernel from kernel choice;
//  * at kFp16TensorCores, with the weights, an attention chain (Q K^T, scale, mask, softmax,
//    P V, and a transpose of the result that keeps D last: executor/attention_fusion.h) is one
//    attention step on attention_mma.cuda reading Q, K and V as float16 [B, H, S, D] and writing
//    float16 through strides (the transpose's output); fp32 keeps the unfused tensor ops;
//  * in the int8 modes (graph/quantize.h), an int8 conv whose input is float gets a quantize
//    step before it, and a conv whose output only feeds int8 convs (directly or through max
//    pools, which run on int8) requantizes its output in the epilogue. Every int8 step tensor names
//    a scale slot: the float32 graph tensor whose calibrated max |x| / 127 is its scale (unless
//    the caller gives one: MatchGivenScales). A residual add of two 4-D activations of one shape
//    reads them as int8 (the convs feeding it requantize; both layouts work, the first int8
//    operand's is used) and is one step (ops/elementwise.h AddInt8Kernel): the dequantized sum
//    (+relu) requantized to the add's own scale slot when every reader takes int8, else written
//    as float32 in the operands' layout. The other elementwise steps run in float32.
//  * at kFp16TensorCores, tensor-core convs and dense layers (NodeTask::half) read and write
//    float16, convs in NHWC; max pools after them run NHWC fp16 too. Where a value is needed in
//    another form (the float32 NCHW first conv's output entering the first fp16 conv, the NHWC
//    activations entering a flatten, which follows NCHW order, a float32 op, a graph output) a
//    convert step makes it once (ops/elementwise.h ConvertKernel), shared by every consumer
//    wanting that form. At kInt8TensorCores the int8 convs run NHWC too (int8 in, requantized
//    int8 out), and the max pools between them; the dense layers are float16 tensor-core layers
//    as at kFp16TensorCores (a convert step makes their float32 input float16). A conv too
//    narrow for the tensor-core template (OperandForms::float_nchw_data, VGG-16's RGB stem) reads
//    the float32 NCHW input itself and writes NHWC; at kInt8TensorCores it requantizes its output
//    to int8 NHWC.
// Step tensors are planned with lifetimes over step indices (executor/memory_plan.h PlanBuffers):
// graph inputs and outputs stay live for the whole run (inputs are set before, outputs read
// after).
//
//   TUNEJIT_ASSIGN_OR_RETURN(StepProgram p, LowerToSteps(graph, NumericMode::kInt8Dp4a));
//   for (const Step& s : p.steps) ... p.tensors[s.input], s.epilogue, p.tasks[s.task]
//   TUNEJIT_ASSIGN_OR_RETURN(StepMemory m, PlanStepMemory(p));
#ifndef TUNEJIT_EXECUTOR_STEP_PROGRAM_H_
#define TUNEJIT_EXECUTOR_STEP_PROGRAM_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "executor/node_tasks.h"
#include "graph/graph.h"
#include "graph/weights.h"
#include "ops/attention.h"
#include "ops/op_template.h"

namespace tunejit {

struct StepTensor {
  std::string name;  // the graph tensor's, or "<graph tensor>.int8" for a quantize step's output
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  int graph_tensor = -1;  // the graph tensor whose value it holds (quantized: its source)
  // flatten, or a transpose that only changes the storage order (NCHW <-> NHWC): the step
  // tensor whose bytes it views (a root, never an alias)
  int alias_of = -1;
  bool external = false;  // a graph input or output: live for the whole run
  int scale_slot = -1;    // int8 tensors: index into StepProgram::scale_sources
  // 4-D activations stored as [N, H, W, C] (the tensor-core path); `shape` stays the graph's
  // logical NCHW shape either way.
  bool nhwc = false;
  // The flatten of an NHWC activation, viewed in place: elements in (h, w, c) order, not the
  // graph's (c, h, w); {C, H, W} of the flattened tensor, empty otherwise. Only dense steps whose
  // weight is theirs alone read it; their weight's columns are reordered from (c, h, w) to
  // (h, w, c) at upload, so the product is the graph's.
  std::vector<int64_t> flattened_hwc = {};
  int64_t NumElements() const;
  int64_t Bytes() const { return NumElements() * DTypeSize(dtype); }
};

enum class StepKind {
  kConv2d,
  kDense,
  kMaxPool2d,
  kSoftmax,
  kBiasAdd,
  kQuantize,
  kAdd,
  kAvgPool2d,
  kGlobalAvgPool2d,
  kClip,
  kConvert,  // float32 <-> float16 and / or NCHW <-> NHWC
  // The general tensor ops (ops/tensor_ops.h), float32 row-major; their inputs are `operands`.
  kUnary,
  kBinary,
  kConcat,
  kTranspose,
  kSlice,
  kReduceMean,
  kLayerNorm,
  kMatMul,
  kGather,  // rows of a float32 table (a weight) by int64 ids (an activation, e.g. a graph input)
  // The rotary position embedding (Llama's q and k): operands x [..., S, D] and the cos and sin
  // tables (weights of S * D values), x cos + rotate_half(x) sin.
  kRope,
  // Fused attention at fp16 (executor/attention_fusion.h): Q K^T, scale, mask, softmax and P V
  // as one attention_mma.cuda kernel; operands Q, K, V (float16) and the mask (float32).
  kAttention,
};
std::string_view StepKindName(StepKind kind);  // "conv2d", "dense", "max_pool2d", ...

// One input of a tensor-op step: an activation's step tensor, or a weight (graph tensor id) that
// the step reads as float32.
struct StepOperand {
  int tensor = -1;
  int weight = -1;
};

struct Step {
  StepKind kind = StepKind::kConv2d;
  std::string name;             // the main graph node's name ("features.0")
  int node = -1;                // the main graph node
  int task = -1;                // conv / dense / tuned matmul: index into StepProgram::tasks
  bool int8 = false;            // int8 inputs (conv, max pool, and a quantize step's output)
  Epilogue epilogue;            // conv / dense; kBiasAdd and kAdd use epilogue.relu
  std::string fused;            // "bias+relu+requantize", "" when nothing is fused
  int input = -1, output = -1;  // step tensor ids
  // kAdd: the second operand's step tensor (read with `input`); kConv2d: the value its epilogue
  // adds (Epilogue::residual, the fused skip connection).
  int residual = -1;
  // kConv2d with an int8 residual: the scale slot its own value is requantized to before the add
  // (the unfused conv's output scale; no step tensor carries it).
  int pre_residual_slot = -1;
  int weight = -1, bias = -1;    // graph tensor ids (-1: none)
  std::vector<int> fused_nodes;  // graph nodes absorbed into this step (bias_add, relu)
  // Tensor ops: every input in the node's order (kernel input k is operand k); `input` is the
  // first activation among them.
  std::vector<StepOperand> operands = {};
  // kUnary: the function, the node's or what fusion made of it (sigmoid(x) * x: silu).
  UnaryFn unary = UnaryFn::kSigmoid;
  // kLayerNorm made of an RMS norm's ops (operands x and the scale [C]): its epsilon, else 0.
  float rms_epsilon = 0.0f;
  // kAttention: the problem, and where its operands and output are (strides) with the scale.
  AttentionParams attention;
  AttentionLayout attention_layout;
};

struct StepProgram {
  NumericMode mode = NumericMode::kFp32;  // the network's; each task carries its own
  std::vector<StepTensor> tensors;
  std::vector<Step> steps;
  std::vector<NodeTask> tasks;  // ExtractTasks(graph, mode)
  // Per scale slot, the graph tensor (float32 in the calibration network) whose max |x| sets it.
  std::vector<int> scale_sources;
  // Per graph tensor id, the step tensor holding its value (-1 for weights and fused-away tensors).
  std::vector<int> value_of;
};

// InvalidArgument when the graph does not validate; Unimplemented for ops the executor cannot run
// (graph-level quantize/dequantize/requantize, non-float graphs), naming the node. With the
// weights, fusions that depend on constant values happen too (the exact GELU PyTorch exports as
// x / sqrt(2), erf, + 1, * x, * 0.5 becomes one gelu step).
absl::StatusOr<StepProgram> LowerToSteps(const Graph& graph, NumericMode mode,
                                         const WeightSet* weights = nullptr);

// int8 activation scales given by the caller (ExecutorOptions::activation_scales: graph tensor
// name -> scale, e.g. a QDQ model's), matched to the scale slots of `program`. A slot is shared
// by every int8 step tensor that carries it: its source, and the outputs of the max pools and
// flattens after it (max commutes with a positive scale), so a scale given for a pool's output
// sets its input's slot. When several of a slot's tensors have one (QDQ on both sides of a max
// pool), they should agree; the largest is used, so none of them clips.
struct GivenScales {
  std::vector<std::optional<float>> per_slot;  // nullopt: calibrate the slot
  std::vector<std::string> unused;  // given names no int8 tensor carries (float32 layers), sorted
};
// InvalidArgument for a scale that is not positive and finite (naming the tensor).
absl::StatusOr<GivenScales> MatchGivenScales(const Graph& graph, const StepProgram& program,
                                             const absl::flat_hash_map<std::string, float>& given);
// The slots without a given scale, in order: what calibration measures.
std::vector<int> SlotsToCalibrate(const GivenScales& given);
// Per slot its scale: the given one, else ActivationScale (graph/quantize.h) of the calibrated
// max |x|, `calibrated_abs_max` holding one per SlotsToCalibrate entry, in that order.
std::vector<float> ResolveSlotScales(const GivenScales& given,
                                     absl::Span<const float> calibrated_abs_max);

// Per step tensor the arena offset (aliases share their root's); lifetimes over step indices (a
// step's inputs, residual included, and its output are live together, so they never share bytes).
struct StepMemory {
  std::vector<int64_t> offsets;
  int64_t arena_bytes = 0;
  int64_t sum_bytes = 0;         // every root tensor without reuse
  std::vector<int> first, last;  // per step tensor (its root's lifetime), for tests and reports
};
absl::StatusOr<StepMemory> PlanStepMemory(const StepProgram& program, int64_t alignment = 256);

// Every weight tensor of `graph` has exactly its byte size in `weights` (NotFound listing the
// missing or mis-sized tensors otherwise).
absl::Status CheckWeights(const Graph& graph, const WeightSet& weights);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_STEP_PROGRAM_H_
