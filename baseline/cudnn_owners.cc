#include "baseline/cudnn_owners.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit::baseline_internal {
namespace {

// Abseil 20220623 (Debian) has its own string_view, so std::string_view goes through std::string.
std::string Message(std::string_view call, std::string_view where, const std::string& what) {
  if (where.empty()) return absl::StrCat(std::string(call), ": ", what);
  return absl::StrCat(std::string(call), " (", std::string(where), "): ", what);
}

// Creates a handle with a cuDNN-style `create(&handle)` function into its owner.
template <typename OwnerT, typename T, typename Create>
absl::StatusOr<OwnerT> CreateCudnnObject(Create create, std::string_view call,
                                         std::string_view where) {
  T handle{};
  TUNEJIT_RETURN_IF_ERROR(CudnnOk(create(&handle), call, where));
  return OwnerT(handle);
}

}  // namespace

absl::Status CudnnOk(cudnnStatus_t status, std::string_view call, std::string_view where) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  const std::string msg =
      Message(call, where, absl::StrCat(cudnnGetErrorString(status), " (", status, ")"));
  // cuDNN 9 codes are grouped by thousands: 2xxx bad param, 3xxx not supported, 4xxx internal.
  if (status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) {
    return absl::ResourceExhaustedError(msg);
  }
  switch (static_cast<int>(status) / 1000) {
    case 2:
      return absl::InvalidArgumentError(msg);
    case 3:
      return absl::UnimplementedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status CublasOk(cublasStatus_t status, std::string_view call, std::string_view where) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const std::string msg = Message(
      call, where, absl::StrCat(cublasGetStatusName(status), ": ", cublasGetStatusString(status)));
  switch (status) {
    case CUBLAS_STATUS_ALLOC_FAILED:
      return absl::ResourceExhaustedError(msg);
    case CUBLAS_STATUS_INVALID_VALUE:
      return absl::InvalidArgumentError(msg);
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return absl::UnimplementedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

absl::Status CudaOk(cudaError_t error, std::string_view call, std::string_view where) {
  if (error == cudaSuccess) return absl::OkStatus();
  const std::string msg =
      Message(call, where, absl::StrCat(cudaGetErrorName(error), ": ", cudaGetErrorString(error)));
  if (error == cudaErrorMemoryAllocation) return absl::ResourceExhaustedError(msg);
  if (error == cudaErrorNoDevice || error == cudaErrorInsufficientDriver) {
    return absl::FailedPreconditionError(msg);
  }
  return absl::InternalError(msg);
}

absl::StatusOr<CudnnHandle> CreateCudnnHandle() {
  return CreateCudnnObject<CudnnHandle, cudnnHandle_t>(&cudnnCreate, "cudnnCreate", "");
}

absl::StatusOr<CublasHandle> CreateCublasHandle() {
  cublasHandle_t handle = nullptr;
  TUNEJIT_RETURN_IF_ERROR(CublasOk(cublasCreate(&handle), "cublasCreate", ""));
  return CublasHandle(handle);
}

absl::StatusOr<CudaStream> CreateStream() {
  cudaStream_t stream = nullptr;
  TUNEJIT_RETURN_IF_ERROR(CudaOk(cudaStreamCreate(&stream), "cudaStreamCreate", ""));
  return CudaStream(stream);
}

absl::StatusOr<CudaEvent> CreateEvent() {
  cudaEvent_t event = nullptr;
  TUNEJIT_RETURN_IF_ERROR(CudaOk(cudaEventCreate(&event), "cudaEventCreate", ""));
  return CudaEvent(event);
}

absl::StatusOr<CudnnTensorDesc> CreateTensorDesc(std::string_view where) {
  return CreateCudnnObject<CudnnTensorDesc, cudnnTensorDescriptor_t>(
      &cudnnCreateTensorDescriptor, "cudnnCreateTensorDescriptor", where);
}

absl::StatusOr<CudnnFilterDesc> CreateFilterDesc(std::string_view where) {
  return CreateCudnnObject<CudnnFilterDesc, cudnnFilterDescriptor_t>(
      &cudnnCreateFilterDescriptor, "cudnnCreateFilterDescriptor", where);
}

absl::StatusOr<CudnnConvDesc> CreateConvDesc(std::string_view where) {
  return CreateCudnnObject<CudnnConvDesc, cudnnConvolutionDescriptor_t>(
      &cudnnCreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor", where);
}

absl::StatusOr<CudnnPoolDesc> CreatePoolDesc(std::string_view where) {
  return CreateCudnnObject<CudnnPoolDesc, cudnnPoolingDescriptor_t>(
      &cudnnCreatePoolingDescriptor, "cudnnCreatePoolingDescriptor", where);
}

absl::StatusOr<CudnnActivationDesc> CreateActivationDesc(std::string_view where) {
  return CreateCudnnObject<CudnnActivationDesc, cudnnActivationDescriptor_t>(
      &cudnnCreateActivationDescriptor, "cudnnCreateActivationDescriptor", where);
}

std::array<int, 4> As4d(const std::vector<int64_t>& shape) {
  std::array<int64_t, 4> dims = {1, 1, 1, 1};
  if (shape.size() == 1) {
    dims[1] = shape[0];
  } else {
    for (size_t i = 0; i < shape.size(); ++i) dims[std::min<size_t>(i, 3)] *= shape[i];
  }
  return {static_cast<int>(dims[0]), static_cast<int>(dims[1]), static_cast<int>(dims[2]),
          static_cast<int>(dims[3])};
}

absl::StatusOr<CudnnTensorDesc> MakeTensorDesc(const std::vector<int64_t>& shape,
                                               std::string_view where, bool half) {
  TUNEJIT_ASSIGN_OR_RETURN(CudnnTensorDesc desc, CreateTensorDesc(where));
  const std::array<int, 4> d = As4d(shape);
  TUNEJIT_RETURN_IF_ERROR(CudnnOk(
      cudnnSetTensor4dDescriptor(desc.get(), half ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                 half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT, d[0], d[1], d[2], d[3]),
      "cudnnSetTensor4dDescriptor", where));
  return desc;
}

}  // namespace tunejit::baseline_internal
