// File: jit/device_internal.h (internal to jit/)
// The state behind the public owners of jit/device.h. Every owner made from a Device holds a
// shared_ptr to the retained primary context (PrimaryContext), so the context is released only
// after the last buffer, stream, event and module made from it is gone, whatever order the caller
// destroys them in.
#ifndef TUNEJIT_JIT_DEVICE_INTERNAL_H_
#define TUNEJIT_JIT_DEVICE_INTERNAL_H_

#include <cuda.h>

#include <memory>

#include "absl/status/status.h"
#include "jit/device.h"
#include "jit/driver_api.h"

namespace tunejit {
namespace jit_internal {

struct PrimaryContext {
  const DriverApi* cu = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  DeviceProperties properties;
  int ordinal = 0;

  PrimaryContext() = default;
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;
  ~PrimaryContext();
  absl::Status MakeCurrent() const;
};

using ContextRef = std::shared_ptr<const PrimaryContext>;

}  // namespace jit_internal

struct Device::State {
  jit_internal::ContextRef context;
};

struct Module::State {
  jit_internal::ContextRef context;
  CUlibrary library = nullptr;
  ~State();
};

struct Kernel::Handle {
  std::shared_ptr<const void> module;  // Module::State; keeps the library loaded
  jit_internal::ContextRef context;    // the context `function` belongs to
  CUkernel kernel = nullptr;
  CUfunction function = nullptr;
};

struct Stream::State {
  jit_internal::ContextRef context;
  CUstream stream = nullptr;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  void DestroyGraph();
  ~State();
};

struct Event::State {
  jit_internal::ContextRef context;
  CUevent event = nullptr;
  ~State();
};

}  // namespace tunejit

#endif  // TUNEJIT_JIT_DEVICE_INTERNAL_H_
