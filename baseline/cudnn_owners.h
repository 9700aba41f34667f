// File: baseline/cudnn_owners.h
// Internal to baseline/ (includes cudnn.h / cublas_v2.h / cuda_runtime.h; built only with
// TUNEJIT_HAVE_CUDNN): one move-only RAII owner per cuDNN / cuBLAS / CUDA runtime handle, and the
// conversion of their error codes into absl::Status naming the call and the node.
//
//   TUNEJIT_ASSIGN_OR_RETURN(CudnnTensorDesc d, CreateTensorDesc(label));
//   TUNEJIT_RETURN_IF_ERROR(SetTensor4d(d.get(), shape, label));
//   TUNEJIT_RETURN_IF_ERROR(CudnnOk(cudnnAddTensor(...), "cudnnAddTensor", label));
#ifndef TUNEJIT_BASELINE_CUDNN_OWNERS_H_
#define TUNEJIT_BASELINE_CUDNN_OWNERS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tunejit::baseline_internal {

// "cudnnConvolutionForward (node 3 'features.2' (conv2d)): CUDNN_STATUS_BAD_PARAM ...". Codes map
// as the project does: allocation failures -> ResourceExhausted, not supported -> Unimplemented,
// bad parameters -> InvalidArgument, everything else -> Internal.
absl::Status CudnnOk(cudnnStatus_t status, std::string_view call, std::string_view where);
absl::Status CublasOk(cublasStatus_t status, std::string_view call, std::string_view where);
absl::Status CudaOk(cudaError_t error, std::string_view call, std::string_view where);

// Owns one handle; `Destroy` runs once, its error ignored (destructors never abort, and at exit
// the runtime may already be torn down).
template <typename T, auto Destroy>
class Owner {
 public:
  Owner() = default;
  explicit Owner(T handle) : handle_(handle) {}
  Owner(Owner&& other) noexcept : handle_(std::exchange(other.handle_, T{})) {}
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = std::exchange(other.handle_, T{});
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  ~Owner() { Reset(); }
  T get() const { return handle_; }

 private:
  void Reset() {
    if (handle_) (void)Destroy(handle_);
    handle_ = T{};
  }
  T handle_{};
};

using CudnnHandle = Owner<cudnnHandle_t, &cudnnDestroy>;
using CudnnTensorDesc = Owner<cudnnTensorDescriptor_t, &cudnnDestroyTensorDescriptor>;
using CudnnFilterDesc = Owner<cudnnFilterDescriptor_t, &cudnnDestroyFilterDescriptor>;
using CudnnConvDesc = Owner<cudnnConvolutionDescriptor_t, &cudnnDestroyConvolutionDescriptor>;
using CudnnPoolDesc = Owner<cudnnPoolingDescriptor_t, &cudnnDestroyPoolingDescriptor>;
using CudnnActivationDesc = Owner<cudnnActivationDescriptor_t, &cudnnDestroyActivationDescriptor>;
using CublasHandle = Owner<cublasHandle_t, &cublasDestroy>;
using CudaStream = Owner<cudaStream_t, &cudaStreamDestroy>;
using CudaEvent = Owner<cudaEvent_t, &cudaEventDestroy>;

absl::StatusOr<CudnnHandle> CreateCudnnHandle();
absl::StatusOr<CublasHandle> CreateCublasHandle();
absl::StatusOr<CudaStream> CreateStream();
absl::StatusOr<CudaEvent> CreateEvent();
absl::StatusOr<CudnnTensorDesc> CreateTensorDesc(std::string_view where);
absl::StatusOr<CudnnFilterDesc> CreateFilterDesc(std::string_view where);
absl::StatusOr<CudnnConvDesc> CreateConvDesc(std::string_view where);
absl::StatusOr<CudnnPoolDesc> CreatePoolDesc(std::string_view where);
absl::StatusOr<CudnnActivationDesc> CreateActivationDesc(std::string_view where);

// A graph shape as cuDNN's 4-D NCHW: rank 1 [C] -> [1, C, 1, 1], rank 2 [N, C] -> [N, C, 1, 1],
// rank 3 -> [N, C, H, 1], rank 4 as is, rank > 4 folds the trailing dims into W. The caller has
// checked (CheckCudnnSupport) that the element count fits an int.
std::array<int, 4> As4d(const std::vector<int64_t>& shape);
// A fully packed tensor descriptor of `shape` (through As4d): float32 NCHW, or with `half`
// float16 NHWC (the fp16 baseline's layout; the same memory as NCHW for ranks below 3).
absl::StatusOr<CudnnTensorDesc> MakeTensorDesc(const std::vector<int64_t>& shape,
                                               std::string_view where, bool half);

}  // namespace tunejit::baseline_internal

#endif  // TUNEJIT_BASELINE_CUDNN_OWNERS_H_
