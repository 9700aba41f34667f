// File: jit/device.h
// The GPU side of jit/: the CUDA driver, loaded at run time (dlopen "libcuda.so.1" +
// cuGetProcAddress), so every program starts on a machine without a GPU and only the calls that
// need one fail, with a clear FailedPrecondition ("no CUDA driver found ..." / "no CUDA device").
//
// One RAII owner per driver handle, all move-only:
//   Device        retains the device's primary context (cuDevicePrimaryCtxRetain/Release)
//   DeviceBuffer  cuMemAlloc / cuMemFree
//   Stream        cuStreamCreate / cuStreamDestroy
//   Event         cuEventCreate / cuEventDestroy
//   Module        cuLibraryLoadData / cuLibraryUnload (context-independent loading)
//   Kernel        a function of a Module; holds a shared_ptr to the Module's handle, so a Kernel
//                 keeps its module loaded (jitify2's model).
// No globals hold "current" state: every call takes the Device/Stream it acts on. Destructors never
// abort (CUDA_ERROR_DEINITIALIZED at exit is ignored).
//
//   TUNEJIT_ASSIGN_OR_RETURN(Device dev, Device::Open(0));
//   TUNEJIT_ASSIGN_OR_RETURN(Module mod, Module::Load(dev, program.cubin));
//   TUNEJIT_ASSIGN_OR_RETURN(Kernel k, mod.GetKernel(program.lowered_names.at(expr)));
//   TUNEJIT_ASSIGN_OR_RETURN(Stream s, Stream::Create(dev));
//   KernelArgs args; args.Add(out.ptr()); args.Add(n);
//   TUNEJIT_RETURN_IF_ERROR(s.Launch(k, shape, args));
#ifndef TUNEJIT_JIT_DEVICE_H_
#define TUNEJIT_JIT_DEVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "jit/arch.h"
#include "jit/kernel_spec.h"

namespace tunejit {

using DevicePtr = uint64_t;  // CUdeviceptr, without including cuda.h outside jit/.

namespace jit_internal {
struct PrimaryContext;  // jit/device_internal.h: the retained primary context, shared by owners.
}  // namespace jit_internal

// OK if a driver is loadable and at least one device exists; otherwise why not. Never aborts.
absl::Status GpuAvailable();
absl::StatusOr<int> DeviceCount();
// The driver's CUDA version (cuDriverGetVersion), e.g. 13000; FailedPrecondition without a driver.
absl::StatusOr<int> CudaDriverVersion();

struct DeviceProperties {
  std::string name;
  GpuArch arch;  // sm_90 for an H200 (arch_specific false; use sm_90a to opt in)
  int sm_count = 0;
  int max_threads_per_block = 0;
  int max_block_dim[3] = {0, 0, 0};
  int max_grid_dim[3] = {0, 0, 0};
  int shared_bytes_per_block = 0;        // default limit (48 KiB)
  int shared_bytes_per_block_optin = 0;  // with cuFuncSetAttribute (227 KiB on Hopper)
  int regs_per_block = 0;
  int regs_per_sm = 0;
  int l2_bytes = 0;
  int clock_khz = 0;
  int memory_clock_khz = 0;  // peak memory clock, for the roofline's bandwidth
  int memory_bus_bits = 0;   // global memory bus width
  int64_t total_memory = 0;
  // Peak DRAM bytes/s (2 transfers per clock, DDR/HBM): 4.8e12 on an H200.
  double PeakMemoryBytesPerSecond() const {
    return 2.0 * memory_clock_khz * 1e3 * (memory_bus_bits / 8.0);
  }
};

class Device {
 public:
  static absl::StatusOr<Device> Open(int ordinal);
  Device(Device&&) noexcept;
  Device& operator=(Device&&) noexcept;
  ~Device();

  int ordinal() const;
  const DeviceProperties& properties() const;
  // Makes this device's primary context current on the calling thread. Every member of every
  // owner below does this itself; callers need it only around foreign code.
  absl::Status MakeCurrent() const;
  absl::Status Synchronize() const;
  // Bytes in use on the device (total - free), for peak-memory reports.
  absl::StatusOr<int64_t> MemoryInUse() const;

 private:
  struct State;
  explicit Device(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
  friend class DeviceBuffer;
  friend class Stream;
  friend class Event;
  friend class Module;
  friend class StagedCopier;
};

class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(const Device& device, size_t bytes);
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&&) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&&) noexcept;
  ~DeviceBuffer();

  DevicePtr ptr() const { return ptr_; }
  size_t size() const { return size_; }
  absl::Status CopyFromHost(const void* src, size_t bytes, size_t offset = 0);
  absl::Status CopyToHost(void* dst, size_t bytes, size_t offset = 0) const;
  absl::Status Fill(uint8_t byte);  // e.g. poison outputs with 0xFF before a test run
  // Copies the first `unit` bytes over the rest of the buffer, `unit` at a time (device to device):
  // one uploaded image becomes a batch of copies without a batch-sized host buffer.
  absl::Status RepeatPrefix(size_t unit);

 private:
  // Every owner shares the retained primary context, so it outlives them all whatever the order
  // of destruction.
  std::shared_ptr<const jit_internal::PrimaryContext> context_;
  DevicePtr ptr_ = 0;
  size_t size_ = 0;
};

// Kernel parameters packed for cuLaunchKernel: each Add copies the value into owned storage.
class KernelArgs {
 public:
  template <typename T>
  void Add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    AddBytes(&value, sizeof(T), alignof(T));
  }
  void AddBytes(const void* data, size_t size, size_t align);
  void** pointers();  // stable until the next Add
  size_t count() const { return offsets_.size(); }

 private:
  std::vector<std::unique_ptr<std::byte[]>> storage_;
  std::vector<size_t> offsets_;
  std::vector<void*> pointers_;
};

class Module;

class Kernel {
 public:
  Kernel(Kernel&&) noexcept = default;
  Kernel(const Kernel&) = default;
  Kernel& operator=(const Kernel&) = default;
  Kernel& operator=(Kernel&&) noexcept = default;
  const std::string& name() const { return name_; }
  // Registers / local (spill) bytes / static shared bytes, as reported by the driver.
  absl::StatusOr<int> NumRegisters() const;
  absl::StatusOr<int> LocalBytes() const;
  absl::StatusOr<int> StaticSharedBytes() const;
  // Raises the dynamic shared-memory limit (needed above 48 KiB).
  absl::Status SetMaxDynamicSharedBytes(int bytes) const;

 private:
  friend class Module;
  friend class Stream;
  struct Handle;
  Kernel(std::shared_ptr<const Handle> handle, std::string name)
      : handle_(std::move(handle)), name_(std::move(name)) {}
  std::shared_ptr<const Handle> handle_;  // Keeps the module loaded.
  std::string name_;
};

class Module {
 public:
  // Loads a cubin (or PTX) image; context independent (cuLibraryLoadData).
  static absl::StatusOr<Module> Load(const Device& device, std::string_view image);
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  ~Module();
  absl::StatusOr<Kernel> GetKernel(const std::string& lowered_name) const;

 private:
  struct State;
  explicit Module(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

class Event;

class Stream {
 public:
  static absl::StatusOr<Stream> Create(const Device& device);
  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  ~Stream();

  // Launch failures name the kernel, grid, block and shared memory.
  absl::Status Launch(const Kernel& kernel, const LaunchShape& shape, KernelArgs& args);
  absl::Status Synchronize();
  absl::Status Record(const Event& event);
  // CUDA graph capture of everything launched between Begin and End, then replay.
  absl::Status BeginCapture();
  absl::Status EndCaptureAndInstantiate();  // replaces any previous graph of this stream
  absl::Status ReplayGraph();
  void* native() const;  // CUstream, for cuDNN/cuBLAS interop in graph/ and benchmarks

 private:
  struct State;
  explicit Stream(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

class Event {
 public:
  static absl::StatusOr<Event> Create(const Device& device);
  Event(Event&&) noexcept;
  Event& operator=(Event&&) noexcept;
  ~Event();
  absl::Status Synchronize();
  // Milliseconds between two recorded events.
  static absl::StatusOr<float> ElapsedMs(const Event& start, const Event& end);

 private:
  friend class Stream;
  struct State;
  explicit Event(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tunejit

#endif  // TUNEJIT_JIT_DEVICE_H_
