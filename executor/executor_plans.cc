// Per-step plans: kernel choice for conv / dense (executor/kernel_choice.h), the untuned kernels
// (executor/step_kernels.h) for the rest, and the LayerInfo of every step.
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "executor/step_kernels.h"
#include "ops/attention.h"

namespace tunejit {
namespace {

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
  for (const StepOperand& o : step.operands) {
    if (o.weight >= 0) info.bytes_moved += state.graph.tensor(o.weight).Bytes();
    if (o.tensor >= 0 && o.tensor != step.input) info.bytes_moved += p.tensors[o.tensor].Bytes();
  }
  if (step.weight >= 0) {
    const int64_t elements = state.graph.tensor(step.weight).NumElements();
    const bool fp16 = step.task >= 0 && p.tasks[step.task].half();
    info.bytes_moved += elements * (step.int8 ? 1 : fp16 ? 2 : 4);
  }
  if (step.task >= 0) info.flops = p.tasks[step.task].flops;
  if (step.kind == StepKind::kAttention) info.flops = step.attention.Flops();
  return info;
}

int RunKernels(const OpPlan& plan) {
  int n = 0;
  for (const PlannedKernel& k : plan.kernels) n += k.phase == PlannedKernel::Phase::kRun ? 1 : 0;
  return n;
}

// A fused attention step: the log's record for its workload (attention_mma.cuda) when there is
// one, else the template's fallback. A saved plan lists its kernels (CheckPlannedKernels), which
// the same log gives again.
absl::Status PlanAttentionStep(Executor::State& state, int i) {
  const Step& step = state.program.steps[i];
  LayerInfo& info = state.layers[i];
  AttentionChoice chosen;
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel kernel,
                           AttentionStepKernel(step, state.options.history, state.options.target,
                                               state.limits, &chosen));
  info.task_name = kAttentionMma;
  info.fallback = chosen.record.empty();
  info.record = chosen.record;
  info.config = info.fallback ? "fallback" : chosen.config;
  info.kernels = 1;
  state.steps[i].plan.kernels = {std::move(kernel)};
  return absl::OkStatus();
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

absl::Status PlanSteps(Executor::State& state, const BuildPlan* plan) {
  const StepProgram& p = state.program;
  state.steps.clear();
  state.steps.resize(p.steps.size());
  state.layers.clear();
  int tuned = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& step = p.steps[i];
    state.layers.push_back(BaseInfo(state, step));
    StepRuntime& rt = state.steps[i];
    if (step.kind == StepKind::kAttention) {
      TUNEJIT_RETURN_IF_ERROR(PlanAttentionStep(state, static_cast<int>(i)));
      continue;
    }
    if (step.task < 0) {
      TUNEJIT_ASSIGN_OR_RETURN(rt.plan.kernels,
                               UntunedStepKernels(state.graph, p, step, state.scales));
      state.layers.back().kernels = static_cast<int>(rt.plan.kernels.size());
      continue;
    }
    ++tuned;
    TUNEJIT_ASSIGN_OR_RETURN(
        KernelChoice choice,
        plan != nullptr
            ? KernelFromPlan(p.tasks[step.task], plan->steps[i], state.limits, step.epilogue)
            : ChooseKernel(p.tasks[step.task], state.options.history, state.options.target,
                           state.limits, step.epilogue));
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
  const bool has_log =
      plan == nullptr && state.options.history != nullptr && state.options.history->size() > 0;
  if (has_log && tuned > 0 && state.stats.fallback_layers == tuned) {
    state.Warn("the log has no record for any layer of this model: is it for another model/batch?");
  }
  return absl::OkStatus();
}

}  // namespace tunejit
