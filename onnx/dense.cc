// Gemm and MatMul. A constant right operand makes a dense: data [M, K] x weight [N, K]
// (+ bias_add), the weight transposed and scaled at import so the graph keeps a single dense
// layout; an activation of another rank goes through it row by row (reshapes around it). Other
// MatMuls (two activations: attention) are matmul nodes.
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "onnx/importer.h"

namespace tunejit::onnx_import {
namespace {

using onnx::NodeProto;

struct DenseSpec {
  bool transpose_b = false;  // the weight is stored [N, K] (Gemm transB = 1), else [K, N]
  float alpha = 1.f, beta = 1.f;
  int bias_input = -1;  // Gemm's C; -1 for none
};

// The [N, K] weight from B stored [N, K] (transposed = true) or [K, N], times alpha.
std::vector<float> DenseWeight(const ConstTensor& b, bool stored_nk, float alpha) {
  const std::vector<float> v = b.Floats();
  if (stored_nk && alpha == 1.f) return v;
  const int64_t rows = b.dims[0], cols = b.dims[1];
  std::vector<float> w(v.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float x = v[r * cols + c] * alpha;
      if (stored_nk) {
        w[r * cols + c] = x;
      } else {
        w[c * rows + r] = x;  // [K, N] -> [N, K]
      }
    }
  }
  return w;
}

absl::StatusOr<std::shared_ptr<const ConstTensor>> MatrixInput(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> b, im.ConstInput(n, 1, "weight (B)"));
  if (b->dims.size() != 2 || b->dims[0] < 1 || b->dims[1] < 1 || b->dtype != DType::kF32) {
    return im.Unsupported(n,
                          absl::StrCat("the weight (B) must be a FLOAT matrix, got ",
                                       std::string(DTypeName(b->dtype)), " ", ShapeText(b->dims)));
  }
  return b;
}

// beta * C as a bias of `n_out` values: C may be [N], [1, N] or a single value.
absl::StatusOr<std::vector<float>> GemmBias(Importer& im, const NodeProto& n, int64_t n_out,
                                            float beta) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> c, im.ConstInput(n, 2, "bias (C)"));
  const bool row = c->NumElements() == n_out &&
                   (c->dims.size() == 1 || (c->dims.size() == 2 && c->dims[0] == 1));
  if (c->dtype != DType::kF32 || (!row && c->NumElements() != 1)) {
    return im.Unsupported(
        n, absl::StrCat("the bias (C) must be FLOAT [", n_out, "], [1, ", n_out,
                        "] or a single value; got ", std::string(DTypeName(c->dtype)), " ",
                        ShapeText(c->dims)));
  }
  std::vector<float> v = c->Floats();
  if (!row) v.assign(static_cast<size_t>(n_out), v[0]);
  for (float& x : v) x *= beta;
  return v;
}

// The dense node of activation `a` [M, K] and the constant matrix `b`, named `out_name`.
absl::StatusOr<int> DenseNode(Importer& im, const NodeProto& n, int a, const ConstTensor& b,
                              const DenseSpec& spec, std::string out_name,
                              absl::string_view suffix = "") {
  const int64_t n_out = spec.transpose_b ? b.dims[0] : b.dims[1];
  const int64_t k = spec.transpose_b ? b.dims[1] : b.dims[0];
  const int weight = im.AddWeight(b.name.empty() ? n.input(1) : b.name, DType::kF32, {n_out, k},
                                  PackBytes(DenseWeight(b, spec.transpose_b, spec.alpha)));
  return im.AddNode(n, OpKind::kDense, {a, weight}, {}, std::move(out_name), suffix);
}

absl::Status EmitDense(Importer& im, const NodeProto& n, const DenseSpec& spec) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> b, MatrixInput(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(int a, im.FloatInput(n, 0));
  const int64_t n_out = spec.transpose_b ? b->dims[0] : b->dims[1];
  const bool has_bias = spec.bias_input >= 0 && im.HasInput(n, spec.bias_input) && spec.beta != 0;
  TUNEJIT_ASSIGN_OR_RETURN(int y,
                           DenseNode(im, n, a, *b, spec, im.OutName(n, has_bias ? ".dense" : "")));
  if (has_bias) {
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> bias, GemmBias(im, n, n_out, spec.beta));
    const int bias_id =
        im.AddWeight(n.input(spec.bias_input), DType::kF32, {n_out}, PackBytes(bias));
    TUNEJIT_ASSIGN_OR_RETURN(
        y, im.AddNode(n, OpKind::kBiasAdd, {y, bias_id}, {}, im.OutName(n), ".bias_add"));
  }
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// The Add that alone reads MatMul `n`'s output with a constant known now that only varies along
// the last dim (`n_out` values) without raising the output's rank `rank`: a Linear layer's bias,
// which the dense then applies itself. nullptr (and no bias) otherwise.
absl::StatusOr<const NodeProto*> LinearBias(Importer& im, const NodeProto& n, int64_t n_out,
                                            size_t rank, std::shared_ptr<const ConstTensor>* bias) {
  const NodeProto* add = im.SoleConsumer(n.output(0));
  if (add == nullptr || add->op_type() != "Add" ||
      !(add->domain().empty() || add->domain() == "ai.onnx") || add->input_size() != 2 ||
      add->output_size() < 1 || add->output(0).empty()) {
    return nullptr;
  }
  const std::string& other = add->input(add->input(0) == n.output(0) ? 1 : 0);
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> c, im.KnownConstant(other));
  if (c == nullptr || c->dtype != DType::kF32 || c->NumElements() != n_out ||
      c->dims.size() > rank) {
    return nullptr;
  }
  for (size_t i = 0; i + 1 < c->dims.size(); ++i) {
    if (c->dims[i] != 1) return nullptr;
  }
  *bias = std::move(c);
  return add;
}

// A [..., M, K] (rank != 2) x constant B [K, N]: the rows of A through one dense ([rows, K] x
// [N, K]) and back to [..., M, N], so the GEMM templates run it. A bias Add right after it is
// taken into the dense (bias_add, fused by the executor) and that Add is then skipped.
absl::Status BatchedDense(Importer& im, const NodeProto& n, const ConstTensor& b) {
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> shape, im.ActivationShape(n, 0));
  if (shape.empty() || shape.back() != b.dims[0]) {
    return im.Error(n, absl::StrCat("A ", ShapeText(shape), " and B ", ShapeText(b.dims),
                                    " do not multiply (K differs)"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(int a, im.FloatInput(n, 0));
  const int64_t k = shape.back(), n_out = b.dims[1];
  const int64_t rows = k == 0 ? 0 : im.graph().tensor(a).NumElements() / k;
  TUNEJIT_ASSIGN_OR_RETURN(int y, ReshapeTensor(im, n, a, {rows, k}, ".rows"));
  TUNEJIT_ASSIGN_OR_RETURN(y,
                           DenseNode(im, n, y, b, DenseSpec{}, im.OutName(n, ".dense"), ".dense"));
  std::shared_ptr<const ConstTensor> bias;
  TUNEJIT_ASSIGN_OR_RETURN(const NodeProto* add, LinearBias(im, n, n_out, shape.size(), &bias));
  if (add != nullptr) {
    const int bias_id = im.AddWeight(bias->name.empty() ? n.output(0) + ".bias" : bias->name,
                                     DType::kF32, {n_out}, PackBytes(bias->Floats()));
    TUNEJIT_ASSIGN_OR_RETURN(y, im.AddNode(n, OpKind::kBiasAdd, {y, bias_id}, {},
                                           im.OutName(n, ".bias_add"), ".bias_add"));
  }
  shape.back() = n_out;
  // Named after the Add when it was taken in: its output is what this tensor holds.
  TUNEJIT_ASSIGN_OR_RETURN(y, ReshapeTensor(im, add != nullptr ? *add : n, y, shape));
  if (add != nullptr) im.Absorb(add, Value::Tensor(y));
  return im.BindOutput(n, 0, Value::Tensor(y));
}

// A general matmul node (batch dims broadcast); a constant operand becomes a weight.
absl::Status GeneralMatMul(Importer& im, const NodeProto& n) {
  std::vector<int> ids;
  std::vector<std::vector<int64_t>> shapes;
  for (int i = 0; i < 2; ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(const int id, im.TensorOrWeight(n, i));
    ids.push_back(id);
    shapes.push_back(im.graph().tensor(id).shape);
  }
  if (shapes[0].size() < 2 || shapes[1].size() < 2) {
    return im.Unsupported(n, absl::StrCat("A ", ShapeText(shapes[0]), " x B ", ShapeText(shapes[1]),
                                          ": a 1-D operand is only supported as A against a "
                                          "constant [K, N] B"));
  }
  return im.AddOutputNode(n, OpKind::kMatMul, std::move(ids), {});
}

}  // namespace

// Y = alpha A' B' + beta C with A [M, K] an activation, B a constant.
absl::Status MapGemm(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t trans_a, im.AttrInt(n, "transA", 0));
  if (trans_a != 0) return im.Unsupported(n, "transA = 1 (a transposed activation)");
  DenseSpec spec;
  TUNEJIT_ASSIGN_OR_RETURN(int64_t trans_b, im.AttrInt(n, "transB", 0));
  TUNEJIT_ASSIGN_OR_RETURN(spec.alpha, im.AttrFloat(n, "alpha", 1.f));
  TUNEJIT_ASSIGN_OR_RETURN(spec.beta, im.AttrFloat(n, "beta", 1.f));
  spec.transpose_b = trans_b != 0;
  spec.bias_input = 2;
  return EmitDense(im, n, spec);
}

// Y = A B: a dense for an activation A times a constant matrix B (through a reshape when A is
// not 2-D), else a matmul node (two activations, or a constant A or batched B).
absl::Status MapMatMul(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* a, im.Input(n, 0));
  TUNEJIT_ASSIGN_OR_RETURN(const Value* b, im.Input(n, 1));
  if (a->is_constant() && b->is_constant()) {
    return im.Unsupported(n, "both inputs are constants (a MatMul of weights is not folded)");
  }
  if (a->is_constant() || !b->is_constant() || b->constant->dims.size() != 2) {
    return GeneralMatMul(im, n);
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> w, MatrixInput(im, n));
  if (im.graph().tensor(a->tensor).shape.size() == 2) return EmitDense(im, n, DenseSpec{});
  return BatchedDense(im, n, *w);
}

}  // namespace tunejit::onnx_import
