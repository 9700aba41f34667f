// File: executor/kernel_choice.h
// The executor's kernel choice for one conv2d / dense node (executor/executor.h), on the host: the
// implementations that have a record in the log, fastest record first (autotvm/dispatch.h
// ChooseImplementation), each specialized with its record's config; then one fallback: the
// highest-priority implementation whose template accepts its FallbackConfig. A record whose config
// the template rejects (Specialize fails: TVM's INSTANTIATION_ERROR) is skipped with the reason.
// The executor compiles the first candidate and moves on to the next when a verification against
// the reference kernels fails. A pooled conv (NodeTask::pool) whose task has no record takes the
// records of the same workload under conv2d_nhwc_wgmma.cuda (the same knobs), so logs tuned before
// the pooled task existed keep their configs.
//
//   TUNEJIT_ASSIGN_OR_RETURN(KernelChoice c,
//                            ChooseKernel(task, &history, target, limits, epilogue));
//   const KernelCandidate& best = c.candidates.front();  // best.plan, best.fallback
#ifndef TUNEJIT_EXECUTOR_KERNEL_CHOICE_H_
#define TUNEJIT_EXECUTOR_KERNEL_CHOICE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/dispatch.h"
#include "autotvm/target.h"
#include "executor/build_plan.h"
#include "executor/node_tasks.h"
#include "ops/op_template.h"

namespace tunejit {

struct KernelCandidate {
  int implementation = -1;  // index into NodeTask::implementations
  std::string task_name;
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  bool fallback = false;
  const autotvm::LoadedRecord* record = nullptr;  // owned by the HistoryBest; null for fallback
  std::string record_label;                       // "seed.log:12" ("" for the fallback)
  double record_cost = 0;                         // the record's mean cost, seconds
  OpPlan plan;
};

struct KernelChoice {
  std::vector<KernelCandidate> candidates;  // records by cost, then the fallback (never empty)
  std::vector<std::string> reasons;         // dispatch's reasons, then every skip and why
};

// `history` may be null (no log: the fallback only). FailedPrecondition when no implementation can
// be specialized at all (every reason listed).
absl::StatusOr<KernelChoice> ChooseKernel(const NodeTask& task, const autotvm::HistoryBest* history,
                                          const autotvm::Target& target, const DeviceLimits& limits,
                                          const Epilogue& epilogue);

// The choice a saved build plan made for this step (executor/build_plan.h): one candidate, the
// implementation named `planned.task_name` with the planned record's config or its template's
// fallback. FailedPrecondition naming the difference when the task has no such implementation,
// its workload is not the planned one, or the config no longer specializes.
absl::StatusOr<KernelChoice> KernelFromPlan(const NodeTask& task, const PlannedStep& planned,
                                            const DeviceLimits& limits, const Epilogue& epilogue);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_KERNEL_CHOICE_H_
