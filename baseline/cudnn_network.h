// File: baseline/cudnn_network.h
// The reference tunejit is measured against, in the same process: a Graph run in float32 through
// cuDNN (each conv with its fastest algorithm from cudnnFindConvolutionForwardAlgorithmEx, FMA
// math only, i.e. no TF32; bias + ReLU and the residual add via cudnnAddTensor /
// cudnnActivationForward (clip as clipped ReLU); max, average and global average pooling via
// cudnnPoolingForward; softmax via cudnnSoftmaxForward) and cuBLAS (dense, SGEMM with
// CUBLAS_DEFAULT_MATH). It gives the per-layer times for `tunejit run`'s table and the float32
// output every tunejit precision is checked against.
//
// BaselinePrecision::kFp16 is cuDNN's fastest path for the tensor-core precisions' tables
// instead: every 4-D tensor float16 NHWC, convolutions in tensor-op math with float32
// accumulation (the fastest cudnnFind candidate of any math that has the fused form), a conv
// followed by bias_add and relu as one cudnnConvolutionBiasActivationForward (its layer time is
// then all three), dense layers cublasGemmEx float16 with float32 compute, the other bias / ReLU /
// pool calls as in float32, on float16. SetInput and Output still
// take and give float32 NCHW (converted on the host, baseline/cudnn_layout.h), and a dense
// reading a flattened 4-D activation gets its weight columns in the NHWC flatten's order, so
// its output is the float32 network's within float16 rounding.
//
// cuDNN and cuBLAS use the CUDA runtime, which shares the device's primary context with jit/'s
// Device, so device pointers and streams mix freely. Built only when CMake finds cuDNN
// (TUNEJIT_HAVE_CUDNN); otherwise Create returns Unimplemented saying so.
//
//   TUNEJIT_ASSIGN_OR_RETURN(auto net, CudnnNetwork::Create(device, graph, weights));
//   TUNEJIT_RETURN_IF_ERROR(net->SetInput("input", pixels));
//   TUNEJIT_RETURN_IF_ERROR(net->Run());
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> logits, net->Output("logits"));
#ifndef TUNEJIT_BASELINE_CUDNN_NETWORK_H_
#define TUNEJIT_BASELINE_CUDNN_NETWORK_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/weights.h"
#include "jit/device.h"

namespace tunejit {

struct BaselineLayer {
  std::string name;       // graph node name of the conv / dense / pool ("features.0")
  std::string op;         // "conv2d", "dense", "max_pool2d", ...
  std::string algorithm;  // e.g. "WINOGRAD_NONFUSED", "cublasSgemm"
  double seconds = 0;     // median of the layer's own call(s), CUDA events
  // For conv2d / dense: the op alone (seconds) and with its bias + ReLU calls (with_epilogue), so
  // a table can compare like with like against tunejit's fused kernels.
  double with_epilogue_seconds = 0;
  // For conv2d: also with the max_pool2d reading the epilogue's output when one does (tunejit's
  // pooled conv tasks run all of it in one layer); otherwise with_epilogue_seconds.
  double with_pool_seconds = 0;
};

enum class BaselinePrecision {
  kFp32,  // float32 NCHW, FMA math only (no TF32): the ground truth
  kFp16,  // float16 NHWC on the tensor cores, float32 accumulation: cuDNN's fastest fp16 path
};
std::string_view BaselinePrecisionName(BaselinePrecision precision);  // "fp32" / "fp16"

// Whether this build has the cuDNN baseline (cuDNN found at configure time).
bool CudnnBaselineAvailable();

// The graph checks Create runs first, without a GPU: Graph::Validate, then every node must be one
// of conv2d (groups and dilation allowed), dense, bias_add, relu, max_pool2d, avg_pool2d,
// global_avg_pool2d, add, clip with clip_min 0 (cuDNN's clipped ReLU), flatten, softmax on float32
// tensors, with symmetric padding (cuDNN's 2-D descriptors have one pad per axis) and dimensions
// that fit cuDNN's int. Unimplemented naming the node otherwise, e.g.
//   node 3 'q' (quantize): the cuDNN baseline does not run quantize
absl::Status CheckCudnnSupport(const Graph& graph);
// Whether a clip node's range is a cuDNN activation: [0, max] (clipped ReLU; ReLU for max = inf).
bool ClipIsCudnnActivation(const NodeAttrs& attrs);

class CudnnNetwork {
 public:
  // Uploads the float32 weights, picks algorithms (cudnnFind times each candidate once: seconds at
  // batch 128) and allocates the largest workspace they need. Unimplemented for an op or dtype it
  // cannot run (naming the node), or when the build has no cuDNN.
  static absl::StatusOr<std::unique_ptr<CudnnNetwork>> Create(
      const Device& device, const Graph& graph, const WeightSet& weights,
      BaselinePrecision precision = BaselinePrecision::kFp32);
  virtual ~CudnnNetwork() = default;

  // `name` must be a graph input (kInput) with exactly that many elements.
  virtual absl::Status SetInput(const std::string& name, absl::Span<const float> values) = 0;
  virtual absl::Status Run() = 0;  // whole network, waits for it
  // Any non-weight tensor after Run. bias_add / relu run in place over an activation that has no
  // other consumer; such an overwritten tensor is FailedPrecondition (outputs never are).
  virtual absl::StatusOr<std::vector<float>> Output(const std::string& name) const = 0;
  // Median seconds of the whole network over `repeats` runs (after warm-up).
  virtual absl::StatusOr<double> TimeEndToEnd(int repeats) = 0;
  // Per conv / dense / add / pool / clip / softmax node, in node order (after a warm-up Run; conv,
  // dense and add also time their bias / relu followers in with_epilogue_seconds, a conv also
  // the pool after those in with_pool_seconds; other nodes have all three equal; a kFp16 conv
  // folded with its bias and relu includes them in all three). Leaves the activations as a Run
  // would.
  virtual absl::StatusOr<std::vector<BaselineLayer>> TimeLayers(int repeats) = 0;
  virtual std::string Version() const = 0;  // "cuDNN 9.14.0, cuBLAS 13.0.2"
};

}  // namespace tunejit

#endif  // TUNEJIT_BASELINE_CUDNN_NETWORK_H_
