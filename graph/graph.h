// File: graph/graph.h
// A small, model-agnostic inference graph: named tensors (inputs, weights, activations, outputs)
// and nodes in topological order, one output each. It is what the executor will walk: built-in
// models (graph/vgg16.h) and, later, importers produce it; Validate() checks it node by node and
// names the node, op and field on error, e.g.
//   node 4 'features.2' (conv2d): input 1 'features.2.weight' shape [64, 32, 3, 3]: expected
//   [64, 64, 3, 3] (CI 64 / groups 1)
// Ops are unfused here (conv2d, then bias_add, then relu); fusing them into the templates'
// epilogues (ops/op_template.h Epilogue) is the executor's job.
//
//   Graph g;
//   int x = g.AddTensor({"x", {1, 3, 8, 8}, DType::kF32, TensorKind::kInput});
//   int w = g.AddTensor({"w", {4, 3, 3, 3}, DType::kF32, TensorKind::kWeight});
//   TUNEJIT_ASSIGN_OR_RETURN(int y, g.AddNode("conv", OpKind::kConv2d, {x, w}, attrs, "y",
//                                             TensorKind::kOutput));
//   TUNEJIT_RETURN_IF_ERROR(g.Validate());
#ifndef TUNEJIT_GRAPH_GRAPH_H_
#define TUNEJIT_GRAPH_GRAPH_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "autotvm/workload.h"
#include "common/elementwise_fn.h"
#include "graph/dtype.h"

namespace tunejit {

enum class TensorKind { kInput, kWeight, kActivation, kOutput };
std::string_view TensorKindName(TensorKind kind);

struct TensorDesc {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::kF32;
  TensorKind kind = TensorKind::kActivation;
  int64_t NumElements() const;
  int64_t Bytes() const { return NumElements() * DTypeSize(dtype); }
};

// Inputs per op (tensor ids, in this order) and the output:
//   conv2d      data NCHW, weight [CO, CI/groups, KH, KW]        -> NCHW (f32, or i8 x i8 -> i32)
//   dense       data [M, K], weight [N, K]                         -> [M, N] (f32, or i8 -> i32)
//   bias_add    x [N, C, ...], bias [C] (same dtype as x)          -> like x
//   relu        x                                                  -> like x
//   max_pool2d  x NCHW (f32 or i8), padding counts as -inf         -> NCHW, floor output size
//   flatten     x [N, ...]                                         -> [N, prod(...)] (a view)
//   softmax     x f32, over attrs.axis                             -> like x
//   quantize    x f32 (attrs.scale)                                -> i8 like x
//   dequantize  x i8/i32, scale f32 [C] or [1] (C = dim 1)         -> f32 like x
//   requantize  x i32, scale f32 [C] or [1]                        -> i8 like x
//   add         x, y f32 of the same shape (residual add)          -> like x
//   avg_pool2d  x NCHW f32 (attrs.count_include_pad)               -> NCHW, floor output size
//   global_avg_pool2d  x [N, C, H, W] f32                          -> [N, C, 1, 1]
//   clip        x f32 (attrs.clip_min <= attrs.clip_max)           -> like x
// The general tensor ops (float32; the ONNX importer's, for models beyond plain CNNs). Axes are
// non-negative here (importers normalize ONNX's negative ones):
//   unary       x (attrs.unary; hard_sigmoid reads attrs.alpha, attrs.beta, replace_nan
//               attrs.alpha) -> like x
//   binary      a, b with numpy broadcasting (attrs.binary); either may be a weight
//                                                                  -> the broadcast shape
//   concat      x0, x1, ... equal but for attrs.axis; any may be a weight -> joined on the axis
//   transpose   x (attrs.perm, a permutation of its dims)          -> permuted
//   reshape     x (attrs.shape: the same element count)            -> attrs.shape (a view)
//   slice       x: [attrs.start, attrs.end) by attrs.step > 0 on attrs.axis -> narrowed
//   reduce_mean x over attrs.axes (sorted, unique; attrs.keepdims) -> reduced
//   layer_norm  x, scale, bias (weights of x's dims from attrs.axis on; attrs.epsilon)
//                                                                  -> like x
//   matmul      a [..., M, K], b [..., K, N] (batch dims broadcast; either may be a weight)
//                                                                  -> [..., M, N]
//   gather      table f32 [V, ...] (a weight: an embedding), indices i64 of any shape (an
//               activation, e.g. token ids): rows of the table by index. An index in [-V, 0)
//               counts from the end (ONNX Gather); any other out of [0, V) is clamped to it, so
//               a bad id reads a real row instead of memory past the table
//                                                                  -> indices' dims + [...]
enum class OpKind {
  kConv2d,
  kDense,
  kBiasAdd,
  kRelu,
  kMaxPool2d,
  kFlatten,
  kSoftmax,
  kQuantize,
  kDequantize,
  kRequantize,
  kAdd,
  kAvgPool2d,
  kGlobalAvgPool2d,
  kClip,
  kUnary,
  kBinary,
  kConcat,
  kTranspose,
  kReshape,
  kSlice,
  kReduceMean,
  kLayerNorm,
  kMatMul,
  kGather
};
std::string_view OpKindName(OpKind op);

struct NodeAttrs {
  // conv2d, max_pool2d and avg_pool2d.
  int stride_h = 1, stride_w = 1;
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  // conv2d only.
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
  // max_pool2d and avg_pool2d window.
  int pool_h = 2, pool_w = 2;
  // avg_pool2d: whether padded positions count in the divisor (ONNX AveragePool's default: no).
  bool count_include_pad = false;
  // clip: y = min(max(x, clip_min), clip_max); unbounded by default, as ONNX Clip without its
  // min / max inputs (ReLU6 is [0, 6]).
  float clip_min = -std::numeric_limits<float>::infinity();
  float clip_max = std::numeric_limits<float>::infinity();
  // quantize: q = round(x / scale).
  float scale = 1.f;
  // unary / binary: the function; hard_sigmoid's slope and offset (ONNX's defaults).
  UnaryFn unary = UnaryFn::kSigmoid;
  BinaryFn binary = BinaryFn::kAdd;
  float alpha = 0.2f, beta = 0.5f;
  // softmax, concat, slice, layer_norm: the axis; softmax's -1 (its default) is the last one.
  int axis = -1;
  // slice: the kept range [start, end) of `axis`, every `step`-th element (0 <= start < end <=
  // dim; importers clamp ONNX's).
  int64_t start = 0, end = 0, step = 1;
  // transpose: output dim i is input dim perm[i]. reshape: the output shape. reduce_mean: the axes.
  std::vector<int64_t> perm = {}, shape = {}, axes = {};
  bool keepdims = true;   // reduce_mean
  float epsilon = 1e-5f;  // layer_norm
};

struct Node {
  std::string name;  // e.g. "features.0" (torchvision module names where there is one)
  OpKind op = OpKind::kRelu;
  std::vector<int> inputs;  // tensor ids
  int output = -1;          // tensor id
  NodeAttrs attrs;
};

class Graph {
 public:
  // Adds a tensor and returns its id. Names are checked by Validate (not here) so builders stay
  // simple; FindTensor returns the first of repeated names.
  int AddTensor(TensorDesc desc);
  // Appends a node whose output tensor (kind `kind`, named `output_name`) gets the shape and dtype
  // inferred from the inputs (graph/shape_inference.h). Returns the output tensor id, or the
  // inference error naming the node.
  absl::StatusOr<int> AddNode(std::string name, OpKind op, std::vector<int> inputs,
                              const NodeAttrs& attrs, std::string output_name,
                              TensorKind kind = TensorKind::kActivation);
  // Appends a node as given (for tests and importers that state output shapes themselves).
  void AddNodeUnchecked(Node node) { nodes_.push_back(std::move(node)); }

  // Checks: unique tensor and node names, ids in range, inputs/weights never produced by a node,
  // every activation/output produced exactly once before any use (topological order), per-op input
  // counts, kinds, shapes and dtypes (the declared output must equal the inferred one).
  absl::Status Validate() const;

  std::optional<int> FindTensor(std::string_view name) const;
  const std::vector<TensorDesc>& tensors() const { return tensors_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const TensorDesc& tensor(int id) const { return tensors_[id]; }
  // For builders renaming or re-kinding a tensor after AddNode (e.g. marking the last one output).
  TensorDesc& mutable_tensor(int id) { return tensors_[id]; }
  std::vector<int> TensorsOfKind(TensorKind kind) const;

 private:
  absl::Status ValidateNode(int index, std::vector<int>* producer) const;

  std::vector<TensorDesc> tensors_;
  std::vector<Node> nodes_;
};

// "node 3 'features.2' (conv2d)": the prefix of every node error.
std::string NodeLabel(int index, const Node& node);

// Multiply-accumulates of a conv2d or dense node (0 for other ops); total over the graph.
int64_t NodeMacs(const Graph& graph, const Node& node);
int64_t GraphMacs(const Graph& graph);

// A conv node's shape, strides, padding and groups as AutoTVM's parameters, float32 dtypes.
autotvm::Conv2dParams ConvGeometry(const Graph& graph, const Node& node);

// The node reading activation `t` when it is its only reader (as any of its inputs), or -1.
int OnlyReader(const Graph& graph, int t);

// The node reading activation `t` when it is its only reader, of kind `op`, with `t` as its data
// (a bias_add's bias a weight), or -1: what the executor folds into a conv's task (a 2x2 max pool)
// and fuses into its producer's step, and what the cuDNN baseline fuses, by this one rule.
int SoleReader(const Graph& graph, int t, OpKind op);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_GRAPH_H_
