// File: ops/plan_runner.h
// Runs one OpPlan on a device: compiles every kernel through the KernelCompiler (in parallel
// threads when there are several), loads them, allocates the plan's workspace buffers, and
// pre-packs each kernel's arguments once tensors are bound, so Run() only launches (no allocation,
// no lookup, no string work). Used by tests, the tuner and the graph executor.
//
//   TUNEJIT_ASSIGN_OR_RETURN(PlanRunner runner, PlanRunner::Create(device, compiler, plan, arch));
//   TUNEJIT_RETURN_IF_ERROR(runner.Bind({data.ptr(), weight.ptr()}, {out.ptr()}));
//   TUNEJIT_RETURN_IF_ERROR(runner.Prepare(stream));   // kPrepare kernels (weight transforms)
//   TUNEJIT_RETURN_IF_ERROR(runner.Run(stream));       // kRun kernels, in plan order
#ifndef TUNEJIT_OPS_PLAN_RUNNER_H_
#define TUNEJIT_OPS_PLAN_RUNNER_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jit/arch.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"

namespace tunejit {

// Compiles each spec for `arch` independently (a failure does not stop the others) on up to
// `threads` threads (0: one per spec, capped by the hardware). `on_done(result)`, when given, runs
// on the compiling thread after each spec (e.g. progress). Results are in `specs` order.
std::vector<absl::StatusOr<CompiledKernel>> CompileEach(
    const KernelCompiler& compiler, const std::vector<const KernelSpec*>& specs,
    const GpuArch& arch, int threads,
    const std::function<void(const absl::StatusOr<CompiledKernel>&)>& on_done = {});

// Compiles every kernel of `plan` for `arch` (no GPU needed), on up to `threads` threads
// (0: one per kernel, capped by the hardware). Results are in plan order; the first failure wins.
absl::StatusOr<std::vector<CompiledKernel>> CompilePlan(const KernelCompiler& compiler,
                                                        const OpPlan& plan, const GpuArch& arch,
                                                        int threads = 0);

// The tensors a plan's KernelArgs resolve to (ops/op_template.h conventions).
struct PlanBinding {
  absl::Span<const DevicePtr> inputs;
  absl::Span<const DevicePtr> outputs;
  absl::Span<const DevicePtr> workspaces;
  absl::Span<const PlannedTensorMap> tensor_maps;  // the plan's; kTensorMap args are encoded here
};

// `kernel`'s arguments packed for launching: pointers resolved, TMA maps encoded (through the
// driver). InvalidArgument names the kernel and the index a plan references but `bound` lacks.
absl::StatusOr<KernelArgs> PackKernelArgs(const PlannedKernel& kernel, const PlanBinding& bound);

class PlanRunner {
 public:
  static absl::StatusOr<PlanRunner> Create(const Device& device, const KernelCompiler& compiler,
                                           const OpPlan& plan, const GpuArch& arch);
  PlanRunner(PlanRunner&&) noexcept = default;
  PlanRunner& operator=(PlanRunner&&) noexcept = default;

  // Binds op tensors by the plan's KernelArg indices (ops/op_template.h conventions). Every index
  // the plan references must be present in the spans. May be called again to rebind.
  absl::Status Bind(absl::Span<const DevicePtr> inputs, absl::Span<const DevicePtr> outputs);
  // Launches the Phase::kPrepare kernels (once per weight binding).
  absl::Status Prepare(Stream& stream);
  // Launches the Phase::kRun kernels in plan order.
  absl::Status Run(Stream& stream);

  const OpPlan& plan() const { return plan_; }
  const std::vector<Kernel>& kernels() const { return kernels_; }
  double compile_seconds() const { return compile_seconds_; }  // NVRTC time (0 on cache hits)
  int cache_hits() const { return cache_hits_; }

 private:
  PlanRunner() = default;
  absl::Status Launch(PlannedKernel::Phase phase, Stream& stream);

  OpPlan plan_;
  std::vector<Kernel> kernels_;
  std::vector<KernelArgs> args_;
  std::vector<DeviceBuffer> workspace_;
  bool bound_ = false;
  double compile_seconds_ = 0;
  int cache_hits_ = 0;
};

}  // namespace tunejit

#endif  // TUNEJIT_OPS_PLAN_RUNNER_H_
