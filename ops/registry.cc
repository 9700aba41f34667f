#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/op_template.h"
#include "ops/templates.h"

namespace tunejit {

// An explicit list (not static registration, which static linking silently drops). The order is
// Relay's among a node's implementations (conv2d_nchw or conv2d_NCHWc_int8, then winograd; dense
// small batch, then large): ties between records go to the earlier.
std::vector<const OpTemplate*> AllOpTemplates() {
  return {
      DenseSmallBatchTemplate(),
      DenseLargeBatchTemplate(),
      BatchMatmulTemplate(),
      Conv2dNchwTemplate(),
      Conv2dNchwcInt8Template(),
      DepthwiseConv2dNchwTemplate(),
      Conv2dNchwWinogradTemplate(),
      // tunejit-only Hopper tensor-core templates (sm_90a)
      DenseWgmmaTemplate(),
      Conv2dNhwcWgmmaTemplate(),
      Conv2dNhwcWgmmaPoolTemplate(),
      Conv2dNchwStemMmaTemplate(),
      // After the stem: where both take a conv (a 4x4 RGB patchify stem), the stem's fallback.
      Conv2dNchwPatchifyWgmmaTemplate(),
      DepthwiseConv2dNhwcTemplate(),
      // No node offers: the executor fuses attention chains and names it (ops/attention.h).
      AttentionMmaTemplate(),
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

std::vector<OpOffer> OffersFor(const OpRequest& request) {
  std::vector<OpOffer> offers;
  for (const OpTemplate* op : AllOpTemplates()) {
    std::optional<OpOffer> offer = op->Implement(request);
    if (!offer.has_value()) continue;
    if (!offers.empty() && offer->rank > offers.front().rank) continue;
    if (!offers.empty() && offer->rank < offers.front().rank) offers.clear();
    offers.push_back(std::move(*offer));
  }
  return offers;
}

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
