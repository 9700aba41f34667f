// File: tuner/tune_plan.h
// Deciding what one `tunejit tune` invocation tunes: parsing the budget ("5m", "90s", "1h30m"),
// the shard ("i/n") and splitting a model's tasks into n disjoint shards for job arrays.
//
// Sharding is deterministic and independent of the order tasks were found in: tasks are sorted by
// (FLOPs x uses, descending; workload key), then each goes to the shard with the least work so far
// (ties: lowest shard number), so shards get about equal FLOPs. Every task is in exactly one shard;
// the same task list and n always give the same partition, on any machine.
//
//   TUNEJIT_ASSIGN_OR_RETURN(double seconds, ParseDuration("5m"));        // 300
//   TUNEJIT_ASSIGN_OR_RETURN(Shard shard, ParseShard("2/4"));             // {2, 4}
//   std::vector<size_t> mine = ShardTasks(keys, weights, shard);          // indices into keys
#ifndef TUNEJIT_TUNER_TUNE_PLAN_H_
#define TUNEJIT_TUNER_TUNE_PLAN_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace tunejit {

// Seconds from "<number><unit>..." with units h, m, s (e.g. "90s", "5m", "1h", "1h30m", "2.5m"),
// or a plain number of seconds. InvalidArgument for anything else, zero or negative.
absl::StatusOr<double> ParseDuration(std::string_view text);

struct Shard {
  int index = 0;  // 0-based, < count
  int count = 1;
};

// "i/n" with 0 <= i < n (e.g. $SLURM_ARRAY_TASK_ID/$N for an array 0..N-1).
absl::StatusOr<Shard> ParseShard(std::string_view text);

// The indices (ascending) of the tasks in `shard`. keys[i] identifies task i (its workload key),
// weights[i] its work (FLOPs x uses; bad values count 0). keys and weights have the same size.
std::vector<size_t> ShardTasks(absl::Span<const std::string> keys, absl::Span<const double> weights,
                               const Shard& shard);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_TUNE_PLAN_H_
