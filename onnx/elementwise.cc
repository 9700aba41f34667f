// Element-wise ops on activations: the unary functions (Sigmoid, Tanh, Erf, Sqrt, Exp,
// Reciprocal, Neg, HardSigmoid, HardSwish, Gelu) as unary nodes, the binary ones (Add, Sub, Mul,
// Div, Pow, Max, Min) as binary nodes with numpy broadcasting (a constant operand becomes a
// weight), Add's fused special cases (bias_add, the residual add), and Cast to float.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

struct UnaryEntry {
  absl::string_view op_type;
  UnaryFn fn;
};

constexpr UnaryEntry kUnary[] = {
    {"Sigmoid", UnaryFn::kSigmoid},
    {"Tanh", UnaryFn::kTanh},
    {"Erf", UnaryFn::kErf},
    {"Sqrt", UnaryFn::kSqrt},
    {"Exp", UnaryFn::kExp},
    {"Reciprocal", UnaryFn::kReciprocal},
    {"Neg", UnaryFn::kNeg},
    {"HardSigmoid", UnaryFn::kHardSigmoid},
    {"HardSwish", UnaryFn::kHardSwish},
    {"Gelu", UnaryFn::kGelu},
};

struct BinaryEntry {
  absl::string_view op_type;
  BinaryFn fn;
};

constexpr BinaryEntry kBinary[] = {
    {"Add", BinaryFn::kAdd}, {"Sub", BinaryFn::kSub}, {"Mul", BinaryFn::kMul},
    {"Div", BinaryFn::kDiv}, {"Pow", BinaryFn::kPow}, {"Max", BinaryFn::kMax},
    {"Min", BinaryFn::kMin},
};

// The attributes of the unary functions that have some: HardSigmoid's alpha and beta, Gelu's
// approximate ("none": the exact erf form; "tanh": gelu_tanh).
absl::Status UnaryAttrs(Importer& im, const NodeProto& n, UnaryFn fn, NodeAttrs* a) {
  if (fn == UnaryFn::kHardSigmoid) {
    TUNEJIT_ASSIGN_OR_RETURN(a->alpha, im.AttrFloat(n, "alpha", 0.2f));
    TUNEJIT_ASSIGN_OR_RETURN(a->beta, im.AttrFloat(n, "beta", 0.5f));
  }
  if (fn == UnaryFn::kGelu) {
    TUNEJIT_ASSIGN_OR_RETURN(std::string approximate, im.AttrString(n, "approximate", "none"));
    if (approximate == "tanh") {
      a->unary = UnaryFn::kGeluTanh;
    } else if (approximate != "none") {
      return im.Unsupported(n, absl::StrCat("attribute 'approximate' = '", approximate,
                                            "': only 'none' (the exact erf form) and 'tanh' are "
                                            "supported"));
    }
  }
  return absl::OkStatus();
}

size_t RankOf(Importer& im, const Value& v) {
  return v.is_constant() ? v.constant->dims.size() : im.graph().tensor(v.tensor).shape.size();
}

// A binary node of inputs `a` and `b`: at least one is an activation (all-constant nodes are
// folded before any mapper runs).
absl::StatusOr<int> BinaryNode(Importer& im, const NodeProto& n, BinaryFn fn, int a, int b,
                               const std::string& out_name, absl::string_view suffix) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* va, im.Input(n, a));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* vb, im.Input(n, b));
  const size_t ra = RankOf(im, *va), rb = RankOf(im, *vb);
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.TensorOrWeight(n, a, rb));
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.TensorOrWeight(n, b, ra));
  NodeAttrs attrs;
  attrs.binary = fn;
  return im.AddNode(n, OpKind::kBinary, {x, y}, attrs, out_name, suffix);
}

// A single value is repeated into a bias of C values only up to this C (a file's shapes must not
// make the import allocate beyond what it holds); beyond, it stays a binary add.
constexpr int64_t kMaxRepeatedBias = int64_t{1} << 20;

// A constant broadcast against x [N, C, ...] that varies only along C (or is a single value),
// without raising x's rank: its C values, or nullopt.
std::optional<std::vector<float>> ChannelVector(const ConstTensor& c,
                                                const std::vector<int64_t>& x) {
  if (x.size() < 2 || c.dims.size() > x.size() || c.dtype != DType::kF32) return std::nullopt;
  std::vector<float> v = c.Floats();
  if (v.size() == 1 && x[1] <= kMaxRepeatedBias) {
    return std::vector<float>(static_cast<size_t>(x[1]), v[0]);
  }
  std::vector<int64_t> dims(x.size() - c.dims.size(), 1);  // right-aligned broadcasting
  dims.insert(dims.end(), c.dims.begin(), c.dims.end());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != (i == 1 ? x[1] : 1)) return std::nullopt;
  }
  return v;
}

// x + constant as a bias_add when the constant is a per-channel vector (the conv and dense
// epilogues fuse it); nullopt-like false in *done otherwise.
absl::Status ChannelBias(Importer& im, const NodeProto& n, int x_input, const ConstTensor& c,
                         bool* done) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, im.ActivationShape(n, x_input));
  std::optional<std::vector<float>> bias = ChannelVector(c, shape);
  *done = bias.has_value();
  if (!bias) return absl::OkStatus();
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, x_input));
  const int b = im.AddWeight(c.name.empty() ? n.input(1 - x_input) : c.name, DType::kF32,
                             {shape[1]}, PackBytes(*bias));
  return im.AddOutputNode(n, OpKind::kBiasAdd, {x, b}, {});
}

}  // namespace

absl::Status MapUnaryFunction(Importer& im, const NodeProto& n) {
  NodeAttrs attrs;
  for (const UnaryEntry& e : kUnary) {
    if (e.op_type == n.op_type()) attrs.unary = e.fn;
  }
  TUNEJIT_RETURN_IF_ERROR(UnaryAttrs(im, n, attrs.unary, &attrs));
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  return im.AddOutputNode(n, OpKind::kUnary, {x}, attrs);
}

// IsNaN of an activation is a boolean tunejit has no tensors for: the value remembers its operand
// for the Where that reads it (MapWhere).
absl::Status MapIsNaN(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  Value v = Value::Tensor(x);
  v.nan_test = true;
  return im.BindOutput(n, 0, std::move(v));
}

// Where on activations: only Where(IsNaN(x), c, x) with a single value c, which torch.onnx puts
// after the softmax of scaled_dot_product_attention with a boolean mask (a row masked everywhere
// is NaN; the guard makes it c). It becomes replace_nan(x, c). A constant condition has folded.
absl::Status MapWhere(Importer& im, const NodeProto& n) {
  if (n.input_size() != 3)
    return im.Error(n, absl::StrCat("expects 3 inputs, got ", n.input_size()));
  constexpr absl::string_view kSupported =
      "only Where(IsNaN(x), c, x) with a single value c is supported on activations (a constant "
      "condition folds)";
  TUNEJIT_ASSIGN_OR_RETURN(const Value* cond, im.Input(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* y, im.Input(n, 2));
  if (!cond->nan_test || y->is_constant() || y->qdq_scale > 0 || y->nan_test ||
      y->tensor != cond->tensor) {
    return im.Unsupported(n, kSupported);
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> c, im.ConstInput(n, 1, "value"));
  if (c->NumElements() != 1 || c->dims.size() > im.graph().tensor(y->tensor).shape.size()) {
    return im.Unsupported(n, kSupported);
  }
  NodeAttrs attrs;
  attrs.unary = UnaryFn::kReplaceNan;
  attrs.alpha = c->Floats()[0];
  return im.AddOutputNode(n, OpKind::kUnary, {y->tensor}, attrs);
}

// Max and Min take one or more inputs (a chain of binary nodes); the others exactly two.
absl::Status MapBinaryFunction(Importer& im, const NodeProto& n) {
  BinaryFn fn = BinaryFn::kAdd;
  for (const BinaryEntry& e : kBinary) {
    if (e.op_type == n.op_type()) fn = e.fn;
  }
  const bool variadic = fn == BinaryFn::kMax || fn == BinaryFn::kMin;
  if (n.input_size() < 1 || (!variadic && n.input_size() != 2)) {
    return im.Error(n, absl::StrCat("expects 2 inputs, got ", n.input_size()));
  }
  if (n.input_size() == 1) {
    TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
    return im.BindOutput(n, 0, Value::Tensor(x));
  }
  if (n.input_size() > 2) {
    return im.Unsupported(n, absl::StrCat(n.input_size(), " inputs: ", n.op_type(),
                                          " of more than 2 inputs is not supported"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int y, BinaryNode(im, n, fn, 0, 1, im.OutName(n), ""));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// Add: a bias_add for a per-channel constant, the residual add for two activations of one shape
// (both fused by the executor), a broadcasting binary add otherwise.
absl::Status MapAdd(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* a, im.Input(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* b, im.Input(n, 1));
  if (a->is_constant() != b->is_constant()) {
    bool done = false;
    const int x = a->is_constant() ? 1 : 0;
    TUNEJIT_RETURN_IF_ERROR(ChannelBias(im, n, x, *(a->is_constant() ? a : b)->constant, &done));
    if (done) return absl::OkStatus();
  } else if (!a->is_constant() &&
             im.graph().tensor(a->tensor).shape == im.graph().tensor(b->tensor).shape) {
    TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
    TUNEJIT_ASSIGN_OR_RETURN(int y, im.FloatInput(n, 1));
    return im.AddOutputNode(n, OpKind::kAdd, {x, y}, {});
  }
  return MapBinaryFunction(im, n);
}

// Cast of an activation: only to FLOAT (a no-op; activations are float32). Constants fold.
absl::Status MapCast(Importer& im, const NodeProto& n) {
  // The input first: a Cast of an int64 input (an attention mask to BOOL) is about that input.
  TUNEJIT_ASSIGN_OR_RETURN(int x, im.FloatInput(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t to, im.AttrInt(n, "to", 0));
  if (to != onnx::TensorProto::FLOAT) {
    return im.Unsupported(n, absl::StrCat("attribute 'to' = ", OnnxTypeName(static_cast<int>(to)),
                                          ": an activation can only be cast to FLOAT (it is "
                                          "float32 already)"));
  }
  return im.BindOutput(n, 0, Value::Tensor(x));
}

}  // namespace tunejit::onnx_import
