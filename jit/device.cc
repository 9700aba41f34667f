// Device, DeviceBuffer and KernelArgs (jit/device.h). Module/Kernel live in module.cc,
// Stream/Event in stream.cc.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "jit/device.h"

#include <algorithm>
#include "jit/device_internal.h"
#include "jit/driver_api.h"

namespace tunejit {
namespace {

using jit_internal::DriverApi;
using jit_internal::ToStatus;

absl::Status FillProperties(const DriverApi& cu, CUdevice device, DeviceProperties& p) {
  char name[256] = {};
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(cu.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  p.name = name;
  int major = 0, minor = 0, l2 = 0;
  const std::pair<CUdevice_attribute, int*> attributes[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &p.sm_count},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &p.max_threads_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, &p.max_block_dim[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, &p.max_block_dim[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, &p.max_block_dim[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, &p.max_grid_dim[0]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, &p.max_grid_dim[1]},
      {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, &p.max_grid_dim[2]},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &p.shared_bytes_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &p.shared_bytes_per_block_optin},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, &p.regs_per_block},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, &p.regs_per_sm},
      {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, &l2},
  };
  for (const auto& [attribute, out] : attributes) {
    TUNEJIT_RETURN_IF_ERROR(
        ToStatus(cu.cuDeviceGetAttribute(out, attribute, device),
                 absl::StrCat("cuDeviceGetAttribute(", static_cast<int>(attribute), ")")));
  }
  // Informational only (clocks are deprecated in CUDA 13's runtime): a driver that no longer
  // reports them must not make the device unusable.
  const std::pair<CUdevice_attribute, int*> optional_attributes[] = {
      {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, &p.clock_khz},
      {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, &p.memory_clock_khz},
      {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, &p.memory_bus_bits},
  };
  for (auto [attribute, out] : optional_attributes) {
    if (cu.cuDeviceGetAttribute(out, attribute, device) != CUDA_SUCCESS) *out = 0;
  }
  p.arch = GpuArch{major, minor, false};
  p.l2_bytes = l2;
  size_t total = 0;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(cu.cuDeviceTotalMem(&total, device), "cuDeviceTotalMem"));
  p.total_memory = static_cast<int64_t>(total);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int> DeviceCount() {
  TUNEJIT_ASSIGN_OR_RETURN(const DriverApi* cu, jit_internal::LoadDriver());
  int count = 0;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(cu->cuDeviceGetCount(&count), "cuDeviceGetCount"));
  return count;
}

absl::StatusOr<int> CudaDriverVersion() {
  TUNEJIT_ASSIGN_OR_RETURN(const DriverApi* cu, jit_internal::LoadDriver());
  return cu->driver_version;
}

absl::Status GpuAvailable() {
  TUNEJIT_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (count <= 0) {
    return absl::FailedPreconditionError(
        "no CUDA device (the driver reports 0 devices); this command needs an NVIDIA GPU");
  }
  return absl::OkStatus();
}

namespace jit_internal {

PrimaryContext::~PrimaryContext() {
  if (context != nullptr) {
    WarnIfFailed(cu->cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
  }
}

absl::Status PrimaryContext::MakeCurrent() const {
  return ToStatus(cu->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

}  // namespace jit_internal

// ---- Device ----

Device::Device(std::unique_ptr<State> state) : state_(std::move(state)) {}
Device::Device(Device&&) noexcept = default;
Device& Device::operator=(Device&&) noexcept = default;
Device::~Device() = default;

absl::StatusOr<Device> Device::Open(int ordinal) {
  TUNEJIT_ASSIGN_OR_RETURN(int count, DeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return count == 0 ? absl::FailedPreconditionError(
                            "no CUDA device (the driver reports 0 devices); this command needs "
                            "an NVIDIA GPU")
                      : absl::NotFoundError(absl::StrCat("no CUDA device ", ordinal, " (", count,
                                                         " devices present)"));
  }
  const DriverApi* cu = jit_internal::LoadedDriverOrNull();
  auto context = std::make_shared<jit_internal::PrimaryContext>();
  context->cu = cu;
  context->ordinal = ordinal;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(cu->cuDeviceGet(&context->device, ordinal), "cuDeviceGet"));
  TUNEJIT_RETURN_IF_ERROR(FillProperties(*cu, context->device, context->properties));
  CUcontext raw = nullptr;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(cu->cuDevicePrimaryCtxRetain(&raw, context->device),
                                   absl::StrCat("cuDevicePrimaryCtxRetain(device ", ordinal, ")")));
  context->context = raw;  // from here on the destructor releases it
  TUNEJIT_RETURN_IF_ERROR(context->MakeCurrent());
  auto state = std::make_unique<State>();
  state->context = std::move(context);
  return Device(std::move(state));
}

int Device::ordinal() const { return state_->context->ordinal; }

const DeviceProperties& Device::properties() const { return state_->context->properties; }

absl::Status Device::MakeCurrent() const { return state_->context->MakeCurrent(); }

absl::Status Device::Synchronize() const {
  TUNEJIT_RETURN_IF_ERROR(MakeCurrent());
  return ToStatus(state_->context->cu->cuCtxSynchronize(), "cuCtxSynchronize");
}

absl::StatusOr<int64_t> Device::MemoryInUse() const {
  TUNEJIT_RETURN_IF_ERROR(MakeCurrent());
  size_t free_bytes = 0, total_bytes = 0;
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(state_->context->cu->cuMemGetInfo(&free_bytes, &total_bytes), "cuMemGetInfo"));
  return static_cast<int64_t>(total_bytes - free_bytes);
}

// ---- DeviceBuffer ----

absl::StatusOr<DeviceBuffer> DeviceBuffer::Allocate(const Device& device, size_t bytes) {
  DeviceBuffer buffer;
  buffer.context_ = device.state_->context;
  if (bytes == 0) return buffer;  // cuMemAlloc rejects 0; an empty buffer is still useful
  TUNEJIT_RETURN_IF_ERROR(device.MakeCurrent());
  CUdeviceptr ptr = 0;
  TUNEJIT_RETURN_IF_ERROR(ToStatus(buffer.context_->cu->cuMemAlloc(&ptr, bytes),
                                   absl::StrCat("cuMemAlloc(", bytes, " bytes)")));
  buffer.ptr_ = ptr;
  buffer.size_ = bytes;
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(std::move(other.context_)),
      ptr_(std::exchange(other.ptr_, 0)),
      size_(std::exchange(other.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    DeviceBuffer old(std::move(*this));  // frees the current allocation on scope exit
    context_ = std::move(other.context_);
    ptr_ = std::exchange(other.ptr_, 0);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ == 0 || context_ == nullptr) return;
  if (context_->MakeCurrent().ok())
    jit_internal::WarnIfFailed(context_->cu->cuMemFree(ptr_), "cuMemFree");
}

namespace {

absl::Status CheckRange(size_t offset, size_t bytes, size_t size, const char* what) {
  if (offset > size || bytes > size - offset) {
    return absl::OutOfRangeError(absl::StrCat(what, ": ", bytes, " bytes at offset ", offset,
                                              " exceed the ", size, "-byte buffer"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DeviceBuffer::CopyFromHost(const void* src, size_t bytes, size_t offset) {
  TUNEJIT_RETURN_IF_ERROR(CheckRange(offset, bytes, size_, "CopyFromHost"));
  if (bytes == 0) return absl::OkStatus();
  TUNEJIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return ToStatus(context_->cu->cuMemcpyHtoD(ptr_ + offset, src, bytes), "cuMemcpyHtoD");
}

absl::Status DeviceBuffer::CopyToHost(void* dst, size_t bytes, size_t offset) const {
  TUNEJIT_RETURN_IF_ERROR(CheckRange(offset, bytes, size_, "CopyToHost"));
  if (bytes == 0) return absl::OkStatus();
  TUNEJIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return ToStatus(context_->cu->cuMemcpyDtoH(dst, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

absl::Status DeviceBuffer::Fill(uint8_t byte) {
  if (size_ == 0) return absl::OkStatus();
  TUNEJIT_RETURN_IF_ERROR(context_->MakeCurrent());
  return ToStatus(context_->cu->cuMemsetD8(ptr_, byte, size_), "cuMemsetD8");
}

absl::Status DeviceBuffer::RepeatPrefix(size_t unit) {
  if (unit == 0 || size_ % unit != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RepeatPrefix: ", unit, " does not divide the ", size_, "-byte buffer"));
  }
  TUNEJIT_RETURN_IF_ERROR(context_->MakeCurrent());
  // Doubling: each copy reads what is already there, so log2(size / unit) copies.
  for (size_t filled = unit; filled < size_;) {
    const size_t n = std::min(filled, size_ - filled);
    TUNEJIT_RETURN_IF_ERROR(
        ToStatus(context_->cu->cuMemcpyDtoD(ptr_ + filled, ptr_, n), "cuMemcpyDtoD"));
    filled += n;
  }
  return absl::OkStatus();
}

// ---- KernelArgs ----

void KernelArgs::AddBytes(const void* data, size_t size, size_t align) {
  if (align == 0 || (align & (align - 1)) != 0) align = alignof(std::max_align_t);
  // Each argument gets its own block, over-allocated so it can start at `align` whatever alignment
  // operator new[] gave: cuLaunchKernel reads each parameter through its own pointer.
  auto block = std::make_unique<std::byte[]>(size + align);
  auto base = reinterpret_cast<uintptr_t>(block.get());
  size_t offset = (align - base % align) % align;
  if (size > 0) std::memcpy(block.get() + offset, data, size);
  storage_.push_back(std::move(block));
  offsets_.push_back(offset);
  pointers_.push_back(storage_.back().get() + offset);
}

void** KernelArgs::pointers() { return pointers_.data(); }

}  // namespace tunejit
