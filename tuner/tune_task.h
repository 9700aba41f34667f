// File: tuner/tune_task.h
// The tuning loop of one task: ask the strategy for a batch of config indices, measure each,
// append each record to the log (TVM's 0.2 format, one whole line per append) as soon as it is
// measured, report the batch back to the strategy, track the best, print a progress line per batch.
// Every candidate is compiled by its own job (Measurer::CompileJob) on a CompilePool, and batch
// k+1's jobs are queued while batch k is measured, so NVRTC time hides behind GPU time. A
// candidate is measured once its job is done, in whatever order the jobs finish; when none of
// batch k is ready but some of batch k+1 is, batch k's stragglers (slow compiles) move into batch
// k+1 and are reported with it. With pipelining the strategy is asked for batch k+1 before it
// sees the results of batch k (no effect on random/grid search; a model-based strategy may prefer
// pipeline_compile = false).
//
//   RandomSearch search(task.space.size(), 1);
//   TuneOptions options;  options.n_trials = 200;  options.log_path = "tune.log";
//   TUNEJIT_ASSIGN_OR_RETURN(TuneResult r, TuneTask(task, search, *measurer, options));
//   r.best_config, r.best_cost (seconds)
#ifndef TUNEJIT_TUNER_TUNE_TASK_H_
#define TUNEJIT_TUNER_TUNE_TASK_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "autotvm/record.h"
#include "tuner/compile_pool.h"
#include "tuner/measure.h"
#include "tuner/search.h"
#include "tuner/task.h"

namespace tunejit {

struct TuneOptions {
  int n_trials = 100;
  int batch_size = 8;
  std::string log_path;           // "" writes no log
  std::FILE* progress = nullptr;  // one line per batch when set (e.g. stderr)
  std::string tvm_version = "0.7.dev1";
  bool pipeline_compile = true;  // compile batch k+1 while batch k is measured
  // Where the compile jobs run (shared by the tasks of a run); null: a pool of one thread per
  // core for this call. Without pipelining nothing is compiled ahead: Measure compiles.
  CompilePool* compile_pool = nullptr;
  // Wall-clock budget: no candidate is started after this many seconds (0: no limit). A batch
  // cut short reports only its measured part to the strategy.
  double max_seconds = 0;
  // Candidates measured even past max_seconds; -1: the first batch (a task whose kernels compile
  // slowly, dense_large_batch at k = 25088, would otherwise spend its share compiling and end
  // with no record at all).
  int min_trials = -1;
  // Early stop (Measurer::SetStopAbove): a candidate whose first run takes longer than
  // stop_factor x the best time known is not timed further (0: off). The best known is the
  // smaller of known_best_seconds (e.g. the other tasks of the same node; 0: none) and this
  // run's best so far.
  double stop_factor = 0;
  double known_best_seconds = 0;
  // Called with every record (and the measurement's message) right after it is logged.
  std::function<void(const autotvm::Record&, const Measurement&)> on_record;
};

struct TuneResult {
  int trials = 0;  // measured configs (errors included)
  int errors = 0;
  int64_t best_index = -1;  // -1 when no measurement succeeded
  autotvm::ConfigEntity best_config;
  double best_cost = std::numeric_limits<double>::infinity();  // seconds (mean of costs)
  double best_gflops = 0;
};

// Queues the compile jobs of `indices` on `pool` (keyed by workload and index, so indices queued
// before share their job) and returns each one's future, in order; an invalid future where the
// measurer has nothing to compile or the index is outside the space.
std::vector<std::shared_future<void>> QueueCompiles(const Task& task, Measurer& measurer,
                                                    CompilePool& pool,
                                                    const std::vector<int64_t>& indices);

// Runs until n_trials configs are measured, max_seconds have passed or the strategy is exhausted.
// Returns an error only when the log cannot be written, a proposed index is outside the space (a
// strategy bug) or the measurer reports it can no longer measure (Measurer::Health); failed
// measurements are records with their error number, never errors of TuneTask. Records carry the
// measurement's GPU tag (Measurement::gpu) when it has one.
absl::StatusOr<TuneResult> TuneTask(const Task& task, SearchStrategy& strategy, Measurer& measurer,
                                    const TuneOptions& options);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_TUNE_TASK_H_
