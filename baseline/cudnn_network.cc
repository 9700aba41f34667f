// CudnnNetwork with cuDNN: tensors get device buffers at Create (weights uploaded, bias_add / relu
// in place where nothing else reads their input, flatten a view), every node a prebuilt Step
// (baseline/cudnn_steps.h), and Run enqueues them on one stream.
#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "baseline/cudnn_layout.h"
#include "baseline/cudnn_network.h"
#include "baseline/cudnn_owners.h"
#include "baseline/cudnn_steps.h"
#include "common/status_macros.h"
#include "graph/graph.h"

namespace tunejit {
namespace {

using baseline_internal::CublasOk;
using baseline_internal::CudaEvent;
using baseline_internal::CudaOk;
using baseline_internal::CudnnOk;
using baseline_internal::FindWorkspace;
using baseline_internal::Step;
using baseline_internal::StepArgs;
using baseline_internal::StepContext;

// cudnnFind's scratch, as in the peer benchmark (shared/bench/cudnn_convs.cpp): 4 GiB, less when
// the device has less free memory (keeping some back for cuDNN's own allocations).
constexpr size_t kFindWorkspaceCap = size_t{4} << 30;
constexpr size_t kFreeMemoryReserve = size_t{512} << 20;
constexpr int kWarmupRuns = 2;

void* AsPointer(DevicePtr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "9.19.0" from cuDNN's 91900 / cuBLAS's 130002 (major*10000 + minor*100 + patch).
std::string VersionString(size_t v) {
  return absl::StrCat(v / 10000, ".", (v % 10000) / 100, ".", v % 100);
}

class CudnnNetworkImpl final : public CudnnNetwork {
 public:
  static absl::StatusOr<std::unique_ptr<CudnnNetwork>> Build(const Device& device,
                                                             const Graph& graph,
                                                             const WeightSet& weights,
                                                             BaselinePrecision precision) {
    std::unique_ptr<CudnnNetworkImpl> net(
        new CudnnNetworkImpl(graph, device.ordinal(), precision == BaselinePrecision::kFp16));
    TUNEJIT_RETURN_IF_ERROR(net->Activate());
    TUNEJIT_RETURN_IF_ERROR(device.MakeCurrent());
    TUNEJIT_RETURN_IF_ERROR(net->CreateHandles());
    TUNEJIT_RETURN_IF_ERROR(net->PlaceTensors(device, weights));
    TUNEJIT_RETURN_IF_ERROR(net->BuildSteps(device));
    return std::unique_ptr<CudnnNetwork>(std::move(net));
  }

  absl::Status SetInput(const std::string& name, absl::Span<const float> values) override {
    const std::optional<int> id = graph_.FindTensor(name);
    if (!id || graph_.tensor(*id).kind != TensorKind::kInput) {
      return absl::NotFoundError(absl::StrCat("SetInput: '", name, "' is not a graph input"));
    }
    const TensorDesc& t = graph_.tensor(*id);
    if (static_cast<int64_t>(values.size()) != t.NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat("SetInput '", name, "': ", values.size(),
                                                     " values, expected ", t.NumElements()));
    }
    TUNEJIT_RETURN_IF_ERROR(Activate());
    return Upload(*id, values, absl::StrCat("input '", name, "'"));
  }

  absl::Status Run() override {
    TUNEJIT_RETURN_IF_ERROR(Activate());
    TUNEJIT_RETURN_IF_ERROR(Enqueue(all_nodes_));
    return CudaOk(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize", "Run");
  }

  absl::StatusOr<std::vector<float>> Output(const std::string& name) const override {
    const std::optional<int> id = graph_.FindTensor(name);
    if (!id || graph_.tensor(*id).kind == TensorKind::kWeight) {
      return absl::NotFoundError(absl::StrCat("Output: '", name, "' is not a graph activation"));
    }
    if (overwritten_by_[*id] >= 0) {
      const int n = overwritten_by_[*id];
      return absl::FailedPreconditionError(absl::StrCat(
          "Output: '", name, "' was overwritten in place by ", NodeLabel(n, graph_.nodes()[n])));
    }
    TUNEJIT_RETURN_IF_ERROR(Activate());
    TUNEJIT_RETURN_IF_ERROR(
        CudaOk(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize", "Output"));
    const std::string what = absl::StrCat("output '", name, "'");
    const int64_t n = graph_.tensor(*id).NumElements();
    if (!half_) {
      std::vector<float> values(n);
      TUNEJIT_RETURN_IF_ERROR(
          CudaOk(cudaMemcpy(values.data(), ptr_[*id], n * sizeof(float), cudaMemcpyDeviceToHost),
                 "cudaMemcpy", what));
      return values;
    }
    std::vector<uint16_t> bits(n);
    TUNEJIT_RETURN_IF_ERROR(
        CudaOk(cudaMemcpy(bits.data(), ptr_[*id], n * sizeof(uint16_t), cudaMemcpyDeviceToHost),
               "cudaMemcpy", what));
    return FromHalfChannelsLast(bits, host_dims_[*id]);
  }

  absl::StatusOr<double> TimeEndToEnd(int repeats) override {
    TUNEJIT_RETURN_IF_ERROR(Activate());
    return TimeNodes(all_nodes_, repeats);
  }

  absl::StatusOr<std::vector<BaselineLayer>> TimeLayers(int repeats) override;

  std::string Version() const override { return version_; }

 private:
  CudnnNetworkImpl(const Graph& graph, int ordinal, bool half)
      : graph_(graph), ordinal_(ordinal), half_(half) {}

  // cudart binds to the same primary context jit/'s Device retained; selecting the device makes
  // it current on this thread for every runtime, cuDNN and cuBLAS call that follows.
  absl::Status Activate() const {
    return CudaOk(cudaSetDevice(ordinal_), "cudaSetDevice", absl::StrCat("device ", ordinal_));
  }

  absl::Status CreateHandles();
  void ComputeHostDims();
  // Float32 NCHW `values` into tensor `id`'s buffer, float16 channels-last in half mode.
  absl::Status Upload(int id, absl::Span<const float> values, const std::string& what);
  absl::Status PlaceTensors(const Device& device, const WeightSet& weights);
  bool CanRunInPlace(int tensor, const std::vector<int>& consumers,
                     const std::vector<int>& producer) const;
  absl::StatusOr<void*> Allocate(const Device& device, int tensor);
  absl::Status BuildSteps(const Device& device);
  absl::Status Enqueue(const std::vector<int>& nodes) const;
  absl::StatusOr<double> TimeNodes(const std::vector<int>& nodes, int repeats);
  std::vector<int> WithFollowers(int node, std::initializer_list<OpKind> ops) const;
  std::optional<std::pair<int, int>> FoldableEpilogue(int conv) const;

  Graph graph_;
  int ordinal_;
  bool half_;  // BaselinePrecision::kFp16
  // Declared so that destruction runs steps, then handles, then the stream, then memory.
  std::vector<DeviceBuffer> buffers_;
  DeviceBuffer workspace_;
  baseline_internal::CudaStream stream_;
  baseline_internal::CudnnHandle cudnn_;
  baseline_internal::CublasHandle cublas_;
  CudaEvent start_, stop_;
  std::vector<std::unique_ptr<Step>> steps_;  // per node; null for flatten (a view)
  std::vector<int> all_nodes_;                // nodes with a step, in order
  std::vector<void*> ptr_;                    // per tensor id
  std::vector<int> overwritten_by_;           // per tensor id: in-place node reusing it, or -1
  // Per tensor id: the [d0, d1, d2, d3] its float32 NCHW host values have (As4d; a flatten's
  // output its source's, a dense weight after one [out, C, H, W]), which half mode stores
  // channels-last.
  std::vector<std::array<int64_t, 4>> host_dims_;
  StepContext ctx_;
  std::string version_;
};

absl::Status CudnnNetworkImpl::CreateHandles() {
  TUNEJIT_ASSIGN_OR_RETURN(stream_, baseline_internal::CreateStream());
  TUNEJIT_ASSIGN_OR_RETURN(cudnn_, baseline_internal::CreateCudnnHandle());
  TUNEJIT_ASSIGN_OR_RETURN(cublas_, baseline_internal::CreateCublasHandle());
  TUNEJIT_ASSIGN_OR_RETURN(start_, baseline_internal::CreateEvent());
  TUNEJIT_ASSIGN_OR_RETURN(stop_, baseline_internal::CreateEvent());
  TUNEJIT_RETURN_IF_ERROR(
      CudnnOk(cudnnSetStream(cudnn_.get(), stream_.get()), "cudnnSetStream", ""));
  TUNEJIT_RETURN_IF_ERROR(
      CublasOk(cublasSetStream(cublas_.get(), stream_.get()), "cublasSetStream", ""));
  // Plain float32 SGEMM: CUBLAS_DEFAULT_MATH never uses TF32 (that takes
  // CUBLAS_TF32_TENSOR_OP_MATH); read it back so a changed default cannot slip through.
  TUNEJIT_RETURN_IF_ERROR(
      CublasOk(cublasSetMathMode(cublas_.get(), CUBLAS_DEFAULT_MATH), "cublasSetMathMode", ""));
  cublasMath_t mode{};
  TUNEJIT_RETURN_IF_ERROR(
      CublasOk(cublasGetMathMode(cublas_.get(), &mode), "cublasGetMathMode", ""));
  if ((mode & CUBLAS_TF32_TENSOR_OP_MATH) != 0) {
    return absl::InternalError("cuBLAS math mode allows TF32; the baseline must be float32");
  }
  int cublas_version = 0;
  TUNEJIT_RETURN_IF_ERROR(
      CublasOk(cublasGetVersion(cublas_.get(), &cublas_version), "cublasGetVersion", ""));
  version_ = absl::StrCat("cuDNN ", VersionString(cudnnGetVersion()), ", cuBLAS ",
                          VersionString(static_cast<size_t>(cublas_version)));
  ctx_.cudnn = cudnn_.get();
  ctx_.cublas = cublas_.get();
  ctx_.stream = stream_.get();
  return absl::OkStatus();
}

void CudnnNetworkImpl::ComputeHostDims() {
  host_dims_.clear();
  for (const TensorDesc& t : graph_.tensors()) {
    const std::array<int, 4> d = baseline_internal::As4d(t.shape);
    host_dims_.push_back({d[0], d[1], d[2], d[3]});
  }
  for (const Node& node : graph_.nodes()) {  // in order: a flatten of a flatten chains
    if (node.op == OpKind::kFlatten) host_dims_[node.output] = host_dims_[node.inputs[0]];
  }
  for (const Node& node : graph_.nodes()) {
    if (node.op != OpKind::kDense) continue;
    std::array<int64_t, 4>& w = host_dims_[node.inputs[1]];
    const std::array<int64_t, 4>& x = host_dims_[node.inputs[0]];
    w = {w[0], x[1], x[2], x[3]};  // [out, K] with K = C * H * W of the flattened activation
  }
}

absl::Status CudnnNetworkImpl::Upload(int id, absl::Span<const float> values,
                                      const std::string& what) {
  if (!half_) {
    return CudaOk(
        cudaMemcpy(ptr_[id], values.data(), values.size() * sizeof(float), cudaMemcpyHostToDevice),
        "cudaMemcpy", what);
  }
  const std::vector<uint16_t> bits = ToHalfChannelsLast(values, host_dims_[id]);
  return CudaOk(
      cudaMemcpy(ptr_[id], bits.data(), bits.size() * sizeof(uint16_t), cudaMemcpyHostToDevice),
      "cudaMemcpy", what);
}

absl::StatusOr<void*> CudnnNetworkImpl::Allocate(const Device& device, int tensor) {
  const int64_t element_bytes = half_ ? 2 : 4;
  const size_t bytes =
      std::max<int64_t>(graph_.tensor(tensor).NumElements() * element_bytes, sizeof(float));
  absl::StatusOr<DeviceBuffer> buffer = DeviceBuffer::Allocate(device, bytes);
  if (!buffer.ok()) {
    return absl::Status(buffer.status().code(),
                        absl::StrCat("tensor '", graph_.tensor(tensor).name, "' (", bytes,
                                     " bytes): ", buffer.status().message()));
  }
  // Zeroed, so cudnnFind and a Run before SetInput never read uninitialized memory.
  TUNEJIT_RETURN_IF_ERROR(buffer->Fill(0));
  buffers_.push_back(*std::move(buffer));
  return AsPointer(buffers_.back().ptr());
}

bool CudnnNetworkImpl::CanRunInPlace(int tensor, const std::vector<int>& consumers,
                                     const std::vector<int>& producer) const {
  // Only a private intermediate: not an input/output the caller reads, read by no other node, and
  // not a flatten view (whose buffer its source shares with other readers).
  return graph_.tensor(tensor).kind == TensorKind::kActivation && consumers[tensor] == 1 &&
         producer[tensor] >= 0 && graph_.nodes()[producer[tensor]].op != OpKind::kFlatten;
}

absl::Status CudnnNetworkImpl::PlaceTensors(const Device& device, const WeightSet& weights) {
  const int num_tensors = static_cast<int>(graph_.tensors().size());
  ptr_.assign(num_tensors, nullptr);
  overwritten_by_.assign(num_tensors, -1);
  std::vector<int> consumers(num_tensors, 0), producer(num_tensors, -1);
  for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
    for (int id : graph_.nodes()[i].inputs) ++consumers[id];
    producer[graph_.nodes()[i].output] = i;
  }
  buffers_.reserve(num_tensors);
  ComputeHostDims();
  for (int id = 0; id < num_tensors; ++id) {
    const TensorDesc& t = graph_.tensor(id);
    if (t.kind != TensorKind::kWeight && t.kind != TensorKind::kInput) continue;
    TUNEJIT_ASSIGN_OR_RETURN(ptr_[id], Allocate(device, id));
    if (t.kind != TensorKind::kWeight) continue;
    const absl::Span<const uint8_t> bytes = weights.Get(id);
    if (static_cast<int64_t>(bytes.size()) != t.Bytes()) {
      return absl::InvalidArgumentError(absl::StrCat("weight '", t.name, "': ", bytes.size(),
                                                     " bytes bound, expected ", t.Bytes()));
    }
    const absl::Span<const float> values(reinterpret_cast<const float*>(bytes.data()),
                                         bytes.size() / sizeof(float));
    TUNEJIT_RETURN_IF_ERROR(Upload(id, values, absl::StrCat("weight '", t.name, "'")));
  }
  for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
    const Node& node = graph_.nodes()[i];
    const int in = node.inputs.empty() ? -1 : node.inputs[0];
    if (node.op == OpKind::kFlatten) {
      ptr_[node.output] = ptr_[in];
    } else if ((node.op == OpKind::kBiasAdd || node.op == OpKind::kRelu ||
                node.op == OpKind::kAdd) &&
               CanRunInPlace(in, consumers, producer)) {
      ptr_[node.output] = ptr_[in];
      overwritten_by_[in] = i;
    } else {
      TUNEJIT_ASSIGN_OR_RETURN(ptr_[node.output], Allocate(device, node.output));
    }
  }
  return absl::OkStatus();
}

absl::Status CudnnNetworkImpl::BuildSteps(const Device& device) {
  size_t free_bytes = 0, total_bytes = 0;
  TUNEJIT_RETURN_IF_ERROR(
      CudaOk(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo", "find workspace"));
  FindWorkspace find;
  find.bytes = std::min(kFindWorkspaceCap,
                        free_bytes > kFreeMemoryReserve ? free_bytes - kFreeMemoryReserve : 0);
  DeviceBuffer find_buffer;
  if (find.bytes > 0) {
    TUNEJIT_ASSIGN_OR_RETURN(find_buffer, DeviceBuffer::Allocate(device, find.bytes));
    find.ptr = AsPointer(find_buffer.ptr());
  }
  size_t workspace_bytes = 0;
  std::vector<bool> folded(graph_.nodes().size(), false);
  for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
    const Node& node = graph_.nodes()[i];
    if (folded[i]) {  // run by the conv before it
      steps_.push_back(nullptr);
      continue;
    }
    StepArgs args{&graph_, i, NodeLabel(i, node), {}, ptr_[node.output], half_};
    for (int id : node.inputs) args.inputs.push_back(ptr_[id]);
    if (const std::optional<std::pair<int, int>> epilogue = FoldableEpilogue(i)) {
      args.folded_bias = ptr_[graph_.nodes()[epilogue->first].inputs[1]];
      folded[epilogue->first] = folded[epilogue->second] = true;
    }
    TUNEJIT_ASSIGN_OR_RETURN(std::unique_ptr<Step> step, MakeStep(args, ctx_, find));
    if (step != nullptr) {
      workspace_bytes = std::max(workspace_bytes, step->workspace_bytes());
      all_nodes_.push_back(i);
    }
    steps_.push_back(std::move(step));
  }
  find_buffer = DeviceBuffer();  // free the find scratch before the real workspace
  if (workspace_bytes > 0) {
    TUNEJIT_ASSIGN_OR_RETURN(workspace_, DeviceBuffer::Allocate(device, workspace_bytes));
    ctx_.workspace = AsPointer(workspace_.ptr());
    ctx_.workspace_bytes = workspace_bytes;
  }
  return absl::OkStatus();
}

// Half mode: the bias_add and relu nodes after conv `conv` that one
// cudnnConvolutionBiasActivationForward can run with it (cuDNN's fused fp16 path, where its
// separate cudnnAddTensor / cudnnActivationForward on NHWC float16 take 3x the convolution's
// time): each the sole reader of the value before it (graph/graph.h SoleReader, the rule
// tunejit's own fusion uses), both run in place on the conv's buffer.
std::optional<std::pair<int, int>> CudnnNetworkImpl::FoldableEpilogue(int conv) const {
  if (!half_ || graph_.nodes()[conv].op != OpKind::kConv2d) return std::nullopt;
  auto in_place_reader = [&](int tensor, OpKind op) {
    const int reader = SoleReader(graph_, tensor, op);
    return reader >= 0 && ptr_[graph_.nodes()[reader].output] == ptr_[tensor] ? reader : -1;
  };
  const int bias = in_place_reader(graph_.nodes()[conv].output, OpKind::kBiasAdd);
  const int relu = bias < 0 ? -1 : in_place_reader(graph_.nodes()[bias].output, OpKind::kRelu);
  if (relu < 0) return std::nullopt;
  return std::make_pair(bias, relu);
}

absl::Status CudnnNetworkImpl::Enqueue(const std::vector<int>& nodes) const {
  for (int n : nodes) {
    if (steps_[n] != nullptr) TUNEJIT_RETURN_IF_ERROR(steps_[n]->Run(ctx_));  // folded: skip
  }
  return absl::OkStatus();
}

// Median over `repeats` of CUDA events around the nodes' calls, after kWarmupRuns untimed runs.
absl::StatusOr<double> CudnnNetworkImpl::TimeNodes(const std::vector<int>& nodes, int repeats) {
  if (repeats < 1) {
    return absl::InvalidArgumentError(absl::StrCat("repeats must be >= 1, got ", repeats));
  }
  std::vector<double> seconds;
  for (int r = 0; r < kWarmupRuns + repeats; ++r) {
    TUNEJIT_RETURN_IF_ERROR(
        CudaOk(cudaEventRecord(start_.get(), stream_.get()), "cudaEventRecord", "timing"));
    TUNEJIT_RETURN_IF_ERROR(Enqueue(nodes));
    TUNEJIT_RETURN_IF_ERROR(
        CudaOk(cudaEventRecord(stop_.get(), stream_.get()), "cudaEventRecord", "timing"));
    TUNEJIT_RETURN_IF_ERROR(
        CudaOk(cudaEventSynchronize(stop_.get()), "cudaEventSynchronize", "timing"));
    float ms = 0;
    TUNEJIT_RETURN_IF_ERROR(CudaOk(cudaEventElapsedTime(&ms, start_.get(), stop_.get()),
                                   "cudaEventElapsedTime", "timing"));
    if (r >= kWarmupRuns) seconds.push_back(ms * 1e-3);
  }
  return Median(std::move(seconds));
}

// The node followed by the node of each kind in `ops` reading the value so far (e.g. the bias_add
// reading its output, then the relu reading that; any may be absent), wherever they sit later in
// the graph.
std::vector<int> CudnnNetworkImpl::WithFollowers(int node,
                                                 std::initializer_list<OpKind> ops) const {
  std::vector<int> nodes = {node};
  int tensor = graph_.nodes()[node].output;
  for (OpKind want : ops) {
    for (int j = nodes.back() + 1; j < static_cast<int>(graph_.nodes().size()); ++j) {
      const Node& n = graph_.nodes()[j];
      if (n.op == want && !n.inputs.empty() && n.inputs[0] == tensor) {
        nodes.push_back(j);
        tensor = n.output;
        break;
      }
    }
  }
  return nodes;
}

absl::StatusOr<std::vector<BaselineLayer>> CudnnNetworkImpl::TimeLayers(int repeats) {
  if (repeats < 1) {
    return absl::InvalidArgumentError(absl::StrCat("repeats must be >= 1, got ", repeats));
  }
  TUNEJIT_RETURN_IF_ERROR(Run());  // every layer's input holds what a real run gives it
  std::vector<BaselineLayer> layers;
  for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
    const Node& node = graph_.nodes()[i];
    // The nodes tunejit runs as steps of their own (bias_add and relu it fuses, flatten is a view).
    const bool fusable =
        node.op == OpKind::kConv2d || node.op == OpKind::kDense || node.op == OpKind::kAdd;
    const bool alone = node.op == OpKind::kMaxPool2d || node.op == OpKind::kSoftmax ||
                       node.op == OpKind::kAvgPool2d || node.op == OpKind::kGlobalAvgPool2d ||
                       node.op == OpKind::kClip;
    if (!fusable && !alone) continue;
    BaselineLayer layer;
    layer.name = node.name;
    layer.op = std::string(OpKindName(node.op));
    layer.algorithm = steps_[i]->algorithm();
    TUNEJIT_ASSIGN_OR_RETURN(layer.seconds, TimeNodes({i}, repeats));
    layer.with_epilogue_seconds = layer.with_pool_seconds = layer.seconds;
    if (fusable) {
      const std::vector<int> epilogue = WithFollowers(i, {OpKind::kBiasAdd, OpKind::kRelu});
      TUNEJIT_ASSIGN_OR_RETURN(layer.with_epilogue_seconds, TimeNodes(epilogue, repeats));
      layer.with_pool_seconds = layer.with_epilogue_seconds;
      const std::vector<int> pooled =
          WithFollowers(i, {OpKind::kBiasAdd, OpKind::kRelu, OpKind::kMaxPool2d});
      if (node.op == OpKind::kConv2d && pooled.size() > epilogue.size()) {
        TUNEJIT_ASSIGN_OR_RETURN(layer.with_pool_seconds, TimeNodes(pooled, repeats));
      }
    }
    layers.push_back(std::move(layer));
  }
  // Repeated in-place epilogues leave the activations as one run does, but a final run makes
  // Output after TimeLayers obviously equal to Output after Run.
  TUNEJIT_RETURN_IF_ERROR(Run());
  return layers;
}

}  // namespace

bool CudnnBaselineAvailable() { return true; }

absl::StatusOr<std::unique_ptr<CudnnNetwork>> CudnnNetwork::Create(const Device& device,
                                                                   const Graph& graph,
                                                                   const WeightSet& weights,
                                                                   BaselinePrecision precision) {
  TUNEJIT_RETURN_IF_ERROR(CheckCudnnSupport(graph));
  return CudnnNetworkImpl::Build(device, graph, weights, precision);
}

}  // namespace tunejit
