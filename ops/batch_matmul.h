// File: ops/batch_matmul.h
// batch_matmul.cuda (TVM 0.7's tunable batch_matmul schedule, ops/batch_matmul.cc) beyond the
// OpTemplate interface: the same specialization reading y in the graph's [B, K, N] layout, so a
// matmul node's second operand needs no transpose to [B, N, K] first (Relay inserts one).
//
//   TUNEJIT_ASSIGN_OR_RETURN(OpPlan plan, SpecializeBatchMatmul(workload, config, limits, {},
//                                                              MatmulYLayout::kKN));
//   // inputs: x [XB, M, K], y [YB, K, N] (the workload still says [YB, N, K], TVM's key)
#ifndef TUNEJIT_OPS_BATCH_MATMUL_H_
#define TUNEJIT_OPS_BATCH_MATMUL_H_

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/workload.h"
#include "ops/op_template.h"

namespace tunejit {

// y in memory: TVM's [B, N, K] (what FindOpTemplate("batch_matmul.cuda")->Specialize reads), or
// [B, K, N].
enum class MatmulYLayout { kNK, kKN };

// OpTemplate::Specialize of batch_matmul.cuda with y's layout chosen; the same rules and launch.
absl::StatusOr<OpPlan> SpecializeBatchMatmul(const autotvm::Workload& workload,
                                             const autotvm::ConfigEntity& config,
                                             const DeviceLimits& limits, const Epilogue& epilogue,
                                             MatmulYLayout y_layout);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_BATCH_MATMUL_H_
