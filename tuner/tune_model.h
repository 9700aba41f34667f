// File: tuner/tune_model.h
// Tuning many tasks (a model) with fault isolation: one worker process per slot (GPUs x
// workers_per_gpu, tuner/isolated_measurer.h), all slots pulling from one task queue, each task
// tuned by TuneTask with its own search strategy, records appended to one log as they come (whole
// lines, O_APPEND: several slots and processes can share the file). With a ResumeLog, indices
// measured before are never proposed again, count against the budget and warm-start the
// model-guided search.
//
// Budgets: each ModelTask's trials, and/or one time budget for the whole run
// (total_seconds), spent in passes. The survey measures one batch of every task (biggest
// first), since only
// measurements tell which tasks matter: FLOPs do not (the dense layers are few FLOPs but slow)
// and neither do alternatives for one node (winograd or NCHWc). The rest of the time goes in
// two rounds of equal length, each by GainWeights (tuner/budget.h) over the best times so far
// (so an alternative left behind gets nothing in the second), each task's share computed as it
// starts, so nothing runs past the deadline but a survey batch. Resumed, the budget is what
// the log has not spent (ResumeLog::Seconds) and tasks with records skip the survey.
//
// Compiling: one CompilePool for the run (tuner/compile_pool.h). In every pass a slot reserves
// the task after the one it tunes and queues that task's first batch, so a task switch does not
// wait for NVRTC.
//
//   TuneModelOptions options;  options.log_path = "vgg16.log";
//   options.worker.argv = {"/proc/self/exe", "tune-worker"};   // "--gpu N" is appended per slot
//   TUNEJIT_ASSIGN_OR_RETURN(TuneModelReport report, TuneModel(tasks, options));
#ifndef TUNEJIT_TUNER_TUNE_MODEL_H_
#define TUNEJIT_TUNER_TUNE_MODEL_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/isolated_measurer.h"
#include "tuner/resume.h"
#include "tuner/search.h"
#include "tuner/task.h"
#include "tuner/tune_task.h"

namespace tunejit {

struct ModelTask {
  Task task;
  std::string label;   // for progress lines, e.g. "features.2 features.5"
  int64_t trials = 0;  // trial budget (0: none; then TuneModelOptions::total_seconds is needed)
};

struct TuneModelOptions {
  std::string log_path;        // required
  std::string search = "xgb";  // xgb | random | grid
  uint64_t seed = 1;
  int batch_size = 8;
  WorkerOptions worker;  // "--gpu N" is appended to argv per slot
  int workers_per_gpu = 1;
  int max_gpus = 0;                          // 0: every GPU the first worker reports
  const KernelCompiler* compiler = nullptr;  // parent-side NVRTC compiling; null: none
  int compile_threads = 0;                   // of the run's CompilePool; 0: one per core
  TestFaults* faults = nullptr;
  const ResumeLog* resume = nullptr;
  // Seconds for the whole run in two passes (above); 0: each ModelTask's own budget. Per-task
  // trial caps (ModelTask::trials) still apply.
  double total_seconds = 0;
  // Early stop (TuneOptions::stop_factor): candidates whose first run is slower than this times
  // the best time of their node (over all its tasks) are not timed further. 0: off.
  double stop_factor = 2.0;
  std::FILE* progress = nullptr;  // progress lines (stderr)
  std::string tvm_version = "0.7.dev1";
};

struct TaskOutcome {
  int64_t resumed = 0;       // distinct indices already in the log
  int64_t transferred = 0;   // records of other workloads of its task name offered to its search
  TuneResult result;         // this run's trials only
  int64_t trials_total = 0;  // resumed + this run
  double best_cost = 0;      // seconds, over resumed and new records; 0: none valid
  double best_gflops = 0;
  int64_t best_index = -1;
  int timeouts = 0, faults = 0;                  // error 7 / error 4 records of this run
  double seconds = 0;                            // wall time of this run (all passes)
  int slot = -1;                                 // the worker slot that tuned it
  std::vector<std::pair<double, double>> curve;  // (trial, best ms so far), resumed first
  absl::Status status;  // why the task stopped early (worker gone, log unwritable); OK otherwise
};

struct TuneModelReport {
  std::vector<TaskOutcome> tasks;  // same order as the input
  int slots = 0;
  int gpus = 0;
  int restarts = 0;  // worker restarts after faults / timeouts
  std::string device;
};

// Whether the task's template accepts config `index` on a device with `limits` (the checks run
// before compiling: thread counts, shared memory, knob consistency). Empty for a task name with no
// template (nothing to check against). The function refers to `task`, which must outlive it.
std::function<bool(int64_t)> TemplateValidity(const Task& task, const DeviceLimits& limits);

// The search strategy of `name` for `task`, never proposing an index in `skip`; history holds
// earlier records of this workload (same_workload) and of others with the same task name, used by
// "xgb" as training data. `valid` (optional) says whether the template accepts an index; only
// those are proposed. InvalidArgument for an unknown name.
absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeSearch(
    const std::string& name, const Task& task, uint64_t seed,
    const std::vector<autotvm::Record>& same_workload,
    const std::vector<autotvm::Record>& same_task_name, std::function<bool(int64_t)> valid = {});

// FailedPrecondition when no worker can start (e.g. no GPU: the worker's message); otherwise a
// report, with per-task statuses for tasks that stopped early.
absl::StatusOr<TuneModelReport> TuneModel(const std::vector<ModelTask>& tasks,
                                          const TuneModelOptions& options);

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_TUNE_MODEL_H_
