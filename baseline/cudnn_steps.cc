#include "baseline/cudnn_steps.h"

#include <array>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace tunejit::baseline_internal {
namespace {

constexpr float kOne = 1.f;
constexpr float kZero = 0.f;

const TensorDesc& In(const StepArgs& a, int i) {
  return a.graph->tensor(a.graph->nodes()[a.node].inputs[i]);
}
const TensorDesc& Out(const StepArgs& a) {
  return a.graph->tensor(a.graph->nodes()[a.node].output);
}
const NodeAttrs& Attrs(const StepArgs& a) { return a.graph->nodes()[a.node].attrs; }

// cuDNN computes output sizes itself; a disagreement with the graph's shape inference would
// silently write a differently shaped tensor, so it is an error.
absl::Status CheckOutputDims(const StepArgs& a, const std::array<int, 4>& got) {
  if (got == As4d(Out(a).shape)) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(a.label, ": cuDNN output dims [",
                                          absl::StrJoin(got, ", "), "] differ from the graph's [",
                                          absl::StrJoin(Out(a).shape, ", "), "]"));
}

class ConvStep : public Step {
 public:
  absl::Status Run(const StepContext& ctx) const override {
    return Convolve(ctx.cudnn, algo_, ctx.workspace, ctx.workspace_bytes);
  }
  std::string algorithm() const override {
    return ConvAlgorithmName(algo_) + (bias_ != nullptr ? " + bias + relu" : "");
  }
  size_t workspace_bytes() const override { return workspace_bytes_; }

  absl::Status Init(const StepArgs& a, const StepContext& ctx, const FindWorkspace& find) {
    label_ = a.label;
    half_ = a.half;
    x_ = a.inputs[0];
    w_ = a.inputs[1];
    y_ = a.output;
    bias_ = a.folded_bias;
    TUNEJIT_RETURN_IF_ERROR(Describe(a));
    if (bias_ != nullptr) TUNEJIT_RETURN_IF_ERROR(DescribeFoldedEpilogue(a));
    return FindAlgorithm(ctx, find);
  }

 private:
  absl::Status Convolve(cudnnHandle_t cudnn, cudnnConvolutionFwdAlgo_t algo, void* workspace,
                        size_t workspace_bytes) const {
    if (bias_ == nullptr) {
      return CudnnOk(cudnnConvolutionForward(cudnn, &kOne, x_desc_.get(), x_, w_desc_.get(), w_,
                                             conv_desc_.get(), algo, workspace, workspace_bytes,
                                             &kZero, y_desc_.get(), y_),
                     "cudnnConvolutionForward", label_);
    }
    // z = y with alpha2 = 0: no residual input.
    return CudnnOk(cudnnConvolutionBiasActivationForward(
                       cudnn, &kOne, x_desc_.get(), x_, w_desc_.get(), w_, conv_desc_.get(), algo,
                       workspace, workspace_bytes, &kZero, y_desc_.get(), y_, bias_desc_.get(),
                       bias_, act_.get(), y_desc_.get(), y_),
                   "cudnnConvolutionBiasActivationForward", label_);
  }

  absl::Status DescribeFoldedEpilogue(const StepArgs& a) {
    TUNEJIT_ASSIGN_OR_RETURN(bias_desc_, MakeTensorDesc({Out(a).shape[1]}, label_, a.half));
    TUNEJIT_ASSIGN_OR_RETURN(act_, CreateActivationDesc(label_));
    return CudnnOk(
        cudnnSetActivationDescriptor(act_.get(), CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor", label_);
  }

  absl::Status Describe(const StepArgs& a) {
    const NodeAttrs& at = Attrs(a);
    const std::array<int, 4> w = As4d(In(a, 1).shape);
    TUNEJIT_ASSIGN_OR_RETURN(x_desc_, MakeTensorDesc(In(a, 0).shape, label_, a.half));
    TUNEJIT_ASSIGN_OR_RETURN(y_desc_, MakeTensorDesc(Out(a).shape, label_, a.half));
    TUNEJIT_ASSIGN_OR_RETURN(w_desc_, CreateFilterDesc(label_));
    TUNEJIT_ASSIGN_OR_RETURN(conv_desc_, CreateConvDesc(label_));
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(
        cudnnSetFilter4dDescriptor(w_desc_.get(), half_ ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT,
                                   half_ ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, w[0], w[1], w[2],
                                   w[3]),
        "cudnnSetFilter4dDescriptor", label_));
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(
        cudnnSetConvolution2dDescriptor(conv_desc_.get(), at.pad_top, at.pad_left, at.stride_h,
                                        at.stride_w, at.dilation_h, at.dilation_w,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor", label_));
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(cudnnSetConvolutionGroupCount(conv_desc_.get(), at.groups),
                                    "cudnnSetConvolutionGroupCount", label_));
    // Float32: FMA math, CUDA cores only, never TF32 tensor cores (the baseline is the float32
    // ground truth and the peer benchmark measured it this way). Float16: tensor cores (the
    // compute type above stays float32: float32 accumulation, as tunejit's fp16 kernels).
    TUNEJIT_RETURN_IF_ERROR(
        CudnnOk(cudnnSetConvolutionMathType(conv_desc_.get(),
                                            half_ ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH),
                "cudnnSetConvolutionMathType", label_));
    std::array<int, 4> got{};
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(
        cudnnGetConvolution2dForwardOutputDim(conv_desc_.get(), x_desc_.get(), w_desc_.get(),
                                              &got[0], &got[1], &got[2], &got[3]),
        "cudnnGetConvolution2dForwardOutputDim", label_));
    return CheckOutputDims(a, got);
  }

  // The fastest successful candidate within the find workspace (cudnnFind returns them sorted by
  // time) that runs in FMA math, or for float16 in any math.
  absl::Status FindAlgorithm(const StepContext& ctx, const FindWorkspace& find) {
    int max_count = 0;
    TUNEJIT_RETURN_IF_ERROR(
        CudnnOk(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max_count),
                "cudnnGetConvolutionForwardAlgorithmMaxCount", label_));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(max_count, 1));
    int returned = 0;
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(
        cudnnFindConvolutionForwardAlgorithmEx(
            ctx.cudnn, x_desc_.get(), x_, w_desc_.get(), w_, conv_desc_.get(), y_desc_.get(), y_,
            static_cast<int>(perf.size()), &returned, perf.data(), find.ptr, find.bytes),
        "cudnnFindConvolutionForwardAlgorithmEx", label_));
    std::vector<std::string> rejected;
    for (int i = 0; i < returned; ++i) {
      const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
      const bool tensor_ops =
          p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
      const bool usable =
          p.status == CUDNN_STATUS_SUCCESS && (half_ || !tensor_ops) && p.memory <= find.bytes;
      // A folded epilogue runs the candidate once: not every algorithm has the fused form.
      const bool fuses =
          usable && (bias_ == nullptr || Convolve(ctx.cudnn, p.algo, find.ptr, find.bytes).ok());
      if (fuses) {
        algo_ = p.algo;
        workspace_bytes_ = p.memory;
        return absl::OkStatus();
      }
      rejected.push_back(absl::StrCat(
          ConvAlgorithmName(p.algo), ": ", cudnnGetErrorString(p.status), ", math ", p.mathType,
          ", workspace ", p.memory, usable ? ", no fused bias + relu form" : ""));
    }
    return absl::UnimplementedError(absl::StrCat(
        label_, ": cudnnFindConvolutionForwardAlgorithmEx found no ", half_ ? "" : "FMA-math ",
        "algorithm within ", find.bytes, " workspace bytes (", absl::StrJoin(rejected, "; "), ")"));
  }

  std::string label_;
  bool half_ = false;
  CudnnTensorDesc x_desc_, y_desc_, bias_desc_;
  CudnnActivationDesc act_;
  CudnnFilterDesc w_desc_;
  CudnnConvDesc conv_desc_;
  cudnnConvolutionFwdAlgo_t algo_ = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t workspace_bytes_ = 0;
  const void* x_ = nullptr;
  const void* w_ = nullptr;
  const void* bias_ = nullptr;  // StepArgs::folded_bias
  void* y_ = nullptr;
};

// Row-major Y[M, N] = X[M, K] W[N, K]^T is column-major Y^T = W^T' X^T: cuBLAS sees W (stored
// as a K x N column-major matrix) transposed and X (K x M) as is. Float16: cublasGemmEx with
// float32 compute (tensor cores).
class DenseStep : public Step {
 public:
  DenseStep(const StepArgs& a)
      : label_(a.label),
        half_(a.half),
        m_(static_cast<int>(In(a, 0).shape[0])),
        n_(static_cast<int>(In(a, 1).shape[0])),
        k_(static_cast<int>(In(a, 0).shape[1])),
        x_(a.inputs[0]),
        w_(a.inputs[1]),
        y_(a.output) {}
  absl::Status Run(const StepContext& ctx) const override {
    if (half_) {
      return CublasOk(cublasGemmEx(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, n_, m_, k_, &kOne, w_,
                                   CUDA_R_16F, k_, x_, CUDA_R_16F, k_, &kZero, y_, CUDA_R_16F, n_,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx", label_);
    }
    return CublasOk(cublasSgemm(ctx.cublas, CUBLAS_OP_T, CUBLAS_OP_N, n_, m_, k_, &kOne,
                                static_cast<const float*>(w_), k_, static_cast<const float*>(x_),
                                k_, &kZero, static_cast<float*>(y_), n_),
                    "cublasSgemm", label_);
  }
  std::string algorithm() const override { return half_ ? "cublasGemmEx" : "cublasSgemm"; }

 private:
  std::string label_;
  bool half_;
  int m_, n_, k_;
  const void* x_;
  const void* w_;
  void* y_;
};

// y = x + bias[c] (bias_add), or y = x + r (the residual add: input 1 has y's shape), in place
// when the network aliased y to x; otherwise x is copied first because cudnnAddTensor accumulates
// into its destination.
class BiasAddStep : public Step {
 public:
  absl::Status Run(const StepContext& ctx) const override {
    if (x_ != y_) {
      TUNEJIT_RETURN_IF_ERROR(
          CudaOk(cudaMemcpyAsync(y_, x_, bytes_, cudaMemcpyDeviceToDevice, ctx.stream),
                 "cudaMemcpyAsync", label_));
    }
    return CudnnOk(
        cudnnAddTensor(ctx.cudnn, &kOne, bias_desc_.get(), bias_, &kOne, y_desc_.get(), y_),
        "cudnnAddTensor", label_);
  }
  std::string algorithm() const override { return "cudnnAddTensor"; }

  absl::Status Init(const StepArgs& a) {
    label_ = a.label;
    x_ = a.inputs[0];
    bias_ = a.inputs[1];
    y_ = a.output;
    bytes_ = Out(a).NumElements() * (a.half ? 2 : 4);
    TUNEJIT_ASSIGN_OR_RETURN(y_desc_, MakeTensorDesc(Out(a).shape, label_, a.half));
    // [C] as [1, C, 1, 1]: cudnnAddTensor broadcasts it over N, H, W (an add's operand matches).
    TUNEJIT_ASSIGN_OR_RETURN(bias_desc_, MakeTensorDesc(In(a, 1).shape, label_, a.half));
    return absl::OkStatus();
  }

 private:
  std::string label_;
  CudnnTensorDesc y_desc_, bias_desc_;
  const void* x_ = nullptr;
  const void* bias_ = nullptr;
  void* y_ = nullptr;
  size_t bytes_ = 0;
};

// ReLU and clip (cudnnActivationForward), max / average / global average pooling
// (cudnnPoolingForward) and row softmax (cudnnSoftmaxForward): x -> y with one descriptor pair.
class UnaryStep : public Step {
 public:
  absl::Status Run(const StepContext& ctx) const override {
    switch (op_) {
      case OpKind::kRelu:
      case OpKind::kClip:
        return CudnnOk(cudnnActivationForward(ctx.cudnn, act_.get(), &kOne, x_desc_.get(), x_,
                                              &kZero, y_desc_.get(), y_),
                       "cudnnActivationForward", label_);
      case OpKind::kMaxPool2d:
      case OpKind::kAvgPool2d:
      case OpKind::kGlobalAvgPool2d:
        return CudnnOk(cudnnPoolingForward(ctx.cudnn, pool_.get(), &kOne, x_desc_.get(), x_, &kZero,
                                           y_desc_.get(), y_),
                       "cudnnPoolingForward", label_);
      default:
        return CudnnOk(
            cudnnSoftmaxForward(ctx.cudnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_INSTANCE,
                                &kOne, x_desc_.get(), x_, &kZero, y_desc_.get(), y_),
            "cudnnSoftmaxForward", label_);
    }
  }
  std::string algorithm() const override {
    switch (op_) {
      case OpKind::kRelu:
      case OpKind::kClip:
        return "cudnnActivationForward";
      case OpKind::kMaxPool2d:
      case OpKind::kAvgPool2d:
      case OpKind::kGlobalAvgPool2d:
        return "cudnnPoolingForward";
      default:
        return "cudnnSoftmaxForward";
    }
  }

  absl::Status Init(const StepArgs& a) {
    label_ = a.label;
    op_ = a.graph->nodes()[a.node].op;
    x_ = a.inputs[0];
    y_ = a.output;
    // Softmax [rows, cols] is [rows, cols, 1, 1]: MODE_INSTANCE normalizes over C*H*W per row.
    TUNEJIT_ASSIGN_OR_RETURN(x_desc_, MakeTensorDesc(In(a, 0).shape, label_, a.half));
    TUNEJIT_ASSIGN_OR_RETURN(y_desc_, MakeTensorDesc(Out(a).shape, label_, a.half));
    if (op_ == OpKind::kRelu || op_ == OpKind::kClip) return InitActivation(a);
    if (op_ == OpKind::kSoftmax) return absl::OkStatus();
    return InitPool(a);
  }

 private:
  // Clip is [0, clip_max] here (CheckCudnnSupport): clipped ReLU, or ReLU for an infinite max.
  absl::Status InitActivation(const StepArgs& a) {
    TUNEJIT_ASSIGN_OR_RETURN(act_, CreateActivationDesc(label_));
    const NodeAttrs& at = Attrs(a);
    const bool clipped = op_ == OpKind::kClip && std::isfinite(at.clip_max);
    return CudnnOk(cudnnSetActivationDescriptor(
                       act_.get(), clipped ? CUDNN_ACTIVATION_CLIPPED_RELU : CUDNN_ACTIVATION_RELU,
                       CUDNN_PROPAGATE_NAN, clipped ? static_cast<double>(at.clip_max) : 0.0),
                   "cudnnSetActivationDescriptor", label_);
  }

  absl::Status InitPool(const StepArgs& a) {
    NodeAttrs at = Attrs(a);
    cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
    if (op_ == OpKind::kAvgPool2d) {
      mode = at.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                  : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    } else if (op_ == OpKind::kGlobalAvgPool2d) {
      // One window over the whole plane: a 1x1 output.
      const TensorDesc& x = In(a, 0);
      at =
          NodeAttrs{.pool_h = static_cast<int>(x.shape[2]), .pool_w = static_cast<int>(x.shape[3])};
      mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    }
    TUNEJIT_ASSIGN_OR_RETURN(pool_, CreatePoolDesc(label_));
    TUNEJIT_RETURN_IF_ERROR(CudnnOk(
        cudnnSetPooling2dDescriptor(pool_.get(), mode, CUDNN_PROPAGATE_NAN, at.pool_h, at.pool_w,
                                    at.pad_top, at.pad_left, at.stride_h, at.stride_w),
        "cudnnSetPooling2dDescriptor", label_));
    std::array<int, 4> got{};
    TUNEJIT_RETURN_IF_ERROR(
        CudnnOk(cudnnGetPooling2dForwardOutputDim(pool_.get(), x_desc_.get(), &got[0], &got[1],
                                                  &got[2], &got[3]),
                "cudnnGetPooling2dForwardOutputDim", label_));
    return CheckOutputDims(a, got);
  }

  std::string label_;
  OpKind op_ = OpKind::kRelu;
  CudnnTensorDesc x_desc_, y_desc_;
  CudnnActivationDesc act_;
  CudnnPoolDesc pool_;
  const void* x_ = nullptr;
  void* y_ = nullptr;
};

template <typename T, typename... InitArgs>
absl::StatusOr<std::unique_ptr<Step>> Built(std::unique_ptr<T> step, InitArgs&&... init_args) {
  TUNEJIT_RETURN_IF_ERROR(step->Init(std::forward<InitArgs>(init_args)...));
  return std::unique_ptr<Step>(std::move(step));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Step>> MakeStep(const StepArgs& args, const StepContext& ctx,
                                               const FindWorkspace& find) {
  switch (args.graph->nodes()[args.node].op) {
    case OpKind::kConv2d:
      return Built(std::make_unique<ConvStep>(), args, ctx, find);
    case OpKind::kDense:
      return std::unique_ptr<Step>(std::make_unique<DenseStep>(args));
    case OpKind::kBiasAdd:
    case OpKind::kAdd:
      return Built(std::make_unique<BiasAddStep>(), args);
    case OpKind::kRelu:
    case OpKind::kClip:
    case OpKind::kMaxPool2d:
    case OpKind::kAvgPool2d:
    case OpKind::kGlobalAvgPool2d:
    case OpKind::kSoftmax:
      return Built(std::make_unique<UnaryStep>(), args);
    case OpKind::kFlatten:
      return std::unique_ptr<Step>();
    default:
      return absl::UnimplementedError(
          absl::StrCat(args.label, ": the cuDNN baseline does not run this op"));
  }
}

std::string ConvAlgorithmName(cudnnConvolutionFwdAlgo_t algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return absl::StrCat("ALGO_", static_cast<int>(algo));
  }
}

}  // namespace tunejit::baseline_internal
