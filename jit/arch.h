// File: jit/arch.h
// A GPU architecture as NVRTC names it: "sm_90", "sm_90a", "sm_100". Parsed from user input (the
// `--arch` flag of `tunejit warm`) or read off a device.
//
//   absl::StatusOr<GpuArch> arch = ParseGpuArch("sm_90a");   // {9, 0, arch_specific=true}
//   arch->ToString() == "sm_90a"; arch->NvrtcOption() == "--gpu-architecture=sm_90a"
#ifndef TUNEJIT_JIT_ARCH_H_
#define TUNEJIT_JIT_ARCH_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tunejit {

struct GpuArch {
  int major = 0;
  int minor = 0;
  bool arch_specific = false;  // The "a" suffix (sm_90a): enables wgmma/setmaxnreg; not portable.

  int sm() const { return major * 10 + minor; }
  std::string ToString() const;     // "sm_90a"
  std::string NvrtcOption() const;  // "--gpu-architecture=sm_90a"
  friend bool operator==(const GpuArch&, const GpuArch&) = default;
};

// Parses "sm_XY" or "sm_XYa" (also "sm_XYf" is rejected with a clear message). Syntax only.
absl::StatusOr<GpuArch> ParseGpuArch(std::string_view text);

// The architectures the linked NVRTC can generate code for (nvrtcGetSupportedArchs).
std::vector<int> NvrtcSupportedSms();

// Parses and checks that this NVRTC can build it; e.g. "sm_70" under CUDA 13 fails with a message
// that names the supported range and says the GPU is not supported by this toolkit.
absl::StatusOr<GpuArch> ParseSupportedGpuArch(std::string_view text);

}  // namespace tunejit

#endif  // TUNEJIT_JIT_ARCH_H_
