// File: tuner/isolated_measurer.h
// Measuring in a worker process, so a candidate that faults or hangs costs one record, not the
// tuning run. TVM isolates runs in RPC servers for the same reason; here the worker is
// `tunejit tune-worker` (tuner/worker_main.h), started by posix_spawn, spoken to in line-delimited
// JSON (tuner/worker_protocol.h). The parent never initializes CUDA: it compiles with NVRTC only.
//
//   WorkerClient   one worker slot: starts the process (and restarts it after a crash), sends a
//                  candidate, waits for the answer under a deadline. Outcomes:
//                    answer                 -> its measurement (a fatal one: the worker is reaped)
//                    worker died / EOF      -> error 4 RUNTIME_DEVICE, fresh worker next time
//                    no answer by deadline  -> SIGKILL, error 7 RUN_TIMEOUT, fresh worker next time
//                    garbage answer         -> error 8 UNKNOWN_ERROR, fresh worker next time
//   IsolatedMeasurer  the Measurer of one task on a WorkerClient: Measure goes to the worker,
//                  CompileJob runs NVRTC here (on the tuner's CompilePool) into the shared kernel
//                  cache, so the worker mostly loads cache hits.
//
//   WorkerClient worker({.argv = {"/proc/self/exe", "tune-worker", "--gpu", "0"}});
//   TUNEJIT_ASSIGN_OR_RETURN(WorkerHello hello, worker.Start());
//   IsolatedMeasurer measurer(worker, task, {.compiler = &compiler, .limits = hello.limits});
//   TuneTask(task, search, measurer, options);
#ifndef TUNEJIT_TUNER_ISOLATED_MEASURER_H_
#define TUNEJIT_TUNER_ISOLATED_MEASURER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/kernel_compiler.h"
#include "tuner/child_process.h"
#include "tuner/measure.h"
#include "tuner/task.h"
#include "tuner/worker_protocol.h"

namespace tunejit {

struct WorkerOptions {
  std::vector<std::string> argv;        // the worker command line; argv[0] is the executable
  std::vector<std::string> env;         // extra "KEY=VALUE"
  double measure_timeout_seconds = 20;  // per candidate, once the worker has set up the task
  double setup_timeout_seconds = 120;   // extra for a worker's first candidate of a workload
  double hello_timeout_seconds = 60;    // worker start (CUDA init)
  int max_start_failures = 3;           // consecutive failed starts before the slot gives up
};

// Planted faults for tests: the k-th candidate measured in the whole run (0-based, across every
// worker) is replaced by a faulting or an endless kernel. -1: none. Shared by all slots.
struct TestFaults {
  int64_t fault_trial = -1;
  int64_t hang_trial = -1;
  std::atomic<int64_t> measured{0};
  std::string Next();  // "", "oob" or "hang" for the next candidate
};

class WorkerClient {
 public:
  explicit WorkerClient(WorkerOptions options) : options_(std::move(options)) {}
  // Starts the worker unless running; its hello (an error when it cannot start or says why not).
  absl::StatusOr<WorkerHello> Start();
  // Never fails: every outcome is a Measurement (see the table above). `record` carries target,
  // workload, index and config.
  // `stop_above`: Measurer::SetStopAbove for this candidate (0: none).
  Measurement Measure(const autotvm::Record& record, const std::string& fault,
                      double stop_above = 0);
  // OK while the slot can measure; the start error after max_start_failures failed starts in a row.
  absl::Status Health() const { return health_; }
  void Stop();  // asks the worker to quit (then kills it after a grace period)
  int restarts() const { return restarts_; }
  const std::optional<WorkerHello>& hello() const { return hello_; }

 private:
  Measurement MeasureOnce(const autotvm::Record& record, const std::string& fault,
                          double stop_above);
  Measurement Abandon(int error_no, const std::string& why, double seconds);

  WorkerOptions options_;
  std::optional<ChildProcess> child_;
  std::optional<WorkerHello> hello_;  // of the first successful start
  std::string workload_key_;          // the workload the running worker has set up
  int64_t seq_ = 0;
  int starts_ = 0, restarts_ = 0, failed_starts_ = 0;
  absl::Status health_;
};

struct IsolatedMeasureOptions {
  const KernelCompiler* compiler = nullptr;  // for CompileJob; null: no compiling here
  DeviceLimits limits;                       // the worker's (WorkerHello::limits)
  TestFaults* faults = nullptr;              // planted faults (tests), may be null
};

class IsolatedMeasurer : public Measurer {
 public:
  IsolatedMeasurer(WorkerClient& worker, const Task& task, IsolatedMeasureOptions options)
      : worker_(worker), task_(task), options_(options) {}
  Measurement Measure(const autotvm::ConfigEntity& config) override;
  std::function<void()> CompileJob(const autotvm::ConfigEntity& config) override;
  absl::Status Health() override { return worker_.Health(); }
  void SetStopAbove(double seconds) override { stop_above_ = seconds; }

 private:
  WorkerClient& worker_;
  const Task& task_;
  IsolatedMeasureOptions options_;
  double stop_above_ = 0;
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_ISOLATED_MEASURER_H_
