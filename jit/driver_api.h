// File: jit/driver_api.h (internal to jit/)
// The CUDA driver API, loaded at run time: dlopen("libcuda.so.1"), then every function we use is
// resolved once through cuGetProcAddress (falling back to dlsym of the versioned symbol) into one
// table. Nothing links against libcuda, so every tunejit program starts on a machine without a GPU.
//
//   TUNEJIT_ASSIGN_OR_RETURN(const DriverApi* cu, LoadDriver());
//   TUNEJIT_RETURN_IF_ERROR(ToStatus(cu->cuCtxSynchronize(), "cuCtxSynchronize"));
//
// The table is loaded once per process (thread-safe) and never unloaded: destructors of handles
// owned by static objects may still call into it during exit.
#ifndef TUNEJIT_JIT_DRIVER_API_H_
#define TUNEJIT_JIT_DRIVER_API_H_

#include <cuda.h>

#include "absl/status/statusor.h"

namespace tunejit::jit_internal {

// Every driver function jit/ calls. Names go through cuda.h's macros (cuMemAlloc -> cuMemAlloc_v2)
// so the member types match the versions this toolkit declares; cuGetProcAddress is asked for the
// plain name at the driver's version, which returns the same ABI.
#define TUNEJIT_DRIVER_FUNCTIONS(X) \
  X(cuGetErrorName)                 \
  X(cuGetErrorString)               \
  X(cuInit)                         \
  X(cuDriverGetVersion)             \
  X(cuDeviceGetCount)               \
  X(cuDeviceGet)                    \
  X(cuDeviceGetName)                \
  X(cuDeviceGetAttribute)           \
  X(cuDeviceTotalMem)               \
  X(cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease)      \
  X(cuCtxSetCurrent)                \
  X(cuCtxSynchronize)               \
  X(cuMemGetInfo)                   \
  X(cuMemAlloc)                     \
  X(cuMemFree)                      \
  X(cuMemcpyHtoD)                   \
  X(cuMemcpyHtoDAsync)              \
  X(cuMemHostAlloc)                 \
  X(cuMemFreeHost)                  \
  X(cuMemcpyDtoH)                   \
  X(cuMemcpyDtoD)                   \
  X(cuMemsetD8)                     \
  X(cuStreamCreate)                 \
  X(cuStreamDestroy)                \
  X(cuStreamSynchronize)            \
  X(cuStreamBeginCapture)           \
  X(cuStreamEndCapture)             \
  X(cuGraphInstantiate)             \
  X(cuGraphLaunch)                  \
  X(cuGraphExecDestroy)             \
  X(cuGraphDestroy)                 \
  X(cuEventCreate)                  \
  X(cuEventDestroy)                 \
  X(cuEventRecord)                  \
  X(cuEventSynchronize)             \
  X(cuEventElapsedTime)             \
  X(cuLibraryLoadData)              \
  X(cuLibraryUnload)                \
  X(cuLibraryGetKernel)             \
  X(cuKernelGetFunction)            \
  X(cuFuncGetAttribute)             \
  X(cuFuncSetAttribute)             \
  X(cuLaunchKernel)                 \
  X(cuLaunchKernelEx)               \
  X(cuTensorMapEncodeTiled)         \
  X(cuTensorMapEncodeIm2col)

struct DriverApi {
#define TUNEJIT_DRIVER_MEMBER_(name) decltype(&::name) name = nullptr;
  TUNEJIT_DRIVER_FUNCTIONS(TUNEJIT_DRIVER_MEMBER_)
#undef TUNEJIT_DRIVER_MEMBER_
  int driver_version = 0;  // cuDriverGetVersion, e.g. 13000
  bool via_get_proc_address = false;
};

// The loaded driver with cuInit done, or FailedPrecondition:
//   "no CUDA driver found (libcuda.so.1 could not be loaded: ...); this command needs an NVIDIA
//   GPU" "no CUDA device (cuInit failed: CUDA_ERROR_NO_DEVICE ...)"
// Zero devices is not an error here (see DeviceCount()).
absl::StatusOr<const DriverApi*> LoadDriver();

// The driver table if LoadDriver() has already succeeded, else nullptr. Never loads.
const DriverApi* LoadedDriverOrNull();

}  // namespace tunejit::jit_internal

#endif  // TUNEJIT_JIT_DRIVER_API_H_
