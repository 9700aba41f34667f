#include "tuner/task.h"

#include "common/status_macros.h"
#include "ops/attention.h"
#include "ops/op_template.h"

namespace tunejit {

absl::StatusOr<double> WorkloadFlops(const autotvm::Workload& workload) {
  if (absl::StatusOr<autotvm::Conv2dParams> conv = autotvm::ParseConv2dWorkload(workload);
      conv.ok()) {
    return conv->Flops();
  }
  if (workload.task_name == kAttentionMma) {
    TUNEJIT_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionWorkload(workload));
    return p.Flops();
  }
  if (workload.task_name == autotvm::kBatchMatmul) {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams bmm,
                             autotvm::ParseBatchMatmulWorkload(workload));
    return bmm.Flops();
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams dense, autotvm::ParseDenseWorkload(workload));
  return dense.Flops();
}

absl::StatusOr<Task> MakeTask(const autotvm::Workload& workload, const autotvm::Target& target) {
  Task task;
  task.workload = workload;
  task.target = target;
  TUNEJIT_ASSIGN_OR_RETURN(task.space, BuildConfigSpace(workload, target));
  TUNEJIT_ASSIGN_OR_RETURN(task.flops, WorkloadFlops(workload));
  return task;
}

}  // namespace tunejit
