// libFuzzer target over the build plan parser (executor/build_plan.h): any bytes give a plan or a
// DataLoss, never a crash; a parsed plan re-encodes and parses to the same plan.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "executor/build_plan.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tunejit::BuildPlan> plan = tunejit::ParseBuildPlan(bytes);
  if (!plan.ok()) {
    if (!absl::IsDataLoss(plan.status())) std::abort();
    return 0;
  }
  absl::StatusOr<tunejit::BuildPlan> again =
      tunejit::ParseBuildPlan(tunejit::EncodeBuildPlan(*plan));
  if (!again.ok() || !(*again == *plan)) std::abort();
  return 0;
}
