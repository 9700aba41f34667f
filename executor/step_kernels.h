// File: executor/step_kernels.h
// The kernels of the steps that are not tuned (executor/step_program.h): pools, clips, adds,
// converts and quantizes (ops/elementwise.h) and the general tensor ops (ops/tensor_ops.h). The
// executor plans them at build time; `tunejit warm --model` lists them with the tuned layers', so a
// fleet's cache holds every kernel a model launches.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<PlannedKernel> k,
//                            UntunedStepKernels(graph, program, program.steps[i], scales));
#ifndef TUNEJIT_EXECUTOR_STEP_KERNELS_H_
#define TUNEJIT_EXECUTOR_STEP_KERNELS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "autotvm/dispatch.h"
#include "autotvm/target.h"
#include "executor/step_program.h"
#include "graph/graph.h"
#include "ops/op_template.h"

namespace tunejit {

// The launches of `step` (one, or one per input of a concat). `slot_scales`: the scale of each of
// the program's scale slots, which the int8 steps (quantize, the int8 residual add) take as kernel
// arguments, not as part of the compiled kernel; empty: every scale 1 (listing the kernels).
// InvalidArgument for a tuned step; a shape the kernels cannot take is an error naming the node.
absl::StatusOr<std::vector<PlannedKernel>> UntunedStepKernels(const Graph& graph,
                                                              const StepProgram& program,
                                                              const Step& step,
                                                              absl::Span<const float> slot_scales);

// An attention step's kernel (attention_mma.cuda, the step's strides and scale): the config of
// the log's best record for its workload when `history` has one the template accepts on
// `limits`, else the template's fallback config. `chosen` (if not null) gets the record's
// file:line and config, both "" for the fallback. UntunedStepKernels plans the fallback.
struct AttentionChoice {
  std::string record, config;
};
absl::StatusOr<PlannedKernel> AttentionStepKernel(const Step& step,
                                                  const autotvm::HistoryBest* history,
                                                  const autotvm::Target& target,
                                                  const DeviceLimits& limits,
                                                  AttentionChoice* chosen);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_STEP_KERNELS_H_
