#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/op_template.h"
#include "ops/templates.h"

namespace tunejit {

// An explicit list (not static registration, which static linking silently drops).
std::vector<const OpTemplate*> AllOpTemplates() {
  return {
      DenseSmallBatchTemplate(),
      DenseLargeBatchTemplate(),
      Conv2dNchwTemplate(),
      DepthwiseConv2dNchwTemplate(),
      Conv2dNchwWinogradTemplate(),
      Conv2dNchwcInt8Template(),
      // tunejit-only Hopper tensor-core templates (sm_90a)
      DenseWgmmaTemplate(),
      Conv2dNhwcWgmmaTemplate(),
      Conv2dNhwcWgmmaPoolTemplate(),
      Conv2dNchwStemMmaTemplate(),
  };
}

const OpTemplate* FindOpTemplate(std::string_view task_name) {
  for (const OpTemplate* op : AllOpTemplates()) {
    if (op->task_name() == task_name) return op;
  }
  return nullptr;
}

namespace {

// The template whose space `task_name` indexes: its own, or one that lists it as an alias.
const OpTemplate* FindSpaceOwner(std::string_view task_name) {
  if (const OpTemplate* op = FindOpTemplate(task_name)) return op;
  for (const OpTemplate* op : AllOpTemplates()) {
    for (std::string_view alias : op->space_aliases()) {
      if (alias == task_name) return op;
    }
  }
  return nullptr;
}

}  // namespace

bool HasConfigSpace(std::string_view task_name) { return FindSpaceOwner(task_name) != nullptr; }

absl::StatusOr<autotvm::ConfigSpace> BuildConfigSpace(const autotvm::Workload& workload,
                                                      const autotvm::Target& target) {
  const OpTemplate* op = FindSpaceOwner(workload.task_name);
  if (op == nullptr) {
    return absl::UnimplementedError(absl::StrCat("no config space for task ", workload.task_name));
  }
  return op->ConfigSpace(workload, target);
}

autotvm::RecordCheck CheckRecord(const autotvm::Record& record) {
  if (!HasConfigSpace(record.workload.task_name)) return autotvm::CheckRecord(record, nullptr);
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(record.workload, record.target);
  if (!space.ok()) {
    autotvm::RecordCheck c;
    c.message = absl::StrCat("cannot build the space: ", space.status().message());
    return c;
  }
  return autotvm::CheckRecord(record, &*space);
}

}  // namespace tunejit
