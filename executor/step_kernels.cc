#include "executor/step_kernels.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "graph/shape_inference.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/tensor_ops.h"

namespace tunejit {
namespace {

int64_t Inner(const std::vector<int64_t>& shape) {
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  return inner;
}

Pool2dParams PoolParams(const StepTensor& in, const NodeAttrs& a) {
  Pool2dParams p;
  p.n = in.shape[0];
  p.c = in.shape[1];
  p.h = in.shape[2];
  p.w = in.shape[3];
  p.kh = a.pool_h;
  p.kw = a.pool_w;
  p.stride_h = a.stride_h;
  p.stride_w = a.stride_w;
  p.pad_top = a.pad_top;
  p.pad_left = a.pad_left;
  p.pad_bottom = a.pad_bottom;
  p.pad_right = a.pad_right;
  p.count_include_pad = a.count_include_pad;
  return p;
}

ElementType ElementOf(DType dtype) {
  return dtype == DType::kF16  ? ElementType::kFloat16
         : dtype == DType::kI8 ? ElementType::kInt8
                               : ElementType::kFloat32;
}

// A convert step: [N, C, inner] between element types and layouts (executor/step_program.h).
absl::StatusOr<PlannedKernel> ConvertStepKernel(const StepTensor& in, const StepTensor& out) {
  ConvertParams p;
  p.n = in.shape[0];
  p.c = in.shape.size() > 1 ? in.shape[1] : 1;
  p.hw = Inner(in.shape);
  p.from = ElementOf(in.dtype);
  p.to = ElementOf(out.dtype);
  p.from_nhwc = in.nhwc;
  p.to_nhwc = out.nhwc;
  return ConvertKernel(p);
}

// A clip step runs a graph clip or a relu that no producer absorbed (clip to [0, inf)).
absl::StatusOr<PlannedKernel> ClipStepKernel(const Node& node, int64_t total, ElementType type) {
  if (node.op == OpKind::kRelu) {
    return ClipKernel(total, 0.0f, std::numeric_limits<float>::infinity(), type);
  }
  return ClipKernel(total, node.attrs.clip_min, node.attrs.clip_max, type);
}

// An int8 step tensor's scale: its slot's, or 1 when the caller has none (a listing of kernels:
// the scales are kernel arguments, not part of the compiled kernel).
absl::StatusOr<float> SlotScale(const StepTensor& t, absl::Span<const float> slot_scales) {
  if (slot_scales.empty()) return 1.0f;
  if (t.scale_slot < 0 || t.scale_slot >= static_cast<int>(slot_scales.size())) {
    return absl::InternalError(absl::StrCat(t.name, ": no scale slot"));
  }
  return slot_scales[t.scale_slot];
}

// The residual add: float (float32 or float16, both operands and the output alike), or int8
// operands (the int8 modes) writing int8 (requantized to the output's scale) or float32.
absl::StatusOr<PlannedKernel> AddStepKernel(const StepProgram& program, const Step& step,
                                            absl::Span<const float> slot_scales) {
  const StepTensor& in = program.tensors[step.input];
  if (in.dtype != DType::kI8) {
    return AddReluKernel(in.NumElements(), step.epilogue.relu, ElementOf(in.dtype));
  }
  const StepTensor& out = program.tensors[step.output];
  TUNEJIT_ASSIGN_OR_RETURN(const float scale_x, SlotScale(in, slot_scales));
  TUNEJIT_ASSIGN_OR_RETURN(const float scale_r,
                           SlotScale(program.tensors[step.residual], slot_scales));
  float scale_out = 1.0f;
  if (out.dtype == DType::kI8) {
    TUNEJIT_ASSIGN_OR_RETURN(scale_out, SlotScale(out, slot_scales));
  }
  return AddInt8Kernel(in.NumElements(), step.epilogue.relu, ElementOf(out.dtype), scale_x, scale_r,
                       scale_out);
}

absl::StatusOr<PlannedKernel> ElementwiseKernel(const Graph& graph, const StepProgram& program,
                                                const Step& step,
                                                absl::Span<const float> slot_scales) {
  const StepTensor& in = program.tensors[step.input];
  const Node& node = graph.nodes()[step.node];
  switch (step.kind) {
    case StepKind::kMaxPool2d:
      if (in.nhwc) return MaxPool2dNhwcKernel(PoolParams(in, node.attrs), ElementOf(in.dtype));
      return MaxPool2dKernel(PoolParams(in, node.attrs), ElementOf(in.dtype));
    case StepKind::kAvgPool2d:
      return AvgPool2dKernel(PoolParams(in, node.attrs));
    case StepKind::kGlobalAvgPool2d:
      if (in.nhwc) {  // [N, H*W, C]: the mean over the middle dim
        return ReduceMeanKernel({in.shape[0], Inner(in.shape), in.shape[1]}, {1},
                                ElementOf(in.dtype));
      }
      return GlobalAvgPoolKernel(in.shape[0] * in.shape[1], Inner(in.shape));
    case StepKind::kAdd:
      return AddStepKernel(program, step, slot_scales);
    case StepKind::kClip:
      return ClipStepKernel(node, in.NumElements(), ElementOf(in.dtype));
    case StepKind::kBiasAdd:
      if (in.nhwc) {  // the channel is the fastest dim
        return BiasReluKernel(in.shape[0] * Inner(in.shape), in.shape[1], 1, step.epilogue.relu,
                              ElementOf(in.dtype));
      }
      return BiasReluKernel(in.shape[0], in.shape[1], Inner(in.shape), step.epilogue.relu,
                            ElementOf(in.dtype));
    case StepKind::kQuantize: {
      TUNEJIT_ASSIGN_OR_RETURN(const float scale,
                               SlotScale(program.tensors[step.output], slot_scales));
      return QuantizeKernel(in.NumElements(), scale);
    }
    case StepKind::kConvert:
      return ConvertStepKernel(in, program.tensors[step.output]);
    default:
      break;
  }
  return absl::InternalError("not an elementwise step");
}

// NCHW dims in NHWC order, and a logical NCHW axis's place there.
std::vector<int64_t> ToNhwc(const std::vector<int64_t>& d) { return {d[0], d[2], d[3], d[1]}; }
int NhwcAxis(int axis) {
  constexpr int kPlace[] = {0, 3, 1, 2};
  return kPlace[axis];
}

// Tensor-op operand `k` as its kernel reads it: shape in memory order (an NHWC step's 4-D
// operands permuted; its weights, right-aligned to 4-D, hold at most one dim above 1, so their
// bytes read the same) and element type (weights float32).
struct Operand {
  std::vector<int64_t> shape;
  ElementType type = ElementType::kFloat32;
};
Operand OperandOf(const Graph& graph, const StepProgram& program, const Step& step, int k) {
  const StepOperand& o = step.operands[k];
  const bool nhwc = program.tensors[step.output].nhwc;
  if (o.tensor >= 0) {
    const StepTensor& t = program.tensors[o.tensor];
    return {nhwc ? ToNhwc(t.shape) : t.shape, ElementOf(t.dtype)};
  }
  std::vector<int64_t> shape = graph.tensor(o.weight).shape;
  if (nhwc) {
    shape.insert(shape.begin(), 4 - shape.size(), 1);
    shape = ToNhwc(shape);
  }
  return {shape, ElementType::kFloat32};
}

absl::StatusOr<std::vector<PlannedKernel>> TensorOpKernels(const Graph& graph,
                                                           const StepProgram& program,
                                                           const Step& step) {
  const Node& node = graph.nodes()[step.node];
  const NodeAttrs& a = node.attrs;
  const StepTensor& out = program.tensors[step.output];
  const ElementType type = ElementOf(out.dtype);
  const Operand first = OperandOf(graph, program, step, 0);
  const std::vector<int64_t>& x = first.shape;
  absl::StatusOr<PlannedKernel> k = absl::InternalError("not a tensor op step");
  switch (step.kind) {
    case StepKind::kConcat: {
      std::vector<TensorDims> shapes;
      for (size_t i = 0; i < step.operands.size(); ++i) {
        shapes.push_back(OperandOf(graph, program, step, static_cast<int>(i)).shape);
      }
      absl::StatusOr<std::vector<PlannedKernel>> kernels =
          ConcatKernels(out.nhwc ? NhwcAxis(a.axis) : a.axis, shapes, type);
      if (kernels.ok()) return kernels;
      k = kernels.status();
      break;
    }
    case StepKind::kUnary:
      k = UnaryKernel(step.unary, out.NumElements(), a.alpha, a.beta, type);
      break;
    case StepKind::kBinary: {
      const Operand second = OperandOf(graph, program, step, 1);
      k = BinaryKernel(a.binary, x, second.shape, {first.type, second.type, type});
      break;
    }
    case StepKind::kTranspose:
      k = TransposeKernel(x, a.perm, type);
      break;
    case StepKind::kSlice:
      k = SliceKernel(x, a.axis, a.start, a.end, a.step, type);
      break;
    case StepKind::kReduceMean:
      k = ReduceMeanKernel(x, a.axes);
      break;
    case StepKind::kLayerNorm: {
      if (step.rms_epsilon > 0) {
        k = RmsNormKernel(out.NumElements() / x.back(), x.back(), step.rms_epsilon, type);
        break;
      }
      int64_t rows = 1;
      for (int d = 0; d < a.axis; ++d) rows *= x[d];
      k = LayerNormKernel(rows, out.NumElements() / rows, a.epsilon, type);
      break;
    }
    case StepKind::kMatMul:
      k = MatMulKernel(x, OperandOf(graph, program, step, 1).shape);
      break;
    case StepKind::kSoftmax:
      k = SoftmaxAxisKernel(x, SoftmaxAxis(a, x.size()));
      break;
    case StepKind::kGather: {  // operand 0 the table [rows, ...] (rank >= 1), 1 the ids
      const int64_t ids = program.tensors[step.operands[1].tensor].NumElements();
      k = GatherKernel(x[0], out.NumElements() / ids, ids);
      break;
    }
    case StepKind::kRope:
      k = RopeKernel(x, type);
      break;
    case StepKind::kAttention:
      // The fallback within sm_90's defaults: it keeps to 48 KiB of shared memory and mma.sync
      // (sm_80+), so it runs on every GPU the tensor-core modes run on.
      k = AttentionStepKernel(step, nullptr, autotvm::Target{}, DeviceLimits{}, nullptr);
      break;
    default:
      break;
  }
  if (!k.ok()) {
    return absl::Status(k.status().code(),
                        absl::StrCat(NodeLabel(step.node, node), ": ", k.status().message()));
  }
  return std::vector<PlannedKernel>{*std::move(k)};
}

}  // namespace

absl::StatusOr<PlannedKernel> AttentionStepKernel(const Step& step,
                                                  const autotvm::HistoryBest* history,
                                                  const autotvm::Target& target,
                                                  const DeviceLimits& limits,
                                                  AttentionChoice* chosen) {
  const autotvm::Workload w = MakeAttentionWorkload(step.attention);
  if (chosen != nullptr) *chosen = {};
  if (history != nullptr) {
    const autotvm::Decision d = history->Query(target, w);
    if (d.best != nullptr) {
      absl::StatusOr<OpPlan> plan =
          SpecializeAttention(w, d.best->record.config, limits, step.attention_layout);
      if (plan.ok()) {
        if (chosen != nullptr) {
          *chosen = {absl::StrCat(d.best->file, ":", d.best->line),
                     d.best->record.config.ToString()};
        }
        return std::move(plan->kernels.front());
      }
    }
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::ConfigEntity config,
                           FindOpTemplate(kAttentionMma)->FallbackConfig(w));
  TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan,
                           SpecializeAttention(w, config, limits, step.attention_layout));
  return std::move(plan.kernels.front());
}

absl::StatusOr<std::vector<PlannedKernel>> UntunedStepKernels(const Graph& graph,
                                                              const StepProgram& program,
                                                              const Step& step,
                                                              absl::Span<const float> slot_scales) {
  if (step.task >= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(step.name, ": a tuned step (its kernels come from kernel choice)"));
  }
  if (!step.operands.empty()) return TensorOpKernels(graph, program, step);
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k, ElementwiseKernel(graph, program, step, slot_scales));
  return std::vector<PlannedKernel>{std::move(k)};
}

}  // namespace tunejit
