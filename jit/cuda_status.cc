#include "jit/cuda_status.h"

#include <iostream>

#include "absl/strings/str_cat.h"
#include "jit/driver_api.h"

namespace tunejit::jit_internal {
namespace {

absl::StatusCode CodeFor(CUresult result) {
  switch (result) {
    case CUDA_ERROR_OUT_OF_MEMORY:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
      return absl::StatusCode::kResourceExhausted;
    case CUDA_ERROR_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::StatusCode CodeFor(nvrtcResult result) {
  switch (result) {
    case NVRTC_ERROR_OUT_OF_MEMORY:
      return absl::StatusCode::kResourceExhausted;
    case NVRTC_ERROR_INVALID_OPTION:
    case NVRTC_ERROR_COMPILATION:
    case NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID:
      return absl::StatusCode::kInvalidArgument;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

std::string CuErrorText(CUresult result) {
  const DriverApi* cu = LoadedDriverOrNull();
  const char* name = nullptr;
  const char* text = nullptr;
  // The names come from the driver; without one (a result produced by our own loader) we can only
  // print the number.
  if (cu != nullptr) {
    if (cu->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
    if (cu->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  }
  std::string out = name != nullptr ? name : absl::StrCat("CUresult ", static_cast<int>(result));
  if (text != nullptr) absl::StrAppend(&out, " (", text, ")");
  return out;
}

absl::Status CuErrorToStatus(CUresult result, absl::string_view context) {
  return absl::Status(CodeFor(result), absl::StrCat(context, ": ", CuErrorText(result)));
}

absl::Status NvrtcErrorToStatus(nvrtcResult result, absl::string_view context) {
  return absl::Status(CodeFor(result), absl::StrCat(context, ": ", nvrtcGetErrorString(result)));
}

void WarnIfFailed(CUresult result, absl::string_view context) {
  if (result == CUDA_SUCCESS || result == CUDA_ERROR_DEINITIALIZED) return;
  std::cerr << "tunejit: warning: " << context << " failed: " << CuErrorText(result) << "\n";
}

}  // namespace tunejit::jit_internal
