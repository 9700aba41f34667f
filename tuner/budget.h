// File: tuner/budget.h
// Splitting a tuning budget (trials or seconds) over the tasks of a model: every task gets a
// minimum (so small layers are still tuned a little), the rest goes proportionally to FLOPs, since
// the big layers dominate the model's run time and gain most from extra trials.
//
//   std::vector<int64_t> trials = SplitBudget({task_a.flops, task_b.flops}, 2000, 32);
//   std::vector<double> seconds = SplitBudgetSeconds({...}, 3600.0, 60.0);
#ifndef TUNEJIT_TUNER_BUDGET_H_
#define TUNEJIT_TUNER_BUDGET_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tunejit {

// Per-task trial counts that sum exactly to `total`. Each task gets `min_per_task` first; the
// remainder is split proportionally to `flops` (largest-remainder rounding, ties to the bigger
// task). When total < min_per_task * tasks the total is split evenly instead (the first tasks get
// the one-trial remainders). Tasks with non-positive or non-finite FLOPs count as zero FLOPs; when
// every task has zero FLOPs the remainder is split evenly.
std::vector<int64_t> SplitBudget(absl::Span<const double> flops, int64_t total,
                                 int64_t min_per_task);

// The same for a time budget (no rounding).
std::vector<double> SplitBudgetSeconds(absl::Span<const double> flops, double total_seconds,
                                       double min_seconds_per_task);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_BUDGET_H_
