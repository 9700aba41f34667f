#include "ops/plan_runner.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// Above this, a kernel needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES) to launch.
constexpr uint32_t kDefaultDynamicSmemLimit = 48 * 1024;

// The address an input/output/workspace argument stands for.
absl::StatusOr<DevicePtr> TensorAddress(const KernelArg& arg, const PlanBinding& bound) {
  auto pick = [&](absl::Span<const DevicePtr> tensors,
                  const char* what) -> absl::StatusOr<DevicePtr> {
    if (arg.index_or_int < 0 || arg.index_or_int >= static_cast<int64_t>(tensors.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan references ", what, " ", arg.index_or_int, " but ", tensors.size(), " were bound"));
    }
    return tensors[arg.index_or_int];
  };
  switch (arg.kind) {
    case KernelArg::Kind::kInput:
      return pick(bound.inputs, "input");
    case KernelArg::Kind::kOutput:
      return pick(bound.outputs, "output");
    case KernelArg::Kind::kWorkspace:
      return pick(bound.workspaces, "workspace");
    default:
      return absl::InvalidArgumentError("a TMA map must view an input, output or workspace");
  }
}

absl::StatusOr<TensorMap> EncodePlannedMap(const KernelArg& arg, const PlanBinding& bound) {
  if (arg.index_or_int < 0 || arg.index_or_int >= static_cast<int64_t>(bound.tensor_maps.size())) {
    return absl::InvalidArgumentError(absl::StrCat("plan references TMA map ", arg.index_or_int,
                                                   " of ", bound.tensor_maps.size()));
  }
  const PlannedTensorMap& map = bound.tensor_maps[arg.index_or_int];
  TUNEJIT_ASSIGN_OR_RETURN(DevicePtr ptr, TensorAddress(map.tensor, bound));
  return EncodeTensorMap(map.desc, ptr);
}

absl::Status AddArg(const KernelArg& arg, const PlanBinding& bound, KernelArgs& packed) {
  switch (arg.kind) {
    case KernelArg::Kind::kInput:
    case KernelArg::Kind::kOutput:
    case KernelArg::Kind::kWorkspace: {
      TUNEJIT_ASSIGN_OR_RETURN(DevicePtr ptr, TensorAddress(arg, bound));
      packed.Add(ptr);
      return absl::OkStatus();
    }
    case KernelArg::Kind::kTensorMap: {
      TUNEJIT_ASSIGN_OR_RETURN(TensorMap map, EncodePlannedMap(arg, bound));
      packed.Add(map);
      return absl::OkStatus();
    }
    case KernelArg::Kind::kInt32:
      packed.Add(static_cast<int32_t>(arg.index_or_int));
      return absl::OkStatus();
    case KernelArg::Kind::kInt64:
      packed.Add(static_cast<int64_t>(arg.index_or_int));
      return absl::OkStatus();
    case KernelArg::Kind::kFloat32:
      packed.Add(arg.f32);
      return absl::OkStatus();
    case KernelArg::Kind::kInt64Array:
      packed.AddBytes(arg.int64s.data(), arg.int64s.size() * sizeof(int64_t), alignof(int64_t));
      return absl::OkStatus();
  }
  return absl::InternalError("unknown kernel argument kind");
}

}  // namespace

absl::StatusOr<KernelArgs> PackKernelArgs(const PlannedKernel& kernel, const PlanBinding& bound) {
  KernelArgs packed;
  for (const KernelArg& arg : kernel.args) {
    absl::Status s = AddArg(arg, bound, packed);
    if (!s.ok()) {
      return absl::Status(s.code(),
                          absl::StrCat("binding kernel '", kernel.label, "': ", s.message()));
    }
  }
  return packed;
}

std::vector<absl::StatusOr<CompiledKernel>> CompileEach(
    const KernelCompiler& compiler, const std::vector<const KernelSpec*>& specs,
    const GpuArch& arch, int threads,
    const std::function<void(const absl::StatusOr<CompiledKernel>&)>& on_done) {
  const int n = static_cast<int>(specs.size());
  std::vector<std::optional<absl::StatusOr<CompiledKernel>>> results(n);
  int workers = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  workers = std::clamp(workers, 1, std::max(n, 1));
  std::atomic<int> next{0};
  auto work = [&] {
    for (int i = next++; i < n; i = next++) {
      results[i] = compiler.Compile(*specs[i], arch);
      if (on_done) on_done(*results[i]);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  std::vector<absl::StatusOr<CompiledKernel>> out;
  out.reserve(n);
  for (auto& r : results) out.push_back(*std::move(r));
  return out;
}

absl::StatusOr<std::vector<CompiledKernel>> CompilePlan(const KernelCompiler& compiler,
                                                        const OpPlan& plan, const GpuArch& arch,
                                                        int threads) {
  std::vector<const KernelSpec*> specs;
  for (const PlannedKernel& k : plan.kernels) specs.push_back(&k.spec);
  std::vector<absl::StatusOr<CompiledKernel>> results = CompileEach(compiler, specs, arch, threads);
  const int n = static_cast<int>(results.size());
  std::vector<CompiledKernel> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    if (!results[i].ok()) {
      const absl::Status& s = results[i].status();
      return absl::Status(s.code(),
                          absl::StrCat("kernel '", plan.kernels[i].label, "' (",
                                       plan.kernels[i].spec.name_expression, "): ", s.message()));
    }
    out.push_back(*std::move(results[i]));
  }
  return out;
}

absl::StatusOr<PlanRunner> PlanRunner::Create(const Device& device, const KernelCompiler& compiler,
                                              const OpPlan& plan, const GpuArch& arch) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<CompiledKernel> compiled, CompilePlan(compiler, plan, arch));
  PlanRunner runner;
  runner.plan_ = plan;
  for (size_t i = 0; i < compiled.size(); ++i) {
    runner.compile_seconds_ += compiled[i].compile_seconds;
    runner.cache_hits_ += compiled[i].cache_hit ? 1 : 0;
    TUNEJIT_ASSIGN_OR_RETURN(Module module, Module::Load(device, compiled[i].program.cubin));
    TUNEJIT_ASSIGN_OR_RETURN(Kernel kernel, module.GetKernel(compiled[i].lowered_name));
    const uint32_t smem = plan.kernels[i].shape.shared_bytes;
    if (smem > kDefaultDynamicSmemLimit) {
      TUNEJIT_RETURN_IF_ERROR(kernel.SetMaxDynamicSharedBytes(static_cast<int>(smem)));
    }
    runner.kernels_.push_back(std::move(kernel));  // keeps its module loaded
  }
  for (int64_t bytes : plan.workspace_bytes) {
    TUNEJIT_ASSIGN_OR_RETURN(
        DeviceBuffer buffer,
        DeviceBuffer::Allocate(device, static_cast<size_t>(std::max<int64_t>(bytes, 1))));
    runner.workspace_.push_back(std::move(buffer));
  }
  return runner;
}

absl::Status PlanRunner::Bind(absl::Span<const DevicePtr> inputs,
                              absl::Span<const DevicePtr> outputs) {
  std::vector<DevicePtr> workspaces;
  for (const DeviceBuffer& w : workspace_) workspaces.push_back(w.ptr());
  const PlanBinding bound{inputs, outputs, workspaces, plan_.tensor_maps};
  std::vector<KernelArgs> packed;
  for (const PlannedKernel& k : plan_.kernels) {
    TUNEJIT_ASSIGN_OR_RETURN(KernelArgs args, PackKernelArgs(k, bound));
    packed.push_back(std::move(args));
  }
  args_ = std::move(packed);
  bound_ = true;
  return absl::OkStatus();
}

absl::Status PlanRunner::Launch(PlannedKernel::Phase phase, Stream& stream) {
  if (!bound_) return absl::FailedPreconditionError("PlanRunner: Bind() before running");
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    if (plan_.kernels[k].phase != phase) continue;
    TUNEJIT_RETURN_IF_ERROR(stream.Launch(kernels_[k], plan_.kernels[k].shape, args_[k]));
  }
  return absl::OkStatus();
}

absl::Status PlanRunner::Prepare(Stream& stream) {
  return Launch(PlannedKernel::Phase::kPrepare, stream);
}

absl::Status PlanRunner::Run(Stream& stream) { return Launch(PlannedKernel::Phase::kRun, stream); }

}  // namespace tunejit
