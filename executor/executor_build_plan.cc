// Saved build plans (executor/build_plan.h) in the executor: a build's identity, the plan a build
// leaves behind, and the checks that a given plan describes this build's steps and kernels.
#include <algorithm>
#include <bit>
#include <utility>

#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "autotvm/record.h"
#include "common/digest.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "executor/executor_internal.h"
#include "graph/fingerprint.h"
#include "jit/nvrtc_compiler.h"

namespace tunejit {
namespace {

template <typename Map>
std::vector<std::string> SortedKeys(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : map) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  return keys;
}

// What steers the build's decisions besides the model and the GPU (BuildPlanIdentity::options).
std::string OptionsFingerprint(const ExecutorOptions& o, const std::string& target) {
  std::string b;
  AppendBytes(&b, "tunejit-build-options");
  AppendBytes(&b, target);
  AppendU32(&b, o.verify_records ? 1 : 0);
  const size_t records = o.history == nullptr ? 0 : o.history->size();
  AppendU64(&b, records);
  for (size_t i = 0; i < records; ++i) {
    const autotvm::LoadedRecord& r = o.history->record(i);
    AppendBytes(&b, r.text.empty() ? autotvm::SerializeRecord(r.record) : r.text);
  }
  AppendBytes(&b, o.history == nullptr ? "" : o.history->preferred_device());
  if (IsInt8(o.mode)) {  // the scales: only int8 builds have any
    AppendU64(&b, o.calibration_seed);
    for (const std::string& name : SortedKeys(o.calibration_inputs)) {
      const std::vector<float>& v = o.calibration_inputs.at(name);
      AppendBytes(&b, name);
      AppendBytes(&b, {reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)});
    }
    for (const std::string& name : SortedKeys(o.activation_scales)) {
      AppendBytes(&b, name);
      AppendU32(&b, std::bit_cast<uint32_t>(o.activation_scales.at(name)));
    }
  }
  return Sha256Hex(b);
}

absl::Status PlanDiffers(absl::string_view why) { return absl::FailedPreconditionError(why); }

}  // namespace

absl::StatusOr<BuildPlanIdentity> BuildIdentity(const Device& device, const Graph& graph,
                                                const WeightSet& weights,
                                                const ExecutorOptions& options) {
  BuildPlanIdentity id;
  id.tunejit = TunejitVersion();
  id.graph = GraphFingerprint(graph);
  id.weights = WeightsFingerprint(graph, weights, options.compile_threads);
  id.mode = std::string(NumericModeName(options.mode));
  // A default Target queries as "cuda" (NewState).
  id.options =
      OptionsFingerprint(options, options.target.name.empty() ? "cuda" : options.target.text);
  id.arch = DeviceLimits::FromProperties(device.properties()).arch.ToString();
  TUNEJIT_ASSIGN_OR_RETURN(id.driver_version, CudaDriverVersion());
  id.nvrtc_version = NvrtcVersion();
  return id;
}

BuildPlan MakeBuildPlan(const Executor::State& s, BuildPlanIdentity identity) {
  BuildPlan plan;
  plan.identity = std::move(identity);
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const Step& step = s.program.steps[i];
    const StepRuntime& rt = s.steps[i];
    PlannedStep& p = plan.steps.emplace_back();
    p.name = step.name;
    p.kind = std::string(StepKindName(step.kind));
    if (rt.choice.has_value()) {
      const KernelCandidate& c = rt.choice->candidates[rt.candidate];
      p.task_name = c.task_name;
      p.workload = autotvm::DumpPythonJson(c.workload.args);
      p.fallback = c.fallback;
      if (c.record != nullptr) {
        p.record =
            c.record->text.empty() ? autotvm::SerializeRecord(c.record->record) : c.record->text;
      }
      p.record_label = c.record_label;
      p.record_cost = c.record_cost;
      p.verified = s.options.verify_records && !c.fallback;
    }
    for (const CompiledKernel& k : rt.compiled) p.kernels.push_back(k.key_digest);
  }
  plan.activation_scales = s.scales;
  plan.arena_bytes = s.memory.arena_bytes;
  return plan;
}

absl::Status CheckPlannedSteps(const StepProgram& program, const BuildPlan& plan) {
  if (plan.steps.size() != program.steps.size()) {
    return PlanDiffers(absl::StrCat("it lists ", plan.steps.size(), " steps; this build lowers to ",
                                    program.steps.size()));
  }
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    const PlannedStep& p = plan.steps[i];
    if (p.name != step.name || p.kind != StepKindName(step.kind) ||
        p.task_name.empty() != (step.task < 0)) {
      return PlanDiffers(absl::StrCat("its step ", i, " is ", p.kind, " '", p.name,
                                      "'; this build's is ", std::string(StepKindName(step.kind)),
                                      " '", step.name, "'"));
    }
  }
  if (plan.activation_scales.size() != program.scale_sources.size()) {
    return PlanDiffers(absl::StrCat("it has ", plan.activation_scales.size(),
                                    " int8 activation scales; this build needs ",
                                    program.scale_sources.size()));
  }
  return absl::OkStatus();
}

absl::Status CheckPlannedKernels(const Executor::State& s, const BuildPlan& plan) {
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const std::vector<CompiledKernel>& compiled = s.steps[i].compiled;
    const std::vector<std::string>& planned = plan.steps[i].kernels;
    bool same = compiled.size() == planned.size();
    for (size_t k = 0; same && k < compiled.size(); ++k) {
      same = compiled[k].key_digest == planned[k];
    }
    if (!same) {
      return PlanDiffers(absl::StrCat("step '", s.program.steps[i].name,
                                      "' compiles other kernels than it lists (their sources, "
                                      "options or NVRTC changed)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tunejit
