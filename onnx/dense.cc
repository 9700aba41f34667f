// Gemm and MatMul as dense: data [M, K] x weight [N, K] (+ bias_add). Weights are constants,
// transposed and scaled at import so the graph keeps a single dense layout.
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

absl::Status EmitDense(Importer& im, const NodeProto& n, const DenseSpec& spec) {
  TUNEJIT_ASSIGN_OR_RETURN(std::shared_ptr<const ConstTensor> b, MatrixInput(im, n));
  TUNEJIT_ASSIGN_OR_RETURN(int a, im.FloatInput(n, 0));
  const int64_t n_out = spec.transpose_b ? b->dims[0] : b->dims[1];
  const int64_t k = spec.transpose_b ? b->dims[1] : b->dims[0];
  const int weight = im.AddWeight(b->name.empty() ? n.input(1) : b->name, DType::kF32, {n_out, k},
                                  PackBytes(DenseWeight(*b, spec.transpose_b, spec.alpha)));
  const bool has_bias = spec.bias_input >= 0 && im.HasInput(n, spec.bias_input) && spec.beta != 0;
  TUNEJIT_ASSIGN_OR_RETURN(int y, im.AddNode(n, OpKind::kDense, {a, weight}, {},
                                             im.OutName(n, has_bias ? ".dense" : "")));
  if (has_bias) {
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> bias, GemmBias(im, n, n_out, spec.beta));
    const int bias_id =
        im.AddWeight(n.input(spec.bias_input), DType::kF32, {n_out}, PackBytes(bias));
    TUNEJIT_ASSIGN_OR_RETURN(
        y, im.AddNode(n, OpKind::kBiasAdd, {y, bias_id}, {}, im.OutName(n), ".bias_add"));
  }
  return im.BindOutput(n, 0, Value::Tensor(y));
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

// Y = A B with A [M, K] an activation and B a constant [K, N].
absl::Status MapMatMul(Importer& im, const NodeProto& n) {
  TUNEJIT_ASSIGN_OR_RETURN(const Value* a, im.Input(n, 0));
  if (!a->is_constant() && im.graph().tensor(a->tensor).shape.size() != 2) {
    return im.Unsupported(n, absl::StrCat("only [M, K] x [K, N] is supported; A is ",
                                          ShapeText(im.graph().tensor(a->tensor).shape)));
  }
  return EmitDense(im, n, DenseSpec{});
}

}  // namespace tunejit::onnx_import
