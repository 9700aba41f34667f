// File: onnx/importer.h
// Internal to the ONNX importer (onnx/import.h): the state of one import and the helpers the
// per-op mappers (onnx/{ops,conv,dense,qdq,elementwise,shape_ops,slice_ops,norm_ops}.cc) build the
// Graph with. Each ONNX value name is bound to a Value: a graph tensor (input or activation), a
// constant known at import (initializers, Constant nodes, folded and fake-quantized weights), or a
// QuantizeLinear output. A node whose inputs are all constants is evaluated at import when
// onnx/fold.h knows its op (the shape arithmetic of PyTorch exports); otherwise mappers are looked
// up by op type in one table (FindOpMapper), not a switch.
//
//   absl::Status MapRelu(Importer& im, const onnx::NodeProto& n) {
//     TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
//     TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kRelu, {x}, {}, im.OutName(n)));
//     return im.BindOutput(n, 0, Value::Tensor(y));
//   }
#ifndef TUNEJIT_ONNX_IMPORTER_H_
#define TUNEJIT_ONNX_IMPORTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"
#include "onnx/import.h"
#include "onnx/onnx_pb.h"
#include "onnx/tensor.h"

namespace tunejit::onnx_import {

// What an ONNX value name stands for.
struct Value {
  int tensor = -1;  // graph tensor id (input / activation); -1 for a constant
  std::shared_ptr<const ConstTensor> constant;
  // > 0: a QuantizeLinear output of the float activation `tensor`: the ONNX value is the int8
  // round(x / qdq_scale). Only DequantizeLinear reads it (onnx/qdq.cc).
  float qdq_scale = 0;
  // An IsNaN output of the float activation `tensor` (a boolean the graph has no type for): only
  // Where(IsNaN(x), c, x) reads it (onnx/elementwise.cc).
  bool nan_test = false;

  static Value Tensor(int id) { return Value{id, nullptr, 0, false}; }
  static Value Constant(ConstTensor t) {
    return Value{-1, std::make_shared<const ConstTensor>(std::move(t)), 0, false};
  }
  bool is_constant() const { return constant != nullptr; }
};

class Importer {
 public:
  // `raw_data`: by graph.initializer index, the raw_data SplitInitializerData removed from
  // `model` (onnx/wire_split.h); empty when nothing was.
  Importer(const onnx::ModelProto& model, int64_t opset, const OnnxImportOptions& options,
           std::string source, std::vector<SharedBytes> raw_data = {});
  absl::StatusOr<OnnxModel> Run();

  int64_t opset() const { return opset_; }
  Graph& graph() { return graph_; }
  const std::string& source() const { return source_; }

  // Node inputs. `i` may be past the node's inputs or name "" (an omitted optional input).
  bool HasInput(const onnx::NodeProto& n, int i) const;
  absl::StatusOr<const Value*> Input(const onnx::NodeProto& n, int i);
  // A float32 activation; an error for constants, QuantizeLinear outputs and int64 activations
  // (token ids: only an embedding Gather reads them, onnx/slice_ops.cc).
  absl::StatusOr<int> FloatInput(const onnx::NodeProto& n, int i);
  // A constant input (`role` names it in errors, e.g. "weight").
  absl::StatusOr<std::shared_ptr<const ConstTensor>> ConstInput(const onnx::NodeProto& n, int i,
                                                                absl::string_view role);
  // The shape of input `i`, which must be a float32 activation (not a constant).
  absl::StatusOr<std::vector<int64_t>> ActivationShape(const onnx::NodeProto& n, int i);
  // A constant known now for value `name` (bound, or an initializer, decoded here); nullptr when
  // the name is not a constant (yet).
  absl::StatusOr<std::shared_ptr<const ConstTensor>> KnownConstant(const std::string& name);
  absl::Status BindOutput(const onnx::NodeProto& n, int i, Value v);
  // The graph tensor name for output `i` of `n` (the ONNX value name), plus `suffix` for
  // intermediate tensors (e.g. ".conv" before a bias_add); unique in the graph. i < 0: the
  // node's name instead.
  std::string OutName(const onnx::NodeProto& n, absl::string_view suffix = "", int i = 0);

  // Graph building. AddNode names the node after the ONNX node (plus `suffix`) and prefixes any
  // shape error with the node's label.
  absl::StatusOr<int> AddNode(const onnx::NodeProto& n, OpKind op, std::vector<int> inputs,
                              const NodeAttrs& attrs, std::string out_name,
                              absl::string_view suffix = "");
  // AddNode named after the node's output 0, and bound to it.
  absl::Status AddOutputNode(const onnx::NodeProto& n, OpKind op, std::vector<int> inputs,
                             const NodeAttrs& attrs);
  // `bytes` may be a constant's (a view into the model file): shared, not copied.
  int AddWeight(std::string name, DType dtype, std::vector<int64_t> shape, SharedBytes bytes);
  // A float32 weight holding constant `c` (integer constants converted), for an operand of binary,
  // concat or matmul; named after the constant, else `fallback_name`. A scalar becomes [1] when
  // the activation it meets has rank `rank` >= 1 (it broadcasts the same). Empty constants are an
  // error: the graph has no empty tensors.
  absl::StatusOr<int> ConstantWeight(const onnx::NodeProto& n, const ConstTensor& c,
                                     const std::string& fallback_name, size_t rank);
  // Input `i` as a graph tensor id: the float activation, or ConstantWeight of the constant.
  absl::StatusOr<int> TensorOrWeight(const onnx::NodeProto& n, int i, size_t rank = 0);
  absl::Span<const uint8_t> WeightBytes(int tensor) const { return weights_.at(tensor).span(); }
  void SetWeightBytes(int tensor, std::vector<uint8_t> bytes) {
    weights_[tensor] = std::move(bytes);
  }

  // Errors, prefixed "<source>: <Op> node '<name>' (inputs: a, b): ".
  absl::Status Error(const onnx::NodeProto& n, absl::string_view why) const;
  absl::Status Unsupported(const onnx::NodeProto& n, absl::string_view why) const;
  // `v`, or its error as Error(n, ...): for the node-free rules of onnx/shape_rules.h.
  template <typename T>
  absl::StatusOr<T> AtNode(const onnx::NodeProto& n, absl::StatusOr<T> v) const {
    if (!v.ok()) return Error(n, v.status().message());
    return v;
  }

  // Attributes (absent: the default); a wrong attribute type is an error.
  absl::StatusOr<int64_t> AttrInt(const onnx::NodeProto& n, absl::string_view name,
                                  int64_t fallback) const;
  absl::StatusOr<float> AttrFloat(const onnx::NodeProto& n, absl::string_view name,
                                  float fallback) const;
  absl::StatusOr<std::string> AttrString(const onnx::NodeProto& n, absl::string_view name,
                                         std::string fallback) const;
  // Absent: empty.
  absl::StatusOr<std::vector<int64_t>> AttrInts(const onnx::NodeProto& n,
                                                absl::string_view name) const;
  const onnx::AttributeProto* Attr(const onnx::NodeProto& n, absl::string_view name) const;
  // The axes of Squeeze / Unsqueeze / ReduceMean: the INTS attribute "axes" before opset
  // `input_since`, constant input `i` from it on (the other form is an error); nullopt if absent.
  absl::StatusOr<std::optional<std::vector<int64_t>>> AxesOperand(const onnx::NodeProto& n, int i,
                                                                  int64_t input_since);

  // How many nodes read ONNX value `name`, and whether it is a graph output.
  int Consumers(const std::string& name) const;
  bool IsGraphOutput(const std::string& name) const { return graph_outputs_.count(name) > 0; }
  // The one node that reads value `name`, when it has exactly one reader and is no graph output.
  const onnx::NodeProto* SoleConsumer(const std::string& name) const;
  // A later node whose output 0 a mapper already computed (MatMul taking its bias Add into the
  // dense): when the import reaches it, its output is bound to `v` and nothing else is done.
  void Absorb(const onnx::NodeProto* later, Value v) { absorbed_[later] = std::move(v); }

  // Constant folding's budget (bytes of folded constants in all, so that Expand or
  // ConstantOfShape cannot make a small file allocate without bound): charges the `dtype` tensor
  // of `dims`, or an error naming the node.
  absl::Status ChargeFold(const onnx::NodeProto& n, const std::vector<int64_t>& dims, DType dtype);

  // Convs by their output tensor (the conv2d's, or its bias_add's): what BatchNormalization folds
  // into.
  struct ConvRecord {
    int weight = -1;       // weight tensor id
    int bias = -1;         // bias tensor id, -1 when none
    int conv_output = -1;  // the conv2d node's output tensor
    std::string value;     // the ONNX value the conv (or a folded BatchNormalization) bound
  };
  std::map<int, ConvRecord>& convs() { return convs_; }

  // QDQ: the per-tensor int8 scale of activation `tensor` (a Q -> DQ pair on it), for
  // OnnxModel::activation_scales. A second, different scale for the same tensor keeps the larger
  // (the executor has one scale per tensor; the larger clips neither use), with a warning.
  void SetActivationScale(int tensor, float scale);
  void Warn(std::string message) { warnings_.push_back(std::move(message)); }
  // An Unimplemented error when an output from `first` on is used (e.g. MaxPool's Indices).
  absl::Status RequireUnusedOutputs(const onnx::NodeProto& n, int first) const;

  TensorSource tensor_source() const { return {options_.external_data_dir, source_}; }

 private:
  absl::Status BindInitializers();
  // What an initializer holds (what the file gives, not what its dims claim), for the fold budget.
  int64_t InitializerBytes(const onnx::TensorProto& t) const;
  absl::Status AddGraphInputs();
  absl::StatusOr<std::vector<int64_t>> InputShape(const onnx::ValueInfoProto& input) const;
  absl::Status ImportNode(const onnx::NodeProto& n);
  // The index of the first present input that is not a constant; -1 when all are.
  absl::StatusOr<int> FirstNonConstantInput(const onnx::NodeProto& n);
  // The value bound to `name`, decoding an initializer on first use; nullptr when unknown.
  absl::StatusOr<const Value*> Lookup(const std::string& name);
  absl::Status MarkOutputs();
  std::string UniqueTensorName(std::string base);
  std::string NodeName(const onnx::NodeProto& n) const;

  const onnx::ModelProto& model_;
  const int64_t opset_;
  const OnnxImportOptions options_;
  const std::string source_;
  Graph graph_;
  std::map<std::string, Value> values_;
  struct Initializer {
    const onnx::TensorProto* proto = nullptr;
    const SharedBytes* raw = nullptr;  // its raw_data when held outside `proto`
  };
  std::map<std::string, Initializer> initializers_;  // decoded on first use
  const std::vector<SharedBytes> raw_data_;
  std::map<std::string, int> consumers_;
  std::set<std::string> graph_outputs_;
  std::set<std::string> tensor_names_, node_names_;
  std::map<int, SharedBytes> weights_;  // by tensor id
  std::map<int, ConvRecord> convs_;
  std::map<int, float> activation_scales_;  // by tensor id (names can change in MarkOutputs)
  std::map<const onnx::NodeProto*, Value> absorbed_;
  int64_t fold_budget_ = 0;  // bytes constant folding may still produce
  int node_index_ = 0;
  std::vector<std::string> warnings_;
};

using OpMapper = absl::Status (*)(Importer& im, const onnx::NodeProto& n);
// The mapper for an ai.onnx op type; nullptr when unsupported.
OpMapper FindOpMapper(absl::string_view op_type);

// "[1, 3, 224, 224]": shapes in error messages.
std::string ShapeText(const std::vector<int64_t>& shape);

// Tensor `x` reshaped to `shape`: x itself when the shape is unchanged, a flatten when it is
// [N, prod(rest)] of a rank > 2 x (the executor's fast path), else a reshape node. The tensor and
// node are named after the node's output 0 plus `suffix` (onnx/shape_ops.cc).
absl::StatusOr<int> ReshapeTensor(Importer& im, const onnx::NodeProto& n, int x,
                                  std::vector<int64_t> shape, absl::string_view suffix = "");

// Mappers, by file: ops.cc (the table; Relu, Clip, Identity, Constant), conv.cc (windows, conv,
// batch norm, pools), dense.cc (Gemm, MatMul), elementwise.cc (unary and binary functions, Add,
// Cast), shape_ops.cc (Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat),
// slice_ops.cc (Slice, Split, Gather), norm_ops.cc (ReduceMean, LayerNormalization, Softmax).

absl::Status MapConv(Importer& im, const onnx::NodeProto& n);
absl::Status MapBatchNormalization(Importer& im, const onnx::NodeProto& n);
absl::Status MapMaxPool(Importer& im, const onnx::NodeProto& n);
absl::Status MapAveragePool(Importer& im, const onnx::NodeProto& n);
absl::Status MapGlobalAveragePool(Importer& im, const onnx::NodeProto& n);
absl::Status MapGemm(Importer& im, const onnx::NodeProto& n);
absl::Status MapMatMul(Importer& im, const onnx::NodeProto& n);

// Sigmoid, Tanh, Erf, Sqrt, Exp, Reciprocal, Neg, HardSigmoid, HardSwish, Gelu (by op type).
absl::Status MapUnaryFunction(Importer& im, const onnx::NodeProto& n);
// Sub, Mul, Div, Pow, Max, Min (by op type).
absl::Status MapBinaryFunction(Importer& im, const onnx::NodeProto& n);
absl::Status MapIsNaN(Importer& im, const onnx::NodeProto& n);
absl::Status MapWhere(Importer& im, const onnx::NodeProto& n);
absl::Status MapAdd(Importer& im, const onnx::NodeProto& n);
absl::Status MapCast(Importer& im, const onnx::NodeProto& n);

absl::Status MapShape(Importer& im, const onnx::NodeProto& n);
absl::Status MapSize(Importer& im, const onnx::NodeProto& n);
absl::Status MapReshape(Importer& im, const onnx::NodeProto& n);
absl::Status MapFlatten(Importer& im, const onnx::NodeProto& n);
absl::Status MapSqueeze(Importer& im, const onnx::NodeProto& n);
absl::Status MapUnsqueeze(Importer& im, const onnx::NodeProto& n);
absl::Status MapTranspose(Importer& im, const onnx::NodeProto& n);
absl::Status MapConcat(Importer& im, const onnx::NodeProto& n);
absl::Status MapPad(Importer& im, const onnx::NodeProto& n);
absl::Status MapExpand(Importer& im, const onnx::NodeProto& n);

absl::Status MapSlice(Importer& im, const onnx::NodeProto& n);
absl::Status MapSplit(Importer& im, const onnx::NodeProto& n);
absl::Status MapGather(Importer& im, const onnx::NodeProto& n);

absl::Status MapReduceMean(Importer& im, const onnx::NodeProto& n);
absl::Status MapReduceL2(Importer& im, const onnx::NodeProto& n);
absl::Status MapLayerNormalization(Importer& im, const onnx::NodeProto& n);
absl::Status MapSoftmax(Importer& im, const onnx::NodeProto& n);

// QDQ mappers (onnx/qdq.cc): fake quantization, imported as the float graph.
absl::Status MapQuantizeLinear(Importer& im, const onnx::NodeProto& n);
absl::Status MapDequantizeLinear(Importer& im, const onnx::NodeProto& n);

}  // namespace tunejit::onnx_import

#endif  // TUNEJIT_ONNX_IMPORTER_H_
