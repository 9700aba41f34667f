#include "onnx/importer.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/fold.h"

namespace tunejit::onnx_import {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;

// What constant folding may produce beyond twice the file's own initializers: far above the
// shape arithmetic and small tables of real models, far below what would exhaust memory.
constexpr int64_t kFoldBaseBytes = int64_t{256} << 20;

std::string AttrTypeName(int type) {
  return AttributeProto::AttributeType_IsValid(type)
             ? AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(type))
             : absl::StrCat(type);
}

}  // namespace

std::string ShapeText(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

Importer::Importer(const onnx::ModelProto& model, int64_t opset, const OnnxImportOptions& options,
                   std::string source, std::vector<SharedBytes> raw_data)
    : model_(model),
      opset_(opset),
      options_(options),
      source_(std::move(source)),
      raw_data_(std::move(raw_data)) {
  for (const NodeProto& n : model_.graph().node()) {
    for (const std::string& in : n.input()) ++consumers_[in];
  }
  for (const onnx::ValueInfoProto& out : model_.graph().output()) graph_outputs_.insert(out.name());
}

absl::StatusOr<OnnxModel> Importer::Run() {
  TUNEJIT_RETURN_IF_ERROR(BindInitializers());
  TUNEJIT_RETURN_IF_ERROR(AddGraphInputs());
  for (const NodeProto& n : model_.graph().node()) {
    TUNEJIT_RETURN_IF_ERROR(ImportNode(n));
    ++node_index_;
  }
  TUNEJIT_RETURN_IF_ERROR(MarkOutputs());
  if (absl::Status st = graph_.Validate(); !st.ok()) {
    return absl::InternalError(
        absl::StrCat(source_, ": imported graph is invalid: ", st.message()));
  }
  std::vector<SharedBytes> bytes(graph_.tensors().size());
  for (auto& [id, b] : weights_) bytes[id] = std::move(b);
  TUNEJIT_ASSIGN_OR_RETURN(
      WeightSet weights,
      WeightsFromImport(graph_, std::move(bytes), absl::StrCat("weights from ", source_)));
  absl::flat_hash_map<std::string, float> scales;
  for (const auto& [id, scale] : activation_scales_) scales[graph_.tensor(id).name] = scale;
  OnnxModel out{std::move(graph_),    std::move(weights), opset_, "",
                std::move(warnings_), std::move(scales)};
  out.producer = absl::StrCat(model_.producer_name(), model_.producer_version().empty() ? "" : " ",
                              model_.producer_version());
  return out;
}

int64_t Importer::InitializerBytes(const onnx::TensorProto& t) const {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) {
    return static_cast<int64_t>(t.ByteSizeLong());
  }
  // External data is only read from a model file, where it must exist at its declared size.
  if (options_.external_data_dir.empty()) return 0;
  const std::optional<int64_t> count =
      CheckedElements(std::vector<int64_t>(t.dims().begin(), t.dims().end()));
  const std::optional<DType> dtype = DTypeFromOnnx(t.data_type());
  return count && dtype ? *count * DTypeSize(*dtype) : 0;
}

absl::Status Importer::BindInitializers() {
  int64_t initializer_bytes = 0;
  for (int i = 0; i < model_.graph().initializer_size(); ++i) {
    const onnx::TensorProto& t = model_.graph().initializer(i);
    const SharedBytes* raw = nullptr;
    if (static_cast<size_t>(i) < raw_data_.size() && !raw_data_[i].empty()) raw = &raw_data_[i];
    initializers_[t.name()] = {&t, raw};
    initializer_bytes += InitializerBytes(t) + (raw ? static_cast<int64_t>(raw->size()) : 0);
    initializer_bytes = std::min(initializer_bytes, kMaxElements * 8);
  }
  fold_budget_ = kFoldBaseBytes + 2 * initializer_bytes;
  if (model_.graph().sparse_initializer_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat(source_, ": sparse initializers are not supported"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> Importer::InputShape(const onnx::ValueInfoProto& in) const {
  const std::string where = absl::StrCat(source_, ": input '", in.name(), "'");
  if (!in.type().has_tensor_type()) {
    return absl::UnimplementedError(absl::StrCat(where, " is not a tensor"));
  }
  const onnx::TypeProto::Tensor& t = in.type().tensor_type();
  if (t.elem_type() != onnx::TensorProto::FLOAT && t.elem_type() != onnx::TensorProto::INT64) {
    return absl::UnimplementedError(
        absl::StrCat(where, " has element type ", OnnxTypeName(t.elem_type()),
                     ": only FLOAT (float32) inputs and INT64 ones (token ids, read by a Gather "
                     "of a constant table) are supported"));
  }
  if (!t.has_shape()) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has no shape: re-export it with one"));
  }
  std::vector<int64_t> shape;
  for (int i = 0; i < t.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension& d = t.shape().dim(i);
    const std::string name = d.has_dim_param() ? absl::StrCat(" ('", d.dim_param(), "')") : "";
    if (i == 0 && options_.batch > 0) {
      shape.push_back(options_.batch);
    } else if (d.has_dim_value() && d.dim_value() > 0 && d.dim_value() <= kMaxElements) {
      shape.push_back(d.dim_value());
    } else if (i == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " dim 0", name, " is dynamic: pass --batch N (the batch size)"));
    } else if (d.has_dim_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " dim ", i, " is ", d.dim_value(), ": expected >= 1"));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " dim ", i, name,
          " is dynamic: only the batch (dim 0) can be; re-export the model with a fixed input "
          "size"));
    }
  }
  if (!CheckedElements(shape)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " shape ", ShapeText(shape), " is too large"));
  }
  return shape;
}

absl::Status Importer::AddGraphInputs() {
  for (const onnx::ValueInfoProto& in : model_.graph().input()) {
    if (initializers_.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, InputShape(in));
    if (values_.count(in.name())) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": input '", in.name(), "' is listed twice"));
    }
    const DType dtype =
        in.type().tensor_type().elem_type() == onnx::TensorProto::INT64 ? DType::kI64 : DType::kF32;
    const int id = graph_.AddTensor(
        {UniqueTensorName(in.name()), std::move(shape), dtype, TensorKind::kInput});
    values_[in.name()] = Value::Tensor(id);
  }
  if (graph_.TensorsOfKind(TensorKind::kInput).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": the graph has no inputs"));
  }
  return absl::OkStatus();
}

absl::Status Importer::ImportNode(const NodeProto& n) {
  if (auto it = absorbed_.find(&n); it != absorbed_.end()) return BindOutput(n, 0, it->second);
  if (!n.domain().empty() && n.domain() != "ai.onnx") {
    return absl::UnimplementedError(absl::StrCat(
        source_, ": unsupported op '", n.domain(), ".", n.op_type(), "' (node '", NodeName(n),
        "', inputs: ", absl::StrJoin(n.input(), ", "), "): only the ai.onnx domain is supported"));
  }
  OpMapper mapper = FindOpMapper(n.op_type());
  const bool foldable = CanFold(n.op_type());
  // Every supported op has output 0; mappers name their tensors after it.
  if ((mapper != nullptr || foldable) && (n.output_size() == 0 || n.output(0).empty())) {
    return Error(n, "has no output");
  }
  if (foldable) {
    TUNEJIT_ASSIGN_OR_RETURN(int activation, FirstNonConstantInput(n));
    if (activation < 0) return FoldNode(*this, n);
    if (mapper == nullptr) {
      return Unsupported(n, absl::StrCat("input ", activation, " ('", n.input(activation),
                                         "') is an activation: ", n.op_type(),
                                         " is only supported on constants (evaluated at import)"));
    }
  }
  if (mapper == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(source_, ": unsupported op '", n.op_type(), "' (node '", NodeName(n),
                     "', inputs: ", absl::StrJoin(n.input(), ", "), ")"));
  }
  return mapper(*this, n);
}

absl::Status Importer::MarkOutputs() {
  for (const onnx::ValueInfoProto& out : model_.graph().output()) {
    auto it = values_.find(out.name());
    const std::string where = absl::StrCat(source_, ": graph output '", out.name(), "'");
    if (it == values_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is not produced by any node"));
    }
    const int id = it->second.tensor;
    if (it->second.is_constant()) {
      return absl::UnimplementedError(absl::StrCat(where, " is a constant"));
    }
    if (it->second.qdq_scale > 0) {
      return absl::UnimplementedError(
          absl::StrCat(where, " is a QuantizeLinear output (int8): tunejit outputs float32"));
    }
    if (it->second.nan_test) {
      return absl::UnimplementedError(
          absl::StrCat(where, " is an IsNaN output (boolean): tunejit outputs float32"));
    }
    TensorDesc& t = graph_.mutable_tensor(id);
    if (t.kind != TensorKind::kActivation) {
      return absl::UnimplementedError(absl::StrCat(
          where, " is the graph ", std::string(TensorKindName(t.kind)), " '", t.name, "' itself"));
    }
    t.kind = TensorKind::kOutput;
    // An output that aliases another value (Identity, Dropout, a folded BatchNormalization) gets
    // the output's name, so callers find it by the name the file gives.
    if (t.name != out.name() && !tensor_names_.count(out.name())) {
      tensor_names_.erase(t.name);
      tensor_names_.insert(out.name());
      t.name = out.name();
    }
  }
  if (graph_.TensorsOfKind(TensorKind::kOutput).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": the graph has no outputs"));
  }
  for (const auto& [name, proto] : initializers_) {
    if (!values_.count(name)) warnings_.push_back(absl::StrCat("unused initializer '", name, "'"));
  }
  return absl::OkStatus();
}

bool Importer::HasInput(const NodeProto& n, int i) const {
  return i < n.input_size() && !n.input(i).empty();
}

absl::StatusOr<int> Importer::FirstNonConstantInput(const NodeProto& n) {
  int present = 0;
  for (int i = 0; i < n.input_size(); ++i) {
    if (!HasInput(n, i)) continue;
    TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Input(n, i));
    if (!v->is_constant()) return i;
    ++present;
  }
  if (present == 0) return Error(n, "has no inputs");
  return -1;
}

absl::StatusOr<const Value*> Importer::Lookup(const std::string& name) {
  if (auto it = values_.find(name); it != values_.end()) return &it->second;
  if (auto it = initializers_.find(name); it != initializers_.end()) {
    TUNEJIT_ASSIGN_OR_RETURN(ConstTensor t,
                             DecodeTensor(*it->second.proto, tensor_source(), it->second.raw));
    return &(values_[name] = Value::Constant(std::move(t)));
  }
  return nullptr;
}

absl::StatusOr<const Value*> Importer::Input(const NodeProto& n, int i) {
  if (!HasInput(n, i)) return Error(n, absl::StrCat("input ", i, " is missing"));
  const std::string& name = n.input(i);
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Lookup(name));
  if (v != nullptr) return v;
  return Error(n, absl::StrCat("input '", name,
                               "' is not a graph input, an initializer or the output of an "
                               "earlier node (missing initializer, or nodes out of order?)"));
}

absl::StatusOr<std::shared_ptr<const ConstTensor>> Importer::KnownConstant(
    const std::string& name) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Lookup(name));
  if (v == nullptr || !v->is_constant()) return std::shared_ptr<const ConstTensor>();
  return v->constant;
}

absl::StatusOr<std::vector<int64_t>> Importer::ActivationShape(const NodeProto& n, int i) {
  TUNEJIT_ASSIGN_OR_RETURN(int t, FloatInput(n, i));
  return graph_.tensor(t).shape;
}

absl::StatusOr<int> Importer::FloatInput(const NodeProto& n, int i) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Input(n, i));
  if (v->is_constant()) {
    return Unsupported(n, absl::StrCat("input ", i, " ('", n.input(i),
                                       "') is a constant; expected an activation"));
  }
  if (v->qdq_scale > 0) {
    return Unsupported(n, absl::StrCat("input ", i, " ('", n.input(i),
                                       "') is a QuantizeLinear output: only DequantizeLinear "
                                       "may read it"));
  }
  if (v->nan_test) {
    return Unsupported(n, absl::StrCat("input ", i, " ('", n.input(i),
                                       "') is an IsNaN output: only Where(IsNaN(x), c, x) may "
                                       "read it"));
  }
  if (const DType d = graph_.tensor(v->tensor).dtype; d == DType::kI64) {
    return Unsupported(n, absl::StrCat("input '", n.input(i),
                                       "' is INT64: only a Gather of a constant table (an "
                                       "embedding lookup of token ids) reads int64 values; an "
                                       "attention mask as a graph input is not supported (export "
                                       "with input_ids only, the mask all ones, as "
                                       "scripts/export_onnx.py does)"));
  } else if (d != DType::kF32) {
    return Error(n, absl::StrCat("input '", n.input(i), "' is not float32"));
  }
  return v->tensor;
}

absl::StatusOr<std::shared_ptr<const ConstTensor>> Importer::ConstInput(const NodeProto& n, int i,
                                                                        absl::string_view role) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Input(n, i));
  if (!v->is_constant()) {
    return Unsupported(n, absl::StrCat("the ", role, " (input ", i, " '", n.input(i),
                                       "') must be a constant (an initializer)"));
  }
  return v->constant;
}

absl::Status Importer::BindOutput(const NodeProto& n, int i, Value v) {
  if (i >= n.output_size() || n.output(i).empty()) return absl::OkStatus();
  if (!values_.emplace(n.output(i), std::move(v)).second) {
    return Error(n, absl::StrCat("output '", n.output(i), "' is already defined"));
  }
  return absl::OkStatus();
}

std::string Importer::NodeName(const NodeProto& n) const {
  return n.name().empty() ? absl::StrCat(n.op_type(), "_", node_index_) : n.name();
}

std::string Importer::UniqueTensorName(std::string base) {
  std::string name = base;
  for (int k = 1; tensor_names_.count(name); ++k) name = absl::StrCat(base, ".", k);
  tensor_names_.insert(name);
  return name;
}

std::string Importer::OutName(const NodeProto& n, absl::string_view suffix, int i) {
  const std::string base = i < 0                                         ? NodeName(n)
                           : i < n.output_size() && !n.output(i).empty() ? n.output(i)
                                                                         : NodeName(n) + ".out";
  return UniqueTensorName(absl::StrCat(base, suffix));
}

absl::StatusOr<int> Importer::AddNode(const NodeProto& n, OpKind op, std::vector<int> inputs,
                                      const NodeAttrs& attrs, std::string out_name,
                                      absl::string_view suffix) {
  std::string name = absl::StrCat(NodeName(n), suffix);
  for (int k = 1; node_names_.count(name); ++k) name = absl::StrCat(NodeName(n), suffix, "_", k);
  absl::StatusOr<int> out = graph_.AddNode(name, op, std::move(inputs), attrs, std::move(out_name));
  if (!out.ok()) return Error(n, out.status().message());
  node_names_.insert(name);
  if (!CheckedElements(graph_.tensor(*out).shape)) {
    return Error(
        n, absl::StrCat("output shape ", ShapeText(graph_.tensor(*out).shape), " is too large"));
  }
  return *out;
}

absl::Status Importer::AddOutputNode(const NodeProto& n, OpKind op, std::vector<int> inputs,
                                     const NodeAttrs& attrs) {
  TUNEJIT_ASSIGN_OR_RETURN(int y, AddNode(n, op, std::move(inputs), attrs, OutName(n)));
  return BindOutput(n, 0, Value::Tensor(y));
}

absl::StatusOr<int> Importer::TensorOrWeight(const NodeProto& n, int i, size_t rank) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* v, Input(n, i));
  if (!v->is_constant()) return FloatInput(n, i);
  return ConstantWeight(n, *v->constant, n.input(i), rank);
}

absl::StatusOr<int> Importer::ConstantWeight(const NodeProto& n, const ConstTensor& c,
                                             const std::string& fallback_name, size_t rank) {
  const std::string name = c.name.empty() ? fallback_name : c.name;
  if (c.NumElements() == 0) {
    return Unsupported(n, absl::StrCat("the constant '", name, "' ", ShapeText(c.dims),
                                       " is empty: empty tensors are not supported"));
  }
  std::vector<int64_t> dims = c.dims;
  if (dims.empty() && rank >= 1) dims = {1};
  return AddWeight(name, DType::kF32, std::move(dims), PackBytes(c.Floats()));
}

int Importer::AddWeight(std::string name, DType dtype, std::vector<int64_t> shape,
                        SharedBytes bytes) {
  const int id = graph_.AddTensor(
      {UniqueTensorName(std::move(name)), std::move(shape), dtype, TensorKind::kWeight});
  weights_[id] = std::move(bytes);
  return id;
}

absl::Status Importer::Error(const NodeProto& n, absl::string_view why) const {
  return absl::InvalidArgumentError(absl::StrCat(source_, ": ", n.op_type(), " node '", NodeName(n),
                                                 "' (inputs: ", absl::StrJoin(n.input(), ", "),
                                                 "): ", why));
}

absl::Status Importer::Unsupported(const NodeProto& n, absl::string_view why) const {
  return absl::UnimplementedError(Error(n, why).message());
}

const AttributeProto* Importer::Attr(const NodeProto& n, absl::string_view name) const {
  for (const AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

#define TUNEJIT_ONNX_ATTR_TYPE(a, expected)                                                     \
  if ((a)->type() != AttributeProto::expected) {                                                \
    return Error(n, absl::StrCat("attribute '", name, "' has type ", AttrTypeName((a)->type()), \
                                 ", expected " #expected));                                     \
  }

absl::StatusOr<int64_t> Importer::AttrInt(const NodeProto& n, absl::string_view name,
                                          int64_t fallback) const {
  const AttributeProto* a = Attr(n, name);
  if (a == nullptr) return fallback;
  TUNEJIT_ONNX_ATTR_TYPE(a, INT);
  return a->i();
}

absl::StatusOr<float> Importer::AttrFloat(const NodeProto& n, absl::string_view name,
                                          float fallback) const {
  const AttributeProto* a = Attr(n, name);
  if (a == nullptr) return fallback;
  TUNEJIT_ONNX_ATTR_TYPE(a, FLOAT);
  return a->f();
}

absl::StatusOr<std::string> Importer::AttrString(const NodeProto& n, absl::string_view name,
                                                 std::string fallback) const {
  const AttributeProto* a = Attr(n, name);
  if (a == nullptr) return fallback;
  TUNEJIT_ONNX_ATTR_TYPE(a, STRING);
  return a->s();
}

absl::StatusOr<std::vector<int64_t>> Importer::AttrInts(const NodeProto& n,
                                                        absl::string_view name) const {
  const AttributeProto* a = Attr(n, name);
  if (a == nullptr) return std::vector<int64_t>{};
  TUNEJIT_ONNX_ATTR_TYPE(a, INTS);
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

#undef TUNEJIT_ONNX_ATTR_TYPE

absl::StatusOr<std::optional<std::vector<int64_t>>> Importer::AxesOperand(const NodeProto& n, int i,
                                                                          int64_t input_since) {
  const bool has_attr = Attr(n, "axes") != nullptr;
  if (opset_ < input_since) {
    if (HasInput(n, i)) {
      return Error(n, absl::StrCat("input ", i, " (axes) is an opset ", input_since,
                                   " form; this model is opset ", opset_,
                                   ", where axes are the attribute 'axes'"));
    }
    if (!has_attr) return std::nullopt;
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AttrInts(n, "axes"));
    return axes;
  }
  if (has_attr) {
    return Error(n, absl::StrCat("attribute 'axes' is not valid from opset ", input_since,
                                 " (this model is opset ", opset_, "): axes are input ", i));
  }
  if (!HasInput(n, i)) return std::nullopt;
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> t, ConstInput(n, i, "axes"));
  if (t->dtype != DType::kI64 && t->dtype != DType::kI32) {
    return Error(n, absl::StrCat("the axes (input ", i, ") must be INT64, got ",
                                 std::string(DTypeName(t->dtype))));
  }
  return t->Ints();
}

absl::Status Importer::RequireUnusedOutputs(const NodeProto& n, int first) const {
  for (int i = first; i < n.output_size(); ++i) {
    const std::string& name = n.output(i);
    if (!name.empty() && (Consumers(name) > 0 || IsGraphOutput(name))) {
      return Unsupported(n, absl::StrCat("output ", i, " ('", name,
                                         "') is used: only output 0 is "
                                         "supported"));
    }
  }
  return absl::OkStatus();
}

void Importer::SetActivationScale(int tensor, float scale) {
  auto [it, added] = activation_scales_.emplace(tensor, scale);
  if (added || it->second == scale) return;
  Warn(absl::StrCat("activation '", graph_.tensor(tensor).name, "' has two QDQ scales (",
                    it->second, " and ", scale, "): int8 uses one per tensor, the larger"));
  it->second = std::max(it->second, scale);
}

const NodeProto* Importer::SoleConsumer(const std::string& name) const {
  if (Consumers(name) != 1 || IsGraphOutput(name)) return nullptr;
  for (const NodeProto& n : model_.graph().node()) {
    for (const std::string& in : n.input()) {
      if (in == name) return &n;
    }
  }
  return nullptr;
}

absl::Status Importer::ChargeFold(const NodeProto& n, const std::vector<int64_t>& dims,
                                  DType dtype) {
  const std::optional<int64_t> count = CheckedElements(dims);
  const int64_t bytes = count ? *count * DTypeSize(dtype) : fold_budget_ + 1;
  if (bytes > fold_budget_) {
    return Unsupported(
        n, absl::StrCat("evaluating it at import would make a constant of ", ShapeText(dims),
                        ", over what constant folding may "
                        "allocate for this model"));
  }
  fold_budget_ -= bytes;
  return absl::OkStatus();
}

int Importer::Consumers(const std::string& name) const {
  auto it = consumers_.find(name);
  return it == consumers_.end() ? 0 : it->second;
}

}  // namespace tunejit::onnx_import
