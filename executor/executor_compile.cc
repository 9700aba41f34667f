// Compilation of every step's kernels on all cores (distinct specs once, through the kernel
// cache), then memory: the arena from the step-level plan, one scratch buffer shared by all
// non-persistent workspaces (steps run one after another), and the packed launch arguments.
#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "ops/plan_runner.h"

namespace tunejit {
namespace {

constexpr int64_t kAlign = 256;
constexpr uint32_t kDefaultDynamicSmemLimit = 48 * 1024;

int64_t AlignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::string SpecKey(const KernelSpec& spec) {
  return absl::StrCat(spec.source_file, "\n", spec.name_expression, "\n",
                      absl::StrJoin(spec.defines, " "));
}

struct CompileJobs {
  std::vector<const PlannedKernel*> unique;  // distinct specs
  std::map<std::string, int> index;          // spec key -> unique index
  int Add(const PlannedKernel& k) {
    auto [it, inserted] = index.emplace(SpecKey(k.spec), static_cast<int>(unique.size()));
    if (inserted) unique.push_back(&k);
    return it->second;
  }
};

// Compiles `jobs` on `threads` threads; prints progress about every tenth of the way.
std::vector<absl::StatusOr<CompiledKernel>> CompileAll(const KernelCompiler& compiler,
                                                       const GpuArch& arch, const CompileJobs& jobs,
                                                       int threads, std::FILE* progress) {
  const int n = static_cast<int>(jobs.unique.size());
  std::vector<const KernelSpec*> specs;
  for (const PlannedKernel* k : jobs.unique) specs.push_back(&k->spec);
  std::mutex print_mutex;
  int done = 0, hits = 0, printed_tenth = -1;
  auto report = [&](const absl::StatusOr<CompiledKernel>& r) {
    if (progress == nullptr) return;
    std::lock_guard<std::mutex> lock(print_mutex);
    ++done;
    if (r.ok() && r->cache_hit) ++hits;
    const int tenth = done * 10 / n;
    if (tenth > printed_tenth) {
      printed_tenth = tenth;
      std::fprintf(progress, "compiling %d kernels: %d/%d (%d cache hits)\n", n, done, n, hits);
      std::fflush(progress);
    }
  };
  return CompileEach(compiler, specs, arch, threads, report);
}

// Bytes of step `rt`'s non-persistent workspaces, packed one after another in the scratch.
int64_t ScratchBytes(const OpPlan& plan) {
  int64_t total = 0;
  for (size_t w = 0; w < plan.workspace_bytes.size(); ++w) {
    const bool persistent = w < plan.workspace_persistent.size() && plan.workspace_persistent[w];
    if (!persistent) total += AlignUp(plan.workspace_bytes[w]);
  }
  return total;
}

absl::StatusOr<std::vector<DevicePtr>> Workspaces(Executor::State& state, StepRuntime& rt) {
  std::vector<DevicePtr> ptrs;
  int64_t scratch_offset = 0;
  for (size_t w = 0; w < rt.plan.workspace_bytes.size(); ++w) {
    const int64_t bytes = rt.plan.workspace_bytes[w];
    const bool persistent =
        w < rt.plan.workspace_persistent.size() && rt.plan.workspace_persistent[w];
    if (persistent) {
      TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b,
                               DeviceBuffer::Allocate(*state.device, std::max<int64_t>(bytes, 1)));
      state.stats.workspace_bytes += bytes;
      ptrs.push_back(b.ptr());
      rt.persistent.push_back(std::move(b));
    } else {
      ptrs.push_back(state.scratch.ptr() + static_cast<DevicePtr>(scratch_offset));
      scratch_offset += AlignUp(bytes);
    }
  }
  return ptrs;
}

absl::Status BindStep(Executor::State& state, int i, std::map<std::string, Kernel>& loaded) {
  const Step& step = state.program.steps[i];
  StepRuntime& rt = state.steps[i];
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<DevicePtr> workspaces, Workspaces(state, rt));
  std::vector<DevicePtr> inputs = {state.TensorPtr(step.input)};
  if (!step.operands.empty()) {
    inputs.clear();
    for (size_t k = 0; k < step.operands.size(); ++k) {
      const StepOperand& o = step.operands[k];
      inputs.push_back(o.tensor >= 0 ? state.TensorPtr(o.tensor) : rt.operand_weights[k]);
    }
  } else if (step.kind == StepKind::kConv2d || step.kind == StepKind::kDense) {
    inputs.insert(inputs.end(), {rt.weight, rt.bias, rt.scale});
    if (step.residual >= 0) inputs.push_back(state.TensorPtr(step.residual));  // input 4
  } else if (step.kind == StepKind::kBiasAdd) {
    inputs.push_back(rt.bias);
  } else if (step.kind == StepKind::kAdd) {
    inputs.push_back(state.TensorPtr(step.residual));
  }
  const std::vector<DevicePtr> outputs = {state.TensorPtr(step.output)};
  rt.launches.clear();
  for (size_t k = 0; k < rt.plan.kernels.size(); ++k) {
    const PlannedKernel& pk = rt.plan.kernels[k];
    const std::string key = SpecKey(pk.spec);
    auto it = loaded.find(key);
    if (it == loaded.end()) {
      const CompiledKernel& c = rt.compiled[k];
      TUNEJIT_ASSIGN_OR_RETURN(Module module, Module::Load(*state.device, c.program.cubin));
      TUNEJIT_ASSIGN_OR_RETURN(Kernel kernel, module.GetKernel(c.lowered_name));
      it = loaded.emplace(key, std::move(kernel)).first;  // the Kernel keeps its module loaded
    }
    if (pk.shape.shared_bytes > kDefaultDynamicSmemLimit) {
      TUNEJIT_RETURN_IF_ERROR(it->second.SetMaxDynamicSharedBytes(pk.shape.shared_bytes));
    }
    absl::StatusOr<KernelArgs> args =
        PackKernelArgs(pk, {inputs, outputs, workspaces, rt.plan.tensor_maps});
    if (!args.ok()) {
      return absl::Status(args.status().code(),
                          absl::StrCat(step.name, ": ", args.status().message()));
    }
    rt.launches.push_back(BoundLaunch{it->second, pk.shape, *std::move(args), pk.phase});
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CompileSteps(Executor::State& state, const KernelCompiler& compiler,
                          const std::vector<OpPlan>& extra) {
  const auto start = std::chrono::steady_clock::now();
  CompileJobs jobs;
  std::vector<std::vector<int>> job_of(state.steps.size());
  for (size_t i = 0; i < state.steps.size(); ++i) {
    for (const PlannedKernel& k : state.steps[i].plan.kernels) job_of[i].push_back(jobs.Add(k));
  }
  for (const OpPlan& plan : extra) {
    for (const PlannedKernel& k : plan.kernels) jobs.Add(k);
  }
  const int threads = state.options.compile_threads > 0
                          ? state.options.compile_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto results = CompileAll(compiler, state.limits.arch, jobs, threads, state.options.progress);
  for (size_t j = 0; j < results.size(); ++j) {
    if (!results[j].ok()) {
      const absl::Status& s = results[j].status();
      return absl::Status(s.code(),
                          absl::StrCat("compiling ", jobs.unique[j]->label, " (",
                                       jobs.unique[j]->spec.name_expression, "): ", s.message()));
    }
    (results[j]->cache_hit ? state.stats.kernel_cache_hits : state.stats.kernels_compiled)++;
  }
  for (size_t i = 0; i < state.steps.size(); ++i) {
    state.steps[i].compiled.clear();
    for (int j : job_of[i]) state.steps[i].compiled.push_back(*results[j]);
  }
  state.stats.compile_seconds += SecondsSince(start);
  return absl::OkStatus();
}

absl::Status AllocateAndBind(Executor::State& state) {
  TUNEJIT_ASSIGN_OR_RETURN(state.memory, PlanStepMemory(state.program, kAlign));
  state.stats.arena_bytes = state.memory.arena_bytes;
  state.stats.activation_sum_bytes = state.memory.sum_bytes;
  TUNEJIT_ASSIGN_OR_RETURN(
      state.arena,
      DeviceBuffer::Allocate(*state.device, std::max<int64_t>(state.memory.arena_bytes, 1)));
  int64_t scratch = 0;
  for (const StepRuntime& rt : state.steps) scratch = std::max(scratch, ScratchBytes(rt.plan));
  TUNEJIT_ASSIGN_OR_RETURN(state.scratch,
                           DeviceBuffer::Allocate(*state.device, std::max<int64_t>(scratch, 1)));
  state.stats.workspace_bytes = scratch;
  std::map<std::string, Kernel> loaded;
  for (size_t i = 0; i < state.steps.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(BindStep(state, static_cast<int>(i), loaded));
  }
  return absl::OkStatus();
}

}  // namespace tunejit
