// File: tuner/budget.h
// Splitting a tuning budget (trials or seconds) over the tasks of a model. A trial budget: every
// task gets a minimum (so small layers are still tuned a little), the rest goes proportionally to
// FLOPs, since the big layers dominate the model's run time and gain most from extra trials.
// A time budget (tunejit tune --budget) is spent in two passes (tuner/tune_model.h): a survey
// batch per task, then the rest of the time by GainWeights, handed out as tasks start
// (ShareOfRemaining) so that overruns of early tasks come out of the later tasks' shares.
//
//   std::vector<int64_t> trials = SplitBudget({task_a.flops, task_b.flops}, 2000, 32);
//   std::vector<double> w = GainWeights(labels, best_seconds_from_the_survey);
#ifndef TUNEJIT_TUNER_BUDGET_H_
#define TUNEJIT_TUNER_BUDGET_H_

#include <cstdint>
#include <string>
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

// Weights for the time left after the survey: what the network spends in a task's nodes, seen from
// the survey's best times. Tasks with the same `label` implement the same nodes (NCHWc and
// winograd for one conv); the best of them has weight nodes * best, where nodes is the number of
// comma-separated names in the label, and a slower alternative much less (nodes * best *
// (best / its own best)^kBehindExponent): it still gets time, since more trials may overtake, but
// little unless it is close, and none when it is more than kMaxBehindBest times slower. A task
// with no valid time (best <= 0 or not finite) gets 0.
//
// Why so steep: in a 5-minute VGG-16 int8 run (data/vgg16-int8-h200-5min.log) no winograd
// alternative overtook its NCHWc task. The alternatives 1.2-1.9x behind gained 0-1.4% over their
// trials while the NCHWc tasks still gained 6-11% in the second half of theirs, yet they took 41%
// of the trials under the old linear weight and 1.5x cut.
inline constexpr double kMaxBehindBest = 1.25;
inline constexpr double kBehindExponent = 3;
std::vector<double> GainWeights(absl::Span<const std::string> labels,
                                absl::Span<const double> best_seconds);

// Seconds for a task starting now: its weight's share of what `slots` workers can still do before
// the deadline (remaining seconds each), among the tasks not started yet (`pending_weight`, this
// one's included), and never past the deadline.
double ShareOfRemaining(double remaining_seconds, int slots, double weight, double pending_weight);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_BUDGET_H_
