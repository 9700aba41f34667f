// File: tuner/task.h
// One tuning task: a workload on a target, with its AutoTVM config space and its FLOP count (for
// GFLOP/s reports and the budget split). The measurer, the search strategies and TuneTask all
// take a Task.
//
//   TUNEJIT_ASSIGN_OR_RETURN(autotvm::Target target, autotvm::ParseTarget("cuda"));
//   TUNEJIT_ASSIGN_OR_RETURN(Task task, MakeTask(workload, target));
//   task.space.size();  task.flops;
#ifndef TUNEJIT_TUNER_TASK_H_
#define TUNEJIT_TUNER_TASK_H_

#include "absl/status/statusor.h"
#include "autotvm/config_space.h"
#include "autotvm/target.h"
#include "autotvm/workload.h"

namespace tunejit {

struct Task {
  autotvm::Workload workload;
  autotvm::Target target;
  autotvm::ConfigSpace space;
  double flops = 0;  // of the direct computation (winograd counts the same FLOPs, as TVM does)
};

// Builds the config space (BuildConfigSpace) and counts FLOPs of a conv2d, dense or batch_matmul
// workload. InvalidArgument / Unimplemented for workloads the autotvm layer does not know.
absl::StatusOr<Task> MakeTask(const autotvm::Workload& workload, const autotvm::Target& target);

// FLOPs of a conv2d, dense or batch_matmul workload.
absl::StatusOr<double> WorkloadFlops(const autotvm::Workload& workload);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_TASK_H_
