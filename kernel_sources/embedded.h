// File: kernel_sources/embedded.h
// The kernel templates in kernel_sources/*.cu and *.cuh, embedded into the binary at build time
// (cmake/embed_sources.cmake). jit/ hands them to NVRTC: the .cu as the program source and every
// .cuh as a virtual header, so `#include "common.cuh"` resolves inside NVRTC exactly as under nvcc.
//
//   const EmbeddedFile* f = FindKernelSource("dense.cu");
//   if (f == nullptr) return absl::NotFoundError(...);
#ifndef TUNEJIT_KERNEL_SOURCES_EMBEDDED_H_
#define TUNEJIT_KERNEL_SOURCES_EMBEDDED_H_

#include <string_view>

#include "absl/types/span.h"

namespace tunejit {

struct EmbeddedFile {
  std::string_view name;     // File name only, e.g. "dense.cu".
  std::string_view content;  // Full text as on disk at build time.
};

// Every embedded file, in a stable order.
absl::Span<const EmbeddedFile> EmbeddedKernelSources();

// The file called `name`, or nullptr.
const EmbeddedFile* FindKernelSource(std::string_view name);

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_EMBEDDED_H_
