// File: tuner/measure.h
// Measuring one config of one task on the GPU, the way TVM's LocalBuilder + LocalRunner do, but in
// process. Error numbers are TVM's MeasureErrorNo (autotvm/record.h, reused rather than copied):
//   1 INSTANTIATION_ERROR  the op template rejects the config (Specialize's reason in `message`)
//   3 COMPILE_DEVICE       NVRTC failed
//   4 RUNTIME_DEVICE       module load, bind or launch failed (a kernel fault included)
//   5 WRONG_ANSWER         the output differs from the naive GPU reference (ops/reference_kernels)
// Failed measurements cost [1e9] and are never a winner. A correct candidate is timed with CUDA
// events: warm-up runs, then at least `min_repeats` runs, stopping once the median is stable, at
// `max_repeats` runs or after `max_timing_seconds`; the L2 is flushed (a 2x-L2 buffer memset)
// before each timed run so every run reads its inputs from HBM, as a layer in a network does.
// costs = [median seconds], all_cost = wall seconds of the whole measurement.
// Early stop (SetStopAbove): a candidate whose checking run takes longer than the bound, or whose
// first timed run takes longer than `timed_stop_fraction` of it, cannot win; its cost is that one
// run's time and it is not timed further.
// In a random or early model-guided batch most candidates are 2-20x slower than the task's best
// and timing them fully took 93% of a 5-minute VGG-16 tuning run's measuring time.
//
// Measurer is an interface so the tuning loop is testable without a GPU (tests fake it).
//
//   TUNEJIT_ASSIGN_OR_RETURN(auto measurer, GpuMeasurer::Create(device, compiler, task, {}));
//   Measurement m = measurer->Measure(config);
//   if (m.result.error_no == autotvm::kNoError) ... m.result.costs[0] ...
//
// GpuMeasurer runs in the calling process: a kernel fault (illegal address) poisons the CUDA
// context, so every later measurement in the process fails with error 4 too, and a kernel that
// never ends blocks it forever. `tunejit tune` therefore measures through IsolatedMeasurer
// (tuner/isolated_measurer.h), which runs GpuMeasurer in a worker process and adds RUN_TIMEOUT (7).
#ifndef TUNEJIT_TUNER_MEASURE_H_
#define TUNEJIT_TUNER_MEASURE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/record.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"
#include "tuner/task.h"

namespace tunejit {

inline constexpr double kFailedCost = 1e9;  // TVM's cost of a failed measurement

struct Measurement {
  autotvm::MeasureResult result;
  std::string message;  // why it failed (empty on success)
  // The GPU that measured it (multi-GPU tuning tags records with it); -1: not said.
  int gpu = -1;
  std::string device;
};

// A failed measurement: costs [1e9], `error_no`, the message, timestamp now.
Measurement FailedMeasurement(int error_no, std::string message, double all_cost);

// The epilogue candidates of `workload` are specialized and timed with: what a network runs where
// that changes the bytes a kernel writes. int8 conv2d_nhwc_wgmma(_pool).cuda layers requantize to
// int8 between layers (bias + ReLU + requantize); timed with their int32 output instead, they wrote
// 4x the bytes, and the tuner's ranking of the 224- and 112-pixel layers differed from the run's.
// Everything else is timed with Epilogue{} (TVM's templates as TVM times them).
Epilogue MeasureEpilogue(const autotvm::Workload& workload);
double UnixNow();

// Measurer::CompileJob for `op`: specializes `config` and compiles its kernels into `compiler`'s
// cache, one after the other (the pool runs many jobs). Owns copies of everything but the
// compiler; failures are left to Measure, which compiles again and reports them.
std::function<void()> MakeCompileJob(const OpTemplate* op, const KernelCompiler* compiler,
                                     autotvm::Workload workload, DeviceLimits limits, GpuArch arch,
                                     autotvm::ConfigEntity config);

class Measurer {
 public:
  virtual ~Measurer() = default;
  virtual Measurement Measure(const autotvm::ConfigEntity& config) = 0;
  // A job that compiles the kernels of `config` into the kernel cache, so Measure only loads
  // them. TuneTask runs it on a CompilePool thread while Measure runs, and the job may outlive
  // the measurer: it owns copies of what it reads (the compiler excepted, which outlives the
  // pool). Failures are ignored there; Measure reports them. Empty (the default): nothing to do.
  virtual std::function<void()> CompileJob(const autotvm::ConfigEntity& config) {
    (void)config;
    return {};
  }
  // Not OK once the measurer can no longer measure at all (e.g. its worker process cannot be
  // started again); TuneTask then stops with this status. Default: always OK.
  virtual absl::Status Health() { return absl::OkStatus(); }
  // Candidates measured from now on whose first run takes longer than `seconds` are not timed
  // further (see the file comment). 0: time every candidate fully. Default: ignored.
  virtual void SetStopAbove(double seconds) { (void)seconds; }
};

struct MeasureOptions {
  uint32_t input_seed = 1;  // the task's random inputs (fixed for the measurer's lifetime)
  int warmup_runs = 2;
  int min_repeats = 5;
  int max_repeats = 20;  // fewer runs per candidate leave more of a time budget for candidates
  double max_timing_seconds = 1.0;
  // Early stop: the first timed run stops the candidate at this fraction of the bound (1.3x the
  // best for the tuner's 2x). The checking run needs the whole bound as slack (a first launch
  // with cold caches); a timed run after warm-up is accurate to ~1%, and a candidate 30% behind
  // the best needs no exact time to teach the search it is slower.
  double timed_stop_fraction = 0.65;
  double stable_tolerance = 0.01;  // stop when the median moved less than this over 3 runs
  bool flush_l2 = true;
  // Sustained timing (> 0): the kernel first runs back to back for this long, then its repeats
  // are timed back to back, without flushes or syncs between them. A network keeps the GPU busy:
  // on the H200 its layers ran at the power cap's 1650-1770 MHz where the tuner's isolated runs
  // (idle gaps for the L2 flush and the sync) ran at 1980 MHz, and the kernels that draw the most
  // power lose the most (docs/history/2026-12-03-thirteenth-session.md). 0: isolated runs (the
  // default).
  double sustained_seconds = 0;
  // Relative error allowed for float outputs (||out - ref|| / ||ref||); int outputs are exact.
  double fp32_tolerance = 1e-5;
  double winograd_tolerance = 1e-4;  // task names containing "winograd"
  // float16 data (tensor cores): exact products, but the fp32 accumulation order and rounding of
  // the tensor core's adder differ from the reference's; 25088-long sums reach ~1e-5.
  double fp16_tolerance = 1e-4;
  // A float16 output rounds each value by up to 2^-11 relative (~2.8e-4 rms).
  double fp16_output_tolerance = 1e-3;
  // The stem template (conv2d_nchw_stem_mma.cuda) rounds the float32 data and weights to float16
  // itself: up to 2^-11 relative on each (~4e-4 rms on a sum of random-signed products), plus a
  // float16 output's rounding.
  double stem_tolerance = 2e-3;
  // attention_mma.cuda: a float16 output and the float16 probabilities of its second product.
  double attention_tolerance = 2e-3;
  int compile_threads = 0;  // CompilePlan threads in Measure (0: one per kernel)
  // Testing hook: the `corrupt_call`-th Measure call (0-based) has its output altered before the
  // check, so it must come out as WRONG_ANSWER. -1: never.
  int corrupt_call = -1;
};

class GpuMeasurer : public Measurer {
 public:
  // Generates the inputs, uploads them, runs the reference plan once and keeps its output. The
  // device and the compiler must outlive the measurer. Give the compiler a cache: PlanRunner
  // compiles the plan again after the measurer's own compile step, a hit with a cache.
  static absl::StatusOr<std::unique_ptr<GpuMeasurer>> Create(const Device& device,
                                                             const KernelCompiler& compiler,
                                                             const Task& task,
                                                             const MeasureOptions& options);
  ~GpuMeasurer() override;

  Measurement Measure(const autotvm::ConfigEntity& config) override;
  void SetStopAbove(double seconds) override;
  // Specializes the config and compiles its kernels, one after the other (the pool runs many).
  std::function<void()> CompileJob(const autotvm::ConfigEntity& config) override;

 private:
  struct State;
  explicit GpuMeasurer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_MEASURE_H_
