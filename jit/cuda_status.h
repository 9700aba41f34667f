// File: jit/cuda_status.h (internal to jit/)
// The one place where CUDA driver and NVRTC result codes become absl::Status (XLA's cuda_status.h
// pattern: an inline fast path for success, the formatting out of line).
//
//   TUNEJIT_RETURN_IF_ERROR(ToStatus(cu->cuMemAlloc(&ptr, bytes), "cuMemAlloc"));
//   -> ResourceExhausted("cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)")
//
// Mapping: out of memory / out of launch resources -> ResourceExhausted, not found -> NotFound,
// everything else -> Internal. (NVRTC compilation errors are reported by NvrtcCompile itself as
// InvalidArgument with the log attached; they never reach this mapping.)
#ifndef TUNEJIT_JIT_CUDA_STATUS_H_
#define TUNEJIT_JIT_CUDA_STATUS_H_

#include <cuda.h>
#include <nvrtc.h>

#include <string>
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace tunejit::jit_internal {

absl::Status CuErrorToStatus(CUresult result, absl::string_view context);
absl::Status NvrtcErrorToStatus(nvrtcResult result, absl::string_view context);

inline absl::Status ToStatus(CUresult result, absl::string_view context) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  return CuErrorToStatus(result, context);
}

inline absl::Status ToStatus(nvrtcResult result, absl::string_view context) {
  if (result == NVRTC_SUCCESS) return absl::OkStatus();
  return NvrtcErrorToStatus(result, context);
}

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; works before and without a loaded driver.
std::string CuErrorText(CUresult result);

// For destructors, which must not fail: ignores success and CUDA_ERROR_DEINITIALIZED (the driver
// shutting down at process exit) and writes anything else to stderr.
void WarnIfFailed(CUresult result, absl::string_view context);

}  // namespace tunejit::jit_internal

#endif  // TUNEJIT_JIT_CUDA_STATUS_H_
