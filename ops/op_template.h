// File: ops/op_template.h
// The op registry: one OpTemplate per AutoTVM task name (and per tunejit-only task name later, e.g.
// the Hopper wgmma family). The executor and the tuner both read this one table (no parallel
// switches). An OpTemplate turns (workload, config, device limits, epilogue) into an OpPlan: the
// kernels to compile and launch, with their arguments described symbolically so the executor can
// bind real pointers once at build time and the tuner can bind scratch buffers.
//
// A config that cannot run (too many threads, too much shared memory, a split that does not divide
// where the template needs it, dense_large_batch's tile_x[2] != tile_y[2], ...) is rejected by
// Specialize with an InvalidArgument status whose message gives the reason: TVM's
// INSTANTIATION_ERROR (error_no 1).
//
//   const OpTemplate* op = FindOpTemplate("dense_large_batch.cuda");
//   TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan, op->Specialize(workload, config, limits, epilogue));
//   for (const PlannedKernel& k : plan.kernels) compiler.Compile(k.spec, arch) ...
//   (ops/plan_runner.h compiles, loads, binds and launches a whole plan.)
//
// Tensor conventions of the conv/dense templates (the executor and the tuner bind by these):
//   input 0  data: NCHW (conv) / [M, K] (dense) / x [B, M, K] (batch_matmul)
//   input 1  weight as the user gives it: OIHW ([C, multiplier, KH, KW] for depthwise) / [N, K]
//            / y [B, N, K] (batch_matmul)
//   input 2  bias, float32 [CO] ([N] for dense and batch_matmul): read only when epilogue.bias
//   input 3  per-channel scale, float32 [CO]: read only when output != kAccumulator ([CO + 3]
//            with an int8 residual: Epilogue::residual)
//   input 4  the residual, with Epilogue::residual
//   output 0 NCHW / [M, N] / [B, M, N]
// The slots are fixed: with a scale but no bias, input 2 is not read (bind anything, e.g. 0).
// Epilogue value = acc (* scale[c] if scale) (+ bias[c] if bias), then relu if set (then the
// activation, on the templates that take one: Epilogue); stored as
//   kAccumulator    -> the accumulator type: float for fp32 ops, int32 for int8 ops (an int32
//                      output takes relu but no bias: templates reject bias there),
//   kFloat32        -> float,
//   kInt8Requantize -> int8, round to nearest even (__float2int_rn), saturated to [-128, 127].
// kernel_sources/common.cuh implements it (EpilogueOp<EpilogueCode(e), Acc>), shared by all ops.
// Templates needing weight transforms/packing do them in Phase::kPrepare kernels into persistent
// workspace buffers.
//
// Tuning knobs become template arguments (V/T/I factors, reduction splits, unroll step) together
// with shape constants that help unrolling (KH, KW, strides, dilation); runtime kernel arguments
// carry the rest. auto_unroll_max_step = S is approximated as TVM's UnrollLoop rule on the loops
// inside a thread: a loop of trip count T whose body has B statements (after unrolling what it
// contains) gets `#pragma unroll` when T * B <= S, else `#pragma unroll 1`; loops indexing
// per-thread register arrays are always unrolled. unroll_explicit only decides, in TVM, whether
// the IR or nvcc does that unrolling: CUDA C has one form, so it does not change our kernels.
#ifndef TUNEJIT_OPS_OP_TEMPLATE_H_
#define TUNEJIT_OPS_OP_TEMPLATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/config_space.h"
#include "autotvm/dispatch.h"
#include "autotvm/record.h"
#include "autotvm/record_check.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"
#include "jit/arch.h"
#include "jit/device.h"
#include "jit/kernel_spec.h"
#include "jit/tensor_map.h"
#include "ops/numeric_mode.h"

namespace tunejit {

// What the kernels may use. From the Device's properties, or defaults for a named architecture
// (`tunejit warm --arch sm_90` with no GPU).
struct DeviceLimits {
  GpuArch arch{9, 0, false};
  int max_threads_per_block = 1024;
  int max_block_dim[3] = {1024, 1024, 64};
  int max_grid_dim[3] = {2147483647, 65535, 65535};
  int shared_bytes_per_block = 48 * 1024;
  int shared_bytes_per_block_optin = 227 * 1024;
  int regs_per_block = 65536;
  int sm_count = 132;
  // tunejit's own validity rules, which TVM's builds did not have (register pressure: a kernel
  // that would spill, or that ptxas takes minutes over: SearchRule in ops/plan_util.h). On, they
  // steer the tuner's search; the executor turns them off for a record that was measured
  // successfully (whoever measured it built and ran it), which is then compiled and verified like
  // any other, with a warning.
  bool search_rules = true;

  // Defaults for a named architecture (no GPU needed). sm_90 and newer get H100/H200-like values
  // (1024 threads, 48 KiB default / 227 KiB opt-in shared memory, 64K registers, 132 SMs); older
  // ones their generation's limits. For `tunejit warm --arch` without a GPU.
  static DeviceLimits ForArch(const GpuArch& arch);
  // The limits of a real device.
  static DeviceLimits FromProperties(const DeviceProperties& properties);
};

// Work fused into the op's output write: y = act(conv + bias), optionally requantized to int8 with
// a per-output-channel scale, as the conv/dense kernels' epilogue (or a separate kernel when the
// template cannot fuse it).
//
// The order is: scale, bias, relu (the residual add, then relu, where there is a residual), then
// `activation`. The activation is the element-wise step the executor would otherwise run after
// the op (a clip step, or a unary step on tensor_ops.cu), computed exactly as that step does:
// in float on the value the op would have stored, so that fusing it changes no bit. For a
// float16 output that is the value rounded to float16 first (the separate step reads the op's
// float16 output), then the activation in float, then rounded again; for a float32 output the
// float value. Only the fp16 tensor-core templates that fuse it accept one
// (OpTemplate::takes_activation: conv2d_nhwc_wgmma.cuda, depthwise_conv2d_nhwc.cuda,
// conv2d_nchw_stem_mma.cuda, conv2d_nchw_patchify_wgmma.cuda, dense_wgmma.cuda; float16 or float32
// outputs, no pool); every other template, and int8 outputs, reject it (plan_util.h
// CheckActivation).
struct Epilogue {
  bool bias = false;  // per output channel, in the op's accumulator type (float or int32->float)
  bool relu = false;
  enum class Output { kAccumulator, kFloat32, kInt8Requantize } output = Output::kAccumulator;
  // Op input 4, a tensor shaped like the output in the output's type, added before the ReLU:
  // ResNet's skip connection read in the conv's epilogue, or a transformer's residual stream in a
  // dense layer's. float16 into a float16 output; or int8 into a kInt8Requantize output of int8
  // operands, where the value is requantized first (as the conv alone wrote it), the sum taken
  // as the int8 add does (dequantized with each tensor's scale), then the ReLU, requantized to
  // the sum's scale: the scale input then holds CO + 3 floats, the channels' scales followed by
  // the conv output's, the residual's and the sum's (kernel_sources/common.cuh
  // Int8ResidualScales). Only conv2d_nhwc_wgmma.cuda (no pool after it) and dense_wgmma.cuda
  // (no split-K) take it; the executor fuses an add into no other template.
  bool residual = false;
  // The activation after everything above (kernel_sources/common.cuh Act):
  //   kClip       min(max(x, clip_lo), clip_hi), NaN passing through (ReLU6 is [0, 6]);
  //   kSilu       x * sigmoid(x) = x / (1 + exp(-x));
  //   kHardSwish  x * min(max(x / 6 + 1 / 2, 0), 1);
  //   kGelu       x * (1 + erf(x / sqrt(2))) / 2 (the exact GELU);
  //   kGeluTanh   x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2 (GPT-2's gelu_new).
  // The bounds are compile-time constants of the kernel (their float bits in its name).
  enum class Activation {
    kNone,
    kClip,
    kSilu,
    kHardSwish,
    kGelu,
    kGeluTanh
  } activation = Activation::kNone;
  float clip_lo = 0.0f, clip_hi = 0.0f;  // kClip only
  friend bool operator==(const Epilogue&, const Epilogue&) = default;
};

// "clip", "silu", "hard_swish", "gelu", "gelu_tanh" ("none"): as step names and messages spell
// them.
std::string_view ActivationName(Epilogue::Activation activation);

// The int template argument kernels take for an epilogue (kernel_sources/common.cuh): bit 0 bias,
// bit 1 relu, bits 2-3 the output kind (0 accumulator, 1 float32, 2 int8 requantize), bit 4 the
// residual (kEpiResidual).
int EpilogueCode(const Epilogue& epilogue);
// The same epilogue by name, as the templates that take it as a type read it (common.cuh Epi):
// "tunejit::Epi<true, true, tunejit::EpiOut::kInt8>", with a residual
// "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator, true>", with an activation its
// ActivationTypeName last: "tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false,
// tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>" (EpilogueCode has neither a residual
// nor an activation: the templates that take a code read none).
std::string EpilogueTypeName(const Epilogue& epilogue);
// The activation as common.cuh's type: "tunejit::Act<tunejit::ActKind::kSilu>"; a clip with its
// bounds' float bits as ints, "tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>" ([0, 6]);
// "tunejit::Act<>" for none. Templates that take the activation apart from an Epi type (the stem,
// dense_wgmma, the references) append it to their name only when there is one, so kernels
// without one keep their names (and cache keys).
std::string ActivationTypeName(const Epilogue& epilogue);

// Symbolic kernel argument, bound by the executor/tuner to a real value.
struct KernelArg {
  enum class Kind {
    kInput,   // op input tensor `index` (0 data, 1 weight, then bias, scales as the op documents)
    kOutput,  // op output tensor `index`
    kWorkspace,  // plan workspace buffer `index`
    kInt32,      // immediate
    kInt64,
    kFloat32,
    kTensorMap,  // a TMA descriptor (128 bytes, by value) of OpPlan::tensor_maps[index]
    // `int64s` by value, as a struct of that many int64 (kernel_sources/tensor_ops.cu Dims).
    kInt64Array,
  } kind;
  int64_t index_or_int = 0;
  float f32 = 0;
  std::vector<int64_t> int64s = {};
};

// A TMA view of one op tensor (KernelArg kInput, kOutput or kWorkspace with its index): encoded
// when tensors are bound, since the descriptor holds the address.
struct PlannedTensorMap {
  KernelArg tensor;
  TensorMapDesc desc;
};

struct PlannedKernel {
  std::string label;  // "input_transform", "bgemm", ... for reports
  KernelSpec spec;
  LaunchShape shape;
  std::vector<KernelArg> args;
  // kPrepare kernels run once when weights are bound (weight transforms / packing); kRun ones every
  // run.
  enum class Phase { kPrepare, kRun } phase = Phase::kRun;
};

struct OpPlan {
  std::vector<PlannedKernel> kernels;    // in launch order
  std::vector<int64_t> workspace_bytes;  // per workspace buffer
  // Workspace buffers filled by kPrepare kernels and read by every run (must not be reused by
  // others).
  std::vector<bool> workspace_persistent;
  // The TMA descriptors the kernels take (KernelArg::Kind::kTensorMap indexes this).
  std::vector<PlannedTensorMap> tensor_maps;
  // Things the template did that a user should know (e.g. "tile_ry/tile_rx labels swapped"), for
  // the executor's and tools' logs. Empty normally.
  std::vector<std::string> notes;
};

// A graph node an op template may implement: its kind and geometry (float32 dtypes, as the graph
// has them), at the numeric mode asked for.
struct OpRequest {
  enum class Op {
    kConv2d,
    // A conv (with its bias and relu) whose value only a 2x2 max pool of stride 2 reads, as one
    // step: the pool runs in the conv's kernel.
    kConv2dMaxPool,
    kDense,
    // A batched matmul x [XB, M, K] by y [YB, N, K] (TVM's batch_matmul; the graph's [B, K, N]
    // operand is y transposed).
    kBatchMatMul,
  } op = Op::kConv2d;
  NumericMode mode = NumericMode::kFp32;
  autotvm::Conv2dParams conv;               // kConv2d, kConv2dMaxPool
  autotvm::DenseParams dense;               // kDense
  autotvm::BatchMatmulParams batch_matmul;  // kBatchMatMul
  // Tensor-core modes: the output is float16 (a later conv or dense reads it), else float32.
  bool half_output = false;
};

// How an implementation takes its data and gives its output; the executor converts around it.
struct OperandForms {
  bool nhwc = false;  // a conv's data and output are NHWC (else NCHW); dense: [M, K] either way
  // The data is the float32 NCHW activation as the graph has it, whatever the mode (the stem).
  bool float_nchw_data = false;
  // A batch matmul's y is the graph's [B, K, N] operand (ops/batch_matmul.h MatmulYLayout::kKN:
  // Specialize with SpecializeBatchMatmul), not TVM's [B, N, K] that the workload names.
  bool y_kn = false;
  friend bool operator==(const OperandForms&, const OperandForms&) = default;
};

// What a template offers for a node: the workload it takes (with Relay's priority level, which
// decides among a node's implementations when the log has no record) and its operand forms.
// Offers of rank 1 are taken only when no template offers one of rank 0 (the stem template, when
// the general tensor-core conv cannot take a node).
struct OpOffer {
  autotvm::Implementation implementation;
  OperandForms forms;
  int rank = 0;
};

class OpTemplate {
 public:
  virtual ~OpTemplate() = default;
  virtual std::string_view task_name() const = 0;
  // Whether this template can implement the workload at all (dtype, stride, layout, groups...).
  virtual absl::Status CanImplement(const autotvm::Workload& workload) const = 0;
  virtual absl::StatusOr<OpPlan> Specialize(const autotvm::Workload& workload,
                                            const autotvm::ConfigEntity& config,
                                            const DeviceLimits& limits,
                                            const Epilogue& epilogue) const = 0;
  // The config used when the log has no record (TVM's fallback rules or better).
  virtual absl::StatusOr<autotvm::ConfigEntity> FallbackConfig(
      const autotvm::Workload& workload) const = 0;
  // The knob space of the workload on `target`, in definition order (the order is the index's
  // digit order, autotvm/config_space.h). For TVM's task names exactly TVM 0.7.dev1's space
  // (docs/tvm-templates.md), so that TVM reads our records and we read its; InvalidArgument when
  // the workload has no space (e.g. winograd with KH != KW).
  virtual absl::StatusOr<autotvm::ConfigSpace> ConfigSpace(const autotvm::Workload& workload,
                                                           const autotvm::Target& target) const = 0;
  // What the template implements: its offer for the node at the request's mode, or nullopt when
  // the node is another op, another mode, or beyond the template's limits.
  virtual std::optional<OpOffer> Implement(const OpRequest& request) const = 0;
  // Other task names whose records index this template's space (TVM's
  // conv2d_nchw_winograd_without_weight_transform.cuda shares the winograd knobs).
  virtual std::vector<std::string_view> space_aliases() const { return {}; }
  // Whether Specialize takes an Epilogue::activation (into a float16 or float32 output): the
  // executor fuses a clip / silu / hard_swish into a node's step only when every template that
  // implements the node does. The others reject one (plan_util.h CheckActivation).
  virtual bool takes_activation() const { return false; }
};

// All registered templates, and lookup by task name (nullptr if none).
std::vector<const OpTemplate*> AllOpTemplates();
const OpTemplate* FindOpTemplate(std::string_view task_name);

// The offers of every registered template for `request`, of the best rank offered, in registry
// order (Relay's order among a node's implementations). Empty when none implements it.
std::vector<OpOffer> OffersFor(const OpRequest& request);

// Whether a registered template defines the space of `task_name` (its own or an alias).
bool HasConfigSpace(std::string_view task_name);
// The space of the workload's task on `target` (OpTemplate::ConfigSpace of the template that owns
// it); Unimplemented naming the task when no template does.
absl::StatusOr<autotvm::ConfigSpace> BuildConfigSpace(const autotvm::Workload& workload,
                                                      const autotvm::Target& target);
// autotvm::CheckRecord against the space BuildConfigSpace gives the record's workload and target.
autotvm::RecordCheck CheckRecord(const autotvm::Record& record);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_OP_TEMPLATE_H_
