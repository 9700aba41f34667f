// File: executor/executor_internal.h
// The executor's private state and the helpers its .cc files share (executor/executor.h is the
// API).
//   executor.cc          Build orchestration, Run, SetInput/Output, timing
//   executor_plans.cc    per-step OpPlans (kernel choice, elementwise kernels), LayerInfo
//   executor_compile.cc  parallel compilation with progress, loading, argument binding
//   executor_weights.cc  weight upload (and int8 quantization of weights and epilogue vectors)
//   executor_verify.cc   record verification against the reference kernels, int8 calibration
//   executor_build_plan.cc  saved build plans: identity, making one, checking a given one
// Not installed; only the executor's sources include it.
#ifndef TUNEJIT_EXECUTOR_EXECUTOR_INTERNAL_H_
#define TUNEJIT_EXECUTOR_EXECUTOR_INTERNAL_H_

#include <chrono>
#include <optional>
#include <vector>

#include "executor/executor.h"
#include "executor/kernel_choice.h"
#include "executor/step_program.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"

namespace tunejit {

// One bound kernel launch: everything Run needs, packed at build time.
struct BoundLaunch {
  Kernel kernel;
  LaunchShape shape;
  KernelArgs args;
  PlannedKernel::Phase phase = PlannedKernel::Phase::kRun;
};

struct StepRuntime {
  OpPlan plan;                           // the chosen candidate's (or the elementwise kernel's)
  std::optional<KernelChoice> choice;    // conv / dense
  int candidate = 0;                     // index into choice->candidates
  std::vector<CompiledKernel> compiled;  // per plan kernel
  std::vector<BoundLaunch> launches;     // per plan kernel, after binding
  std::vector<DeviceBuffer> persistent;  // persistent workspaces (index = workspace index)
  DevicePtr weight = 0, bias = 0, scale = 0;  // conv / dense / bias_add tensors
  std::vector<DevicePtr> operand_weights;     // tensor ops: per operand (0 for activations)
};

struct Executor::State {
  const Device* device = nullptr;  // not owned: must outlive the executor
  ExecutorOptions options;
  Graph graph;
  StepProgram program;
  StepMemory memory;
  DeviceLimits limits;
  std::vector<float> scales;  // int8: per scale slot
  std::optional<Stream> stream;
  DeviceBuffer arena;
  DeviceBuffer scratch;  // shared by every step's non-persistent workspaces
  std::vector<DeviceBuffer> weight_buffers;
  std::vector<StepRuntime> steps;
  std::vector<LayerInfo> layers;
  ExecutorStats stats;
  BuildPlan plan;  // what this build decided (Executor::build_plan)
  bool captured = false;

  DevicePtr TensorPtr(int step_tensor) const {
    return arena.ptr() + static_cast<DevicePtr>(memory.offsets[step_tensor]);
  }
  void Warn(const std::string& message);  // stats.warnings, and `progress` when set
  absl::Status LaunchStep(int step, PlannedKernel::Phase phase);
};

double SecondsSince(std::chrono::steady_clock::time_point start);

// executor_plans.cc: fills steps[i].plan / choice and layers: kernel choice for conv / dense, or
// with `plan` (checked by CheckPlannedSteps) the plan's choice.
absl::Status PlanSteps(Executor::State& state, const BuildPlan* plan = nullptr);
// Re-reads the chosen candidate of step `i` into its plan and LayerInfo.
void UseCandidate(Executor::State& state, int i);

// executor_compile.cc
// Compiles every step's plan (and `extra` plans, e.g. the verification references) on
// options.compile_threads threads, with progress lines; fills steps[i].compiled.
absl::Status CompileSteps(Executor::State& state, const KernelCompiler& compiler,
                          const std::vector<OpPlan>& extra);
// Plans the arena, allocates it with the scratch and persistent workspaces, loads the kernels and
// packs every launch's arguments.
absl::Status AllocateAndBind(Executor::State& state);

// executor_weights.cc: uploads weights (quantized for int8 steps) with their epilogue vectors.
absl::Status UploadWeights(Executor::State& state, const WeightSet& weights);

// executor_verify.cc
// Checks the chosen record candidates against the reference kernels; moves a failing step to its
// next candidate (with the reason). Returns whether any step changed (then compile again).
absl::StatusOr<bool> VerifyRecords(Executor::State& state, const KernelCompiler& compiler);
// The reference plans VerifyRecords will run, so CompileSteps can warm the cache with them.
std::vector<OpPlan> VerificationPlans(const Executor::State& state);
// int8: per graph tensor of `sources`, max |x| in the float32 executor `fp32` on its options'
// calibration_inputs, or N(0, 1) inputs drawn from calibration_seed for the graph inputs not
// given, each measured right after the step producing it. InvalidArgument for a given input of
// the wrong size or name.
absl::StatusOr<std::vector<float>> CalibrateAbsMax(Executor::State& fp32,
                                                   const KernelCompiler& compiler,
                                                   const std::vector<int>& sources);

// executor_build_plan.cc
// What a build is (BuildPlanIdentity): fingerprints of the graph, the weights and the options,
// the GPU architecture, driver, NVRTC and tunejit versions.
absl::StatusOr<BuildPlanIdentity> BuildIdentity(const Device& device, const Graph& graph,
                                                const WeightSet& weights,
                                                const ExecutorOptions& options);
// The plan of a finished build: every step's chosen candidate and kernels, the int8 scales.
BuildPlan MakeBuildPlan(const Executor::State& state, BuildPlanIdentity identity);
// FailedPrecondition, worded for "build plan not used: <why>", when `plan` does not list the
// lowered program's steps (names, kinds, tuned or not) and scale slots.
absl::Status CheckPlannedSteps(const StepProgram& program, const BuildPlan& plan);
// The same when the compiled kernels' cache digests differ from the plan's.
absl::Status CheckPlannedKernels(const Executor::State& state, const BuildPlan& plan);

}  // namespace tunejit

#endif  // TUNEJIT_EXECUTOR_EXECUTOR_INTERNAL_H_
