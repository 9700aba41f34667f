// Module and Kernel (jit/device.h): context-independent loading through cuLibrary*.
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "jit/device.h"
#include "jit/device_internal.h"

namespace tunejit {
namespace {

using jit_internal::ToStatus;

bool IsElf(std::string_view image) {
  return image.size() >= 4 && image.substr(0, 4) ==
                                  "\x7f"
                                  "ELF";
}

// A load failure is most often a cubin built for another GPU; say so.
absl::Status LoadError(CUresult result, absl::string_view what, const DeviceProperties& device) {
  absl::Status status = ToStatus(result, what);
  if (result == CUDA_ERROR_NO_BINARY_FOR_GPU || result == CUDA_ERROR_INVALID_SOURCE ||
      result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION || result == CUDA_ERROR_INVALID_IMAGE) {
    return absl::Status(status.code(),
                        absl::StrCat(status.message(), " (this device is ", device.name, ", ",
                                     device.arch.ToString(),
                                     "; was the kernel compiled for another "
                                     "architecture, or by a CUDA newer than the driver?)"));
  }
  return status;
}

}  // namespace

Module::State::~State() {
  if (library != nullptr)
    jit_internal::WarnIfFailed(context->cu->cuLibraryUnload(library), "cuLibraryUnload");
}

Module::Module(std::shared_ptr<State> state) : state_(std::move(state)) {}
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
Module::~Module() = default;

absl::StatusOr<Module> Module::Load(const Device& device, std::string_view image) {
  if (image.empty()) return absl::InvalidArgumentError("Module::Load: empty image");
  const jit_internal::ContextRef& context = device.state_->context;
  TUNEJIT_RETURN_IF_ERROR(context->MakeCurrent());
  // A cubin is an ELF image with its own size; PTX is text and must be NUL-terminated.
  std::string ptx_copy;
  const void* code = image.data();
  if (!IsElf(image)) {
    // Only text that declares itself PTX reaches the driver's PTX JIT: arbitrary bytes (a damaged
    // image) must come back as a status, and the driver's parser is not a place to find out.
    if (image.find(".version") == std::string_view::npos ||
        image.find(".target") == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Module::Load: the ", image.size(), "-byte image is neither a cubin (ELF) nor PTX"));
    }
    ptx_copy = std::string(image);
    code = ptx_copy.c_str();
  }
  auto state = std::make_shared<State>();
  state->context = context;
  CUlibrary library = nullptr;
  CUresult result =
      context->cu->cuLibraryLoadData(&library, code, nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (result != CUDA_SUCCESS) {
    return LoadError(result,
                     absl::StrCat("cuLibraryLoadData(", image.size(), "-byte ",
                                  IsElf(image) ? "cubin" : "PTX", ")"),
                     context->properties);
  }
  state->library = library;
  return Module(std::move(state));
}

absl::StatusOr<Kernel> Module::GetKernel(const std::string& lowered_name) const {
  if (state_ == nullptr) return absl::FailedPreconditionError("GetKernel on a moved-from Module");
  const jit_internal::ContextRef& context = state_->context;
  auto handle = std::make_shared<Kernel::Handle>();
  handle->module = state_;
  handle->context = context;
  CUresult result =
      context->cu->cuLibraryGetKernel(&handle->kernel, state_->library, lowered_name.c_str());
  if (result != CUDA_SUCCESS) {
    return ToStatus(
        result, absl::StrCat("cuLibraryGetKernel: no kernel '", lowered_name, "' in this module"));
  }
  // Resolving the function loads the library into this device's context now, so an image for the
  // wrong architecture fails here rather than at the first launch.
  TUNEJIT_RETURN_IF_ERROR(context->MakeCurrent());
  result = context->cu->cuKernelGetFunction(&handle->function, handle->kernel);
  if (result != CUDA_SUCCESS) {
    return LoadError(result, absl::StrCat("cuKernelGetFunction(", lowered_name, ")"),
                     context->properties);
  }
  return Kernel(std::move(handle), lowered_name);
}

namespace {

absl::StatusOr<int> Attribute(const jit_internal::PrimaryContext& context, CUfunction function,
                              CUfunction_attribute attribute, absl::string_view what) {
  TUNEJIT_RETURN_IF_ERROR(context.MakeCurrent());
  int value = 0;
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(context.cu->cuFuncGetAttribute(&value, attribute, function), what));
  return value;
}

}  // namespace

absl::StatusOr<int> Kernel::NumRegisters() const {
  return Attribute(*handle_->context, handle_->function, CU_FUNC_ATTRIBUTE_NUM_REGS,
                   "cuFuncGetAttribute(NUM_REGS)");
}

absl::StatusOr<int> Kernel::LocalBytes() const {
  return Attribute(*handle_->context, handle_->function, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES,
                   "cuFuncGetAttribute(LOCAL_SIZE_BYTES)");
}

absl::StatusOr<int> Kernel::StaticSharedBytes() const {
  return Attribute(*handle_->context, handle_->function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                   "cuFuncGetAttribute(SHARED_SIZE_BYTES)");
}

absl::Status Kernel::SetMaxDynamicSharedBytes(int bytes) const {
  TUNEJIT_RETURN_IF_ERROR(handle_->context->MakeCurrent());
  return ToStatus(
      handle_->context->cu->cuFuncSetAttribute(
          handle_->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes),
      absl::StrCat("cuFuncSetAttribute(", name_, ", MAX_DYNAMIC_SHARED_SIZE_BYTES=", bytes, ")"));
}

}  // namespace tunejit
