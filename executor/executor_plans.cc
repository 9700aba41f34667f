// Per-step plans: kernel choice for conv / dense (executor/kernel_choice.h), the elementwise
// kernels (ops/elementwise.h) for the rest, and the LayerInfo of every step.
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "ops/elementwise.h"

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
absl::StatusOr<PlannedKernel> ClipStepKernel(const Node& node, int64_t total) {
  if (node.op == OpKind::kRelu) {
    return ClipKernel(total, 0.0f, std::numeric_limits<float>::infinity());
  }
  return ClipKernel(total, node.attrs.clip_min, node.attrs.clip_max);
}

absl::StatusOr<PlannedKernel> ElementwiseKernel(const Executor::State& state, const Step& step) {
  const StepTensor& in = state.program.tensors[step.input];
  const Node& node = state.graph.nodes()[step.node];
  switch (step.kind) {
    case StepKind::kMaxPool2d:
      if (in.nhwc) return MaxPool2dNhwcKernel(PoolParams(in, node.attrs), ElementOf(in.dtype));
      return MaxPool2dKernel(PoolParams(in, node.attrs), ElementOf(in.dtype));
    case StepKind::kAvgPool2d:
      return AvgPool2dKernel(PoolParams(in, node.attrs));
    case StepKind::kGlobalAvgPool2d:
      return GlobalAvgPoolKernel(in.shape[0] * in.shape[1], Inner(in.shape));
    case StepKind::kAdd:
      return AddReluKernel(in.NumElements(), step.epilogue.relu);
    case StepKind::kClip:
      return ClipStepKernel(node, in.NumElements());
    case StepKind::kSoftmax:
      return SoftmaxKernel(in.shape[0], in.NumElements() / in.shape[0]);
    case StepKind::kBiasAdd:
      return BiasReluKernel(in.shape[0], in.shape[1], Inner(in.shape), step.epilogue.relu);
    case StepKind::kQuantize:
      return QuantizeKernel(in.NumElements(),
                            state.scales[state.program.tensors[step.output].scale_slot]);
    case StepKind::kConvert:
      return ConvertStepKernel(in, state.program.tensors[step.output]);
    case StepKind::kConv2d:
    case StepKind::kDense:
      break;
  }
  return absl::InternalError("not an elementwise step");
}

LayerInfo BaseInfo(const Executor::State& state, const Step& step) {
  const StepProgram& p = state.program;
  LayerInfo info;
  info.name = step.name;
  info.op = std::string(StepKindName(step.kind));
  const DType in = p.tensors[step.input].dtype;
  info.dtype = in == DType::kI8 ? "int8" : in == DType::kF16 ? "float16" : "float32";
  info.fused = step.fused;
  info.bytes_moved = p.tensors[step.input].Bytes() + p.tensors[step.output].Bytes();
  if (step.residual >= 0) info.bytes_moved += p.tensors[step.residual].Bytes();
  if (step.weight >= 0) {
    const int64_t elements = state.graph.tensor(step.weight).NumElements();
    const bool fp16 = step.task >= 0 && p.tasks[step.task].half();
    info.bytes_moved += elements * (step.int8 ? 1 : fp16 ? 2 : 4);
  }
  if (step.task >= 0) info.flops = p.tasks[step.task].flops;
  return info;
}

int RunKernels(const OpPlan& plan) {
  int n = 0;
  for (const PlannedKernel& k : plan.kernels) n += k.phase == PlannedKernel::Phase::kRun ? 1 : 0;
  return n;
}

}  // namespace

void UseCandidate(Executor::State& state, int i) {
  StepRuntime& rt = state.steps[i];
  LayerInfo& info = state.layers[i];
  const KernelCandidate& c = rt.choice->candidates[rt.candidate];
  rt.plan = c.plan;
  info.task_name = c.task_name;
  info.fallback = c.fallback;
  info.record = c.record_label;
  info.config = c.fallback ? "fallback" : c.config.ToString();
  info.record_cost = c.record_cost;
  info.kernels = RunKernels(rt.plan);
}

absl::Status PlanSteps(Executor::State& state) {
  const StepProgram& p = state.program;
  state.steps.clear();
  state.steps.resize(p.steps.size());
  state.layers.clear();
  int tuned = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& step = p.steps[i];
    state.layers.push_back(BaseInfo(state, step));
    StepRuntime& rt = state.steps[i];
    if (step.task < 0) {
      TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k, ElementwiseKernel(state, step));
      rt.plan.kernels.push_back(std::move(k));
      state.layers.back().kernels = 1;
      continue;
    }
    ++tuned;
    TUNEJIT_ASSIGN_OR_RETURN(KernelChoice choice,
                             ChooseKernel(p.tasks[step.task], state.options.history,
                                          state.options.target, state.limits, step.epilogue));
    state.layers.back().reasons = choice.reasons;
    rt.choice = std::move(choice);
    UseCandidate(state, static_cast<int>(i));
    for (const std::string& note : rt.plan.notes) state.Warn(absl::StrCat(step.name, ": ", note));
    if (state.layers.back().fallback) {
      ++state.stats.fallback_layers;
      state.Warn(absl::StrCat(step.name, ": no usable record, fallback config of ",
                              state.layers.back().task_name));
    }
  }
  const bool has_log = state.options.history != nullptr && state.options.history->size() > 0;
  if (has_log && tuned > 0 && state.stats.fallback_layers == tuned) {
    state.Warn("the log has no record for any layer of this model: is it for another model/batch?");
  }
  return absl::OkStatus();
}

}  // namespace tunejit
