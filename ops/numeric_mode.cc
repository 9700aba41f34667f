#include "ops/numeric_mode.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tunejit {

std::string_view NumericModeName(NumericMode mode) {
  switch (mode) {
    case NumericMode::kInt8Dp4a:
      return "int8";
    case NumericMode::kInt8TensorCores:
      return "int8-tensor-cores";
    case NumericMode::kFp16TensorCores:
      return "fp16-tensor-cores";
    case NumericMode::kFp32:
      break;
  }
  return "fp32";
}

std::string_view PrecisionName(NumericMode mode) {
  switch (mode) {
    case NumericMode::kInt8Dp4a:
    case NumericMode::kInt8TensorCores:
      return "int8";
    case NumericMode::kFp16TensorCores:
      return "fp16";
    case NumericMode::kFp32:
      break;
  }
  return "fp32";
}

bool IsInt8(NumericMode mode) {
  return mode == NumericMode::kInt8Dp4a || mode == NumericMode::kInt8TensorCores;
}

bool UsesTensorCores(NumericMode mode) {
  return mode == NumericMode::kInt8TensorCores || mode == NumericMode::kFp16TensorCores;
}

absl::StatusOr<NumericMode> ResolveNumericMode(std::string_view precision, bool tensor_cores) {
  if (precision == "fp16") return NumericMode::kFp16TensorCores;
  if (precision == "int8") {
    return tensor_cores ? NumericMode::kInt8TensorCores : NumericMode::kInt8Dp4a;
  }
  if (precision == "fp32") {
    if (tensor_cores) {
      return absl::InvalidArgumentError(
          "--tensor-cores needs --precision int8 (fp16 always runs on the tensor cores, fp32 "
          "never does)");
    }
    return NumericMode::kFp32;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown precision '", std::string(precision),
                                                 "' (expected fp32, int8 or fp16)"));
}

}  // namespace tunejit
