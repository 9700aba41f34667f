// File: baseline/cudnn_steps.h
// Internal to baseline/: one prebuilt Step per graph node (descriptors created, algorithm chosen,
// device pointers bound at Create), so CudnnNetwork::Run is a loop of library calls with no
// allocation or lookups. Flatten has no step (its output aliases its input).
//
//   StepArgs args{&graph, index, label, inputs, output};
//   TUNEJIT_ASSIGN_OR_RETURN(std::unique_ptr<Step> step, MakeStep(args, ctx, find));
//   TUNEJIT_RETURN_IF_ERROR(step->Run(ctx));
#ifndef TUNEJIT_BASELINE_CUDNN_STEPS_H_
#define TUNEJIT_BASELINE_CUDNN_STEPS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "baseline/cudnn_owners.h"
#include "graph/graph.h"

namespace tunejit::baseline_internal {

// What every step runs with; owned by the network, outlives its steps. The stream is set on
// both handles. `workspace` holds at least the largest workspace_bytes() of any step.
struct StepContext {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
};

// Scratch for cudnnFindConvolutionForwardAlgorithmEx while steps are built: candidates needing
// more than `bytes` are not considered.
struct FindWorkspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};

struct StepArgs {
  const Graph* graph = nullptr;
  int node = -1;
  std::string label;          // NodeLabel(node), for errors
  std::vector<void*> inputs;  // device pointers of the node's inputs, in order
  void* output = nullptr;     // may equal inputs[0] for bias_add / relu (in place)
  bool half = false;          // BaselinePrecision::kFp16: float16 NHWC tensors, tensor-op math
  // A conv only: the bias of the bias_add + relu after it, folded into one
  // cudnnConvolutionBiasActivationForward writing `output` (the network gives those two nodes no
  // step). Null: the plain convolution.
  const void* folded_bias = nullptr;
};

class Step {
 public:
  virtual ~Step() = default;
  virtual absl::Status Run(const StepContext& ctx) const = 0;
  // The cuDNN algorithm or library call, for reports ("IMPLICIT_PRECOMP_GEMM", "cublasSgemm").
  virtual std::string algorithm() const = 0;
  virtual size_t workspace_bytes() const { return 0; }
};

// The step of a checked (CheckCudnnSupport) node; nullptr for flatten. Conv steps time their
// candidate algorithms here (cudnnFind runs them on the bound buffers, overwriting the output).
absl::StatusOr<std::unique_ptr<Step>> MakeStep(const StepArgs& args, const StepContext& ctx,
                                               const FindWorkspace& find);

// "IMPLICIT_GEMM", "WINOGRAD_NONFUSED", ... (the enum name without CUDNN_CONVOLUTION_FWD_ALGO_).
std::string ConvAlgorithmName(cudnnConvolutionFwdAlgo_t algo);

}  // namespace tunejit::baseline_internal

#endif  // TUNEJIT_BASELINE_CUDNN_STEPS_H_
