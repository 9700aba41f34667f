#include "executor/kernel_choice.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "autotvm/python_json.h"
#include "ops/batch_matmul.h"

namespace tunejit {
namespace {

std::string RecordLabel(const autotvm::LoadedRecord& r) {
  if (r.file.empty()) return absl::StrCat("record:", r.line);
  const size_t slash = r.file.find_last_of('/');
  return absl::StrCat(slash == std::string::npos ? r.file : r.file.substr(slash + 1), ":", r.line);
}

// The template's plan for the task's operand forms: a batch matmul reading y as the graph's
// [B, K, N] (OperandForms::y_kn) through SpecializeBatchMatmul, every other task through
// OpTemplate::Specialize.
absl::StatusOr<OpPlan> SpecializeForTask(const NodeTask& task, const OpTemplate& op_template,
                                         const autotvm::Workload& workload,
                                         const autotvm::ConfigEntity& config,
                                         const DeviceLimits& limits, const Epilogue& epilogue) {
  if (task.forms.y_kn && workload.task_name == autotvm::kBatchMatmul) {
    return SpecializeBatchMatmul(workload, config, limits, epilogue, MatmulYLayout::kKN);
  }
  return op_template.Specialize(workload, config, limits, epilogue);
}

// Candidates from the log, fastest first; appends every skip to `choice->reasons`. The records
// are looked up under `lookup` (task.implementations' workloads, or the same ones under another
// task name whose configs they take) and specialized for task.implementations.
void AddRecordCandidates(const NodeTask& task, const std::vector<autotvm::Implementation>& lookup,
                         const autotvm::HistoryBest& history, const autotvm::Target& target,
                         const DeviceLimits& limits, const Epilogue& epilogue,
                         KernelChoice* choice) {
  autotvm::OpChoice op = autotvm::ChooseImplementation(history, target, lookup);
  choice->reasons.insert(choice->reasons.end(), op.reasons.begin(), op.reasons.end());
  std::vector<int> order;
  for (size_t i = 0; i < op.per_implementation.size(); ++i) {
    if (op.per_implementation[i].best != nullptr) order.push_back(static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return op.per_implementation[a].cost() < op.per_implementation[b].cost();
  });
  for (int i : order) {
    const autotvm::Implementation& impl = task.implementations[i];
    const autotvm::LoadedRecord& record = *op.per_implementation[i].best;
    std::string label = RecordLabel(record);
    if (lookup[i].workload.task_name != impl.workload.task_name) {
      absl::StrAppend(&label, " (", lookup[i].workload.task_name, "'s)");
    }
    const OpTemplate* op_template = FindOpTemplate(impl.workload.task_name);
    if (op_template == nullptr) {
      choice->reasons.push_back(absl::StrCat(label, " (", impl.workload.task_name,
                                             "): skipped: no kernel template for this task"));
      continue;
    }
    absl::StatusOr<OpPlan> plan = SpecializeForTask(task, *op_template, impl.workload,
                                                    record.record.config, limits, epilogue);
    if (!plan.ok()) {
      // A measured record was built and run: only the rules TVM had refuse it. One that breaks
      // only tunejit's search rules is compiled and verified like any other, with a note.
      DeviceLimits relaxed = limits;
      relaxed.search_rules = false;
      absl::StatusOr<OpPlan> measured = SpecializeForTask(task, *op_template, impl.workload,
                                                          record.record.config, relaxed, epilogue);
      if (!measured.ok()) {
        choice->reasons.push_back(absl::StrCat(label, " (", impl.workload.task_name,
                                               "): skipped: ", plan.status().message()));
        continue;
      }
      measured->notes.push_back(
          absl::StrCat(label, " breaks ", plan.status().message(),
                       "; it was measured, so it is compiled and verified like any other record"));
      plan = std::move(measured);
    }
    KernelCandidate c;
    c.implementation = i;
    c.task_name = impl.workload.task_name;
    c.workload = impl.workload;
    c.config = record.record.config;
    c.record = &record;
    c.record_label = label;
    c.record_cost = op.per_implementation[i].cost();
    c.plan = *std::move(plan);
    choice->candidates.push_back(std::move(c));
  }
}

// The highest-priority implementation whose fallback config specializes.
bool AddFallback(const NodeTask& task, const DeviceLimits& limits, const Epilogue& epilogue,
                 KernelChoice* choice) {
  std::vector<int> order(task.implementations.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return task.implementations[a].priority > task.implementations[b].priority;
  });
  for (int i : order) {
    const autotvm::Workload& workload = task.implementations[i].workload;
    const OpTemplate* op_template = FindOpTemplate(workload.task_name);
    if (op_template == nullptr) {
      choice->reasons.push_back(absl::StrCat(workload.task_name, ": no kernel template"));
      continue;
    }
    absl::StatusOr<autotvm::ConfigEntity> config = op_template->FallbackConfig(workload);
    absl::StatusOr<OpPlan> plan =
        config.ok() ? SpecializeForTask(task, *op_template, workload, *config, limits, epilogue)
                    : absl::StatusOr<OpPlan>(config.status());
    if (!plan.ok()) {
      choice->reasons.push_back(absl::StrCat(
          workload.task_name, ": fallback config rejected: ", plan.status().message()));
      continue;
    }
    KernelCandidate c;
    c.implementation = i;
    c.task_name = workload.task_name;
    c.workload = workload;
    c.config = *std::move(config);
    c.fallback = true;
    c.plan = *std::move(plan);
    choice->candidates.push_back(std::move(c));
    return true;
  }
  return false;
}

absl::Status PlanDiffers(const NodeTask& task, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(task.name, ": ", why));
}

}  // namespace

absl::StatusOr<KernelChoice> KernelFromPlan(const NodeTask& task, const PlannedStep& planned,
                                            const DeviceLimits& limits, const Epilogue& epilogue) {
  auto impl = std::find_if(
      task.implementations.begin(), task.implementations.end(),
      [&](const autotvm::Implementation& i) { return i.workload.task_name == planned.task_name; });
  if (impl == task.implementations.end()) {
    return PlanDiffers(task, absl::StrCat("no implementation ", planned.task_name, " any more"));
  }
  if (autotvm::DumpPythonJson(impl->workload.args) != planned.workload) {
    return PlanDiffers(task, "its workload differs from the plan's");
  }
  const OpTemplate* op_template = FindOpTemplate(planned.task_name);
  if (op_template == nullptr) return PlanDiffers(task, "no kernel template for the plan's task");
  KernelCandidate c;
  c.implementation = static_cast<int>(impl - task.implementations.begin());
  c.task_name = planned.task_name;
  c.workload = impl->workload;
  c.fallback = planned.fallback;
  c.record_label = planned.record_label;
  c.record_cost = planned.record_cost;
  if (planned.fallback) {
    absl::StatusOr<autotvm::ConfigEntity> config = op_template->FallbackConfig(impl->workload);
    if (!config.ok()) return PlanDiffers(task, config.status().message());
    c.config = *std::move(config);
  } else {
    absl::StatusOr<autotvm::Record> record = autotvm::ParseRecordLine(planned.record);
    if (!record.ok()) return PlanDiffers(task, record.status().message());
    c.config = std::move(record->config);
  }
  absl::StatusOr<OpPlan> plan =
      SpecializeForTask(task, *op_template, impl->workload, c.config, limits, epilogue);
  if (!plan.ok()) return PlanDiffers(task, plan.status().message());
  c.plan = *std::move(plan);
  KernelChoice choice;
  choice.reasons.push_back(
      absl::StrCat("build plan: ", planned.fallback ? "fallback config" : planned.record_label,
                   " (", planned.task_name, ")"));
  choice.candidates.push_back(std::move(c));
  return choice;
}

absl::StatusOr<KernelChoice> ChooseKernel(const NodeTask& task, const autotvm::HistoryBest* history,
                                          const autotvm::Target& target, const DeviceLimits& limits,
                                          const Epilogue& epilogue) {
  KernelChoice choice;
  if (history != nullptr && history->size() > 0) {
    AddRecordCandidates(task, task.implementations, *history, target, limits, epilogue, &choice);
    // A pooled conv without records of its own takes the convolution's (the same knobs), so a
    // log tuned before the pooled task existed keeps its configs: the pool then runs after the
    // kernel or in it, as each config's tiles allow.
    if (task.pool >= 0 && choice.candidates.empty()) {
      std::vector<autotvm::Implementation> unpooled = task.implementations;
      for (autotvm::Implementation& impl : unpooled) {
        impl.workload.task_name = autotvm::kConv2dNhwcWgmma;
      }
      AddRecordCandidates(task, unpooled, *history, target, limits, epilogue, &choice);
    }
  }
  if (!AddFallback(task, limits, epilogue, &choice) && choice.candidates.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        task.name, ": no implementation can run it: ", absl::StrJoin(choice.reasons, "; ")));
  }
  return choice;
}

}  // namespace tunejit
