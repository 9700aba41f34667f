// The folder's numeric evaluators (onnx/fold.h): element-wise functions with numpy broadcasting,
// Where, Cast and Range. Integers are computed exactly in int64 with overflow checks, floats in
// double, and results are stored back in input 0's dtype (BOOL for comparisons and logic).
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "graph/shape_inference.h"
#include "onnx/const_ops.h"
#include "onnx/fold.h"

namespace tunejit::onnx_import {
namespace {

// ---- Binary functions. `i` returns false on overflow or division by zero.

struct BinaryRule {
  absl::string_view op;
  double (*f)(double, double);
  bool (*i)(int64_t, int64_t, int64_t*);
  bool to_bool = false;   // comparisons and logic: BOOL results
  bool variadic = false;  // Min / Max: one or more inputs
};

bool IPow(int64_t b, int64_t e, int64_t* out) {
  if (e < 0) return false;
  int64_t r = 1;
  while (e > 0) {
    if ((e & 1) && __builtin_mul_overflow(r, b, &r)) return false;
    e >>= 1;
    if (e > 0 && __builtin_mul_overflow(b, b, &b)) return false;
  }
  *out = r;
  return true;
}

bool IDiv(int64_t a, int64_t b, int64_t* out) {
  if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
  *out = a / b;  // truncation, as C (and ONNX Runtime)
  return true;
}

// Mod with fmod = 1: the sign of the dividend (C's %).
bool IRem(int64_t a, int64_t b, int64_t* out) {
  if (b == 0) return false;
  *out = b == -1 ? 0 : a % b;
  return true;
}

// Mod with fmod = 0: the sign of the divisor (Python's %).
bool IMod(int64_t a, int64_t b, int64_t* out) {
  if (!IRem(a, b, out)) return false;
  if (*out != 0 && ((*out < 0) != (b < 0))) *out += b;
  return true;
}

double FMod(double a, double b) {
  const double r = std::fmod(a, b);
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

bool Bool(bool v, int64_t* out) {
  *out = v;
  return true;
}

bool IKeep(int64_t x, int64_t* o) {
  *o = x;
  return true;
}

constexpr BinaryRule kBinaryRules[] = {
    {"Add", [](double a, double b) { return a + b; },
     [](int64_t a, int64_t b, int64_t* o) { return !__builtin_add_overflow(a, b, o); }},
    {"Sub", [](double a, double b) { return a - b; },
     [](int64_t a, int64_t b, int64_t* o) { return !__builtin_sub_overflow(a, b, o); }},
    {"Mul", [](double a, double b) { return a * b; },
     [](int64_t a, int64_t b, int64_t* o) { return !__builtin_mul_overflow(a, b, o); }},
    {"Div", [](double a, double b) { return a / b; }, IDiv},
    {"Pow", [](double a, double b) { return std::pow(a, b); }, IPow},
    {"Max", [](double a, double b) { return a < b ? b : a; },
     [](int64_t a, int64_t b, int64_t* o) { return IKeep(a < b ? b : a, o); }, false, true},
    {"Min", [](double a, double b) { return b < a ? b : a; },
     [](int64_t a, int64_t b, int64_t* o) { return IKeep(b < a ? b : a, o); }, false, true},
    {"Equal", [](double a, double b) { return (a == b ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a == b, o); }, true},
    {"Less", [](double a, double b) { return (a < b ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a < b, o); }, true},
    {"LessOrEqual", [](double a, double b) { return (a <= b ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a <= b, o); }, true},
    {"Greater", [](double a, double b) { return (a > b ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a > b, o); }, true},
    {"GreaterOrEqual", [](double a, double b) { return (a >= b ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a >= b, o); }, true},
    {"And", [](double a, double b) { return (a != 0 && b != 0 ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a != 0 && b != 0, o); }, true},
    {"Or", [](double a, double b) { return (a != 0 || b != 0 ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool(a != 0 || b != 0, o); }, true},
    {"Xor", [](double a, double b) { return ((a != 0) != (b != 0) ? 1.0 : 0.0); },
     [](int64_t a, int64_t b, int64_t* o) { return Bool((a != 0) != (b != 0), o); }, true},
};

constexpr BinaryRule kModRule = {"Mod", FMod, IMod};
constexpr BinaryRule kFmodRule = {"Mod", [](double a, double b) { return std::fmod(a, b); }, IRem};

const BinaryRule* FindBinaryRule(absl::string_view op) {
  for (const BinaryRule& r : kBinaryRules) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

// x `rule` y with numpy broadcasting; the result has x's dtype (BOOL for to_bool rules).
absl::StatusOr<ConstTensor> ApplyBinary(const FoldArgs& a, const BinaryRule& rule,
                                        const ConstTensor& x, const ConstTensor& y) {
  TUNEJIT_ASSIGN_OR_RETURN(Dims out, a.im.AtNode(a.n, BroadcastShape(x.dims, y.dims)));
  const DType dtype = rule.to_bool ? DType::kBool : x.dtype;
  TUNEJIT_RETURN_IF_ERROR(a.Charge(out, dtype));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor xb, a.im.AtNode(a.n, BroadcastTo(x, out)));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor yb, a.im.AtNode(a.n, BroadcastTo(y, out)));
  if (IsFloatType(x.dtype) || IsFloatType(y.dtype)) {
    std::vector<double> xv = xb.Doubles();
    const std::vector<double> yv = yb.Doubles();
    for (size_t k = 0; k < xv.size(); ++k) xv[k] = rule.f(xv[k], yv[k]);
    return FromDoubles(dtype, out, xv);
  }
  std::vector<int64_t> xv = xb.Ints();
  const std::vector<int64_t> yv = yb.Ints();
  for (size_t k = 0; k < xv.size(); ++k) {
    if (!rule.i(xv[k], yv[k], &xv[k])) {
      return a.im.Error(a.n, absl::StrCat("integer overflow or division by zero at element ", k,
                                          " (", xb.Ints()[k], ", ", yv[k], ")"));
    }
  }
  return FromInts(dtype, out, xv);
}

Folded Single(absl::StatusOr<ConstTensor> t) {
  if (!t.ok()) return t.status();
  std::vector<ConstTensor> out;
  out.push_back(*std::move(t));
  return out;
}

Folded FoldBinary(const FoldArgs& a, const BinaryRule& rule) {
  const int count = static_cast<int>(a.in.size());
  if (!rule.variadic && count != 2) {
    return a.im.Error(a.n, absl::StrCat("expects 2 inputs, got ", count));
  }
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* first, a.Arg(0));
  ConstTensor acc = *first;
  for (int i = 1; i < count; ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* next, a.Arg(i));
    TUNEJIT_ASSIGN_OR_RETURN(acc, ApplyBinary(a, rule, acc, *next));
  }
  return Single(std::move(acc));
}

Folded FoldBinaryOp(const FoldArgs& a) { return FoldBinary(a, *FindBinaryRule(a.n.op_type())); }

Folded FoldMod(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(int64_t fmod, a.im.AttrInt(a.n, "fmod", 0));
  return FoldBinary(a, fmod != 0 ? kFmodRule : kModRule);
}

// ---- Unary functions. `i` (nullptr: computed in double) returns false on overflow.

struct UnaryRule {
  absl::string_view op;
  double (*f)(double);
  bool (*i)(int64_t, int64_t*);
  bool to_bool = false;
};

bool INeg(int64_t x, int64_t* o) {
  if (x == std::numeric_limits<int64_t>::min()) return false;
  *o = -x;
  return true;
}

constexpr UnaryRule kUnaryRules[] = {
    {"Neg", [](double x) { return -x; }, INeg},
    {"Abs", [](double x) { return std::fabs(x); },
     [](int64_t x, int64_t* o) { return x < 0 ? INeg(x, o) : IKeep(x, o); }},
    {"Sign", [](double x) { return double((x > 0) - (x < 0)); },
     [](int64_t x, int64_t* o) { return IKeep((x > 0) - (x < 0), o); }},
    {"Relu", [](double x) { return x > 0 ? x : 0.0; },
     [](int64_t x, int64_t* o) { return IKeep(x > 0 ? x : 0, o); }},
    {"Floor", [](double x) { return std::floor(x); }, IKeep},
    {"Ceil", [](double x) { return std::ceil(x); }, IKeep},
    {"Round", [](double x) { return std::nearbyint(x); }, IKeep},  // half to even
    {"Sqrt", [](double x) { return std::sqrt(x); }, nullptr},
    {"Reciprocal", [](double x) { return 1 / x; }, nullptr},
    {"Exp", [](double x) { return std::exp(x); }, nullptr},
    {"Log", [](double x) { return std::log(x); }, nullptr},
    {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, nullptr},
    {"Tanh", [](double x) { return std::tanh(x); }, nullptr},
    {"Erf", [](double x) { return std::erf(x); }, nullptr},
    {"Cos", [](double x) { return std::cos(x); }, nullptr},  // rotary position tables
    {"Sin", [](double x) { return std::sin(x); }, nullptr},
    {"Not", [](double x) { return (x == 0 ? 1.0 : 0.0); },
     [](int64_t x, int64_t* o) { return IKeep(x == 0, o); }, true},
    {"IsNaN", [](double x) { return (std::isnan(x) ? 1.0 : 0.0); },
     [](int64_t, int64_t* o) { return IKeep(0, o); }, true},
};

Folded FoldUnaryOp(const FoldArgs& a) {
  const UnaryRule* rule = nullptr;
  for (const UnaryRule& r : kUnaryRules) {
    if (r.op == a.n.op_type()) rule = &r;
  }
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  const DType dtype = rule->to_bool ? DType::kBool : x->dtype;
  TUNEJIT_RETURN_IF_ERROR(a.Charge(x->dims, dtype));
  if (IsFloatType(x->dtype) || rule->i == nullptr) {
    std::vector<double> v = x->Doubles();
    for (double& e : v) e = rule->f(e);
    return Single(FromDoubles(dtype, x->dims, v));
  }
  std::vector<int64_t> v = x->Ints();
  for (int64_t& e : v) {
    if (!rule->i(e, &e)) return a.im.Error(a.n, "integer overflow");
  }
  return Single(FromInts(dtype, x->dims, v));
}

// ---- Where, Cast, CastLike, Range.

Folded FoldWhere(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* c, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(1));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* y, a.Arg(2));
  if (x->dtype != y->dtype) {
    return a.im.Error(
        a.n, absl::StrCat("X and Y differ in type (", std::string(DTypeName(x->dtype)), ", ",
                          std::string(DTypeName(y->dtype)), ")"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(Dims xy, a.im.AtNode(a.n, BroadcastShape(x->dims, y->dims)));
  TUNEJIT_ASSIGN_OR_RETURN(Dims out, a.im.AtNode(a.n, BroadcastShape(c->dims, xy)));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(out, x->dtype));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor cb, a.im.AtNode(a.n, BroadcastTo(*c, out)));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor r, a.im.AtNode(a.n, BroadcastTo(*x, out)));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor yb, a.im.AtNode(a.n, BroadcastTo(*y, out)));
  const size_t es = static_cast<size_t>(DTypeSize(r.dtype));
  const std::vector<int64_t> cond = cb.Ints();
  std::vector<uint8_t> bytes(r.bytes.begin(), r.bytes.end());
  for (size_t k = 0; k < cond.size(); ++k) {
    if (cond[k] == 0) std::memcpy(bytes.data() + k * es, yb.bytes.data() + k * es, es);
  }
  r.bytes = std::move(bytes);
  return Single(std::move(r));
}

absl::StatusOr<ConstTensor> CastTo(const FoldArgs& a, const ConstTensor& x, DType to) {
  TUNEJIT_RETURN_IF_ERROR(a.Charge(x.dims, to));
  // Float to integer truncates toward zero (FromDoubles); integers convert exactly or wrap.
  if (IsFloatType(to) || IsFloatType(x.dtype)) return FromDoubles(to, x.dims, x.Doubles());
  return FromInts(to, x.dims, x.Ints());
}

Folded FoldCast(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  if (a.im.Attr(a.n, "to") == nullptr) return a.im.Error(a.n, "attribute 'to' is missing");
  TUNEJIT_ASSIGN_OR_RETURN(int64_t to, a.im.AttrInt(a.n, "to", 0));
  const std::optional<DType> dtype = DTypeFromOnnx(static_cast<int32_t>(to));
  if (!dtype || to != static_cast<int32_t>(to)) {
    return a.im.Unsupported(
        a.n, absl::StrCat("attribute 'to' = ", OnnxTypeName(static_cast<int32_t>(to)),
                          ": casts to FLOAT, DOUBLE, INT64, INT32, INT8, "
                          "UINT8 and BOOL are supported"));
  }
  return Single(CastTo(a, *x, *dtype));
}

Folded FoldCastLike(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* like, a.Arg(1));
  return Single(CastTo(a, *x, like->dtype));
}

// A scalar operand of Range.
absl::StatusOr<const ConstTensor*> ScalarArg(const FoldArgs& a, int i) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* t, a.Arg(i));
  if (t->NumElements() != 1) {
    return a.im.Error(a.n,
                      absl::StrCat("input ", i, " must be a scalar, got ", ShapeText(t->dims)));
  }
  return t;
}

// Elements of an integer Range (start, limit, delta) as an unsigned count; nullopt on overflow.
std::optional<uint64_t> IntRangeCount(int64_t start, int64_t limit, int64_t delta) {
  int64_t diff = 0;
  if (__builtin_sub_overflow(limit, start, &diff)) return std::nullopt;
  if ((delta > 0) != (diff > 0) || diff == 0) return 0;
  const uint64_t span = diff > 0 ? uint64_t(diff) : uint64_t{0} - uint64_t(diff);
  const uint64_t step = delta > 0 ? uint64_t(delta) : uint64_t{0} - uint64_t(delta);
  return 1 + (span - 1) / step;
}

Folded FoldRange(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* start, ScalarArg(a, 0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* limit, ScalarArg(a, 1));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* delta, ScalarArg(a, 2));
  const DType dtype = start->dtype;
  if (IsFloatType(dtype)) {
    const double s = start->Doubles()[0], d = delta->Doubles()[0];
    const double count = std::ceil((limit->Doubles()[0] - s) / d);
    if (d == 0 || !(count < static_cast<double>(kMaxElements))) {
      return a.im.Error(a.n, "delta is 0 or the range is too long");
    }
    const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
    TUNEJIT_RETURN_IF_ERROR(a.Charge({n}, dtype));
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[k] = s + static_cast<double>(k) * d;
    return Single(FromDoubles(dtype, {n}, v));
  }
  const int64_t s = start->Ints()[0], d = delta->Ints()[0];
  const std::optional<uint64_t> count =
      d == 0 ? std::nullopt : IntRangeCount(s, limit->Ints()[0], d);
  if (!count || *count > static_cast<uint64_t>(kMaxElements)) {
    return a.im.Error(a.n, "delta is 0 or the range is too long");
  }
  const int64_t n = static_cast<int64_t>(*count);
  TUNEJIT_RETURN_IF_ERROR(a.Charge({n}, dtype));
  std::vector<int64_t> v(static_cast<size_t>(n));
  // Every element lies between start and limit; unsigned arithmetic keeps the products defined.
  for (int64_t k = 0; k < n; ++k) v[k] = int64_t(uint64_t(s) + uint64_t(k) * uint64_t(d));
  return Single(FromInts(dtype, {n}, v));
}

// Clip of a float constant (Swin V2's logit scale, clamped before its exp): bounds are optional
// one-element inputs; NaN passes through.
Folded FoldClip(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  if (!IsFloatType(x->dtype)) {
    return a.im.Unsupported(
        a.n, absl::StrCat("a constant of ", std::string(DTypeName(x->dtype)), ": folds floats"));
  }
  double bound[2] = {-std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::infinity()};
  for (int i = 1; i <= 2; ++i) {
    if (!a.Has(i)) continue;
    TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* b, a.Arg(i));
    if (b->NumElements() != 1) {
      return a.im.Error(a.n, absl::StrCat(i == 1 ? "min" : "max", " must hold one value, got ",
                                          ShapeText(b->dims)));
    }
    bound[i - 1] = b->Doubles()[0];
  }
  std::vector<double> v = x->Doubles();
  for (double& e : v) {
    if (e < bound[0]) e = bound[0];
    if (e > bound[1]) e = bound[1];
  }
  return Single(FromDoubles(x->dtype, x->dims, v));
}

// MatMul of two float constants (Swin V2's continuous position bias MLP on its constant table of
// relative coordinates): numpy's matmul of operands of rank >= 2, batch dims broadcast, summed
// in double, in the operands' type.
Folded FoldMatMul(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* y, a.Arg(1));
  const size_t rx = x->dims.size(), ry = y->dims.size();
  if (!IsFloatType(x->dtype) || x->dtype != y->dtype || rx < 2 || ry < 2 ||
      x->dims[rx - 1] != y->dims[ry - 2]) {
    return a.im.Unsupported(
        a.n, absl::StrCat(
                 "constant operands ", std::string(DTypeName(x->dtype)), " ", ShapeText(x->dims),
                 " and ", std::string(DTypeName(y->dtype)), " ", ShapeText(y->dims),
                 ": folds float operands of one type, rank >= 2, [..., M, K] x [..., K, N]"));
  }
  const int64_t m = x->dims[rx - 2], k = x->dims[rx - 1], n = y->dims[ry - 1];
  TUNEJIT_ASSIGN_OR_RETURN(
      Dims batch, a.im.AtNode(a.n, BroadcastShape(Dims(x->dims.begin(), x->dims.end() - 2),
                                                  Dims(y->dims.begin(), y->dims.end() - 2))));
  auto with = [&batch](int64_t r, int64_t c) {
    Dims d = batch;
    d.push_back(r);
    d.push_back(c);
    return d;
  };
  TUNEJIT_RETURN_IF_ERROR(a.Charge(with(m, k), x->dtype));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(with(k, n), x->dtype));
  TUNEJIT_RETURN_IF_ERROR(a.Charge(with(m, n), x->dtype));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor xb, a.im.AtNode(a.n, BroadcastTo(*x, with(m, k))));
  TUNEJIT_ASSIGN_OR_RETURN(ConstTensor yb, a.im.AtNode(a.n, BroadcastTo(*y, with(k, n))));
  const std::vector<double> xv = xb.Doubles(), yv = yb.Doubles();
  const int64_t batches = DimsProduct(batch);
  std::vector<double> r(static_cast<size_t>(batches * m * n), 0.0);
  for (int64_t b = 0; b < batches; ++b) {
    const double* xs = xv.data() + b * m * k;
    const double* ys = yv.data() + b * k * n;
    double* rs = r.data() + b * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        const double v = xs[i * k + p];
        for (int64_t j = 0; j < n; ++j) rs[i * n + j] += v * ys[p * n + j];
      }
    }
  }
  return Single(FromDoubles(x->dtype, with(m, n), r));
}

// Trilu of a constant (a causal attention mask, torch.tril / triu of a table of ones): the lower
// (upper = 0) or upper triangle of each matrix in the last two dims from diagonal k (input 1,
// default 0), everything else zero.
Folded FoldTrilu(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t upper, a.im.AttrInt(a.n, "upper", 1));
  int64_t k = 0;
  if (a.Has(1)) {
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> ks, a.IntsArg(1, "k"));
    if (ks.size() != 1) return a.im.Error(a.n, "k must hold one value");
    k = ks[0];
  }
  const size_t rank = x->dims.size();
  if (rank < 2) return a.im.Error(a.n, absl::StrCat("needs rank >= 2, got ", ShapeText(x->dims)));
  const int64_t rows = x->dims[rank - 2], cols = x->dims[rank - 1];
  const size_t element = static_cast<size_t>(DTypeSize(x->dtype));
  std::vector<uint8_t> bytes(x->bytes.begin(), x->bytes.end());
  for (size_t at = 0; at * element < bytes.size(); ++at) {
    const int64_t j = static_cast<int64_t>(at) % cols, i = static_cast<int64_t>(at) / cols % rows;
    const bool keep = upper != 0 ? j - i >= k : j - i <= k;
    if (!keep) std::memset(bytes.data() + at * element, 0, element);
  }
  return Single(ConstTensor{"", x->dtype, x->dims, std::move(bytes)});
}

// CumSum of a constant along axis (input 1), exclusive and reverse as attributes (OPT's position
// ids from an all-ones attention mask).
Folded FoldCumSum(const FoldArgs& a) {
  TUNEJIT_ASSIGN_OR_RETURN(const ConstTensor* x, a.Arg(0));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, a.IntsArg(1, "axis"));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t exclusive, a.im.AttrInt(a.n, "exclusive", 0));
  TUNEJIT_ASSIGN_OR_RETURN(int64_t reverse, a.im.AttrInt(a.n, "reverse", 0));
  const int64_t rank = static_cast<int64_t>(x->dims.size());
  if (axes.size() != 1 || axes[0] < -rank || axes[0] >= rank) {
    return a.im.Error(a.n, absl::StrCat("axis must be one value in [", -rank, ", ", rank, ")"));
  }
  const int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dims[d];
  const int64_t len = x->dims[axis], outer = x->NumElements() / std::max<int64_t>(1, len * inner);
  const bool ints = !IsFloatType(x->dtype);
  std::vector<double> v = x->Doubles();
  std::vector<double> r(v.size(), 0.0);
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double sum = 0;
      for (int64_t step = 0; step < len; ++step) {
        const int64_t p = reverse != 0 ? len - 1 - step : step;
        const size_t at = static_cast<size_t>((o * len + p) * inner + i);
        if (exclusive != 0) r[at] = sum;
        sum += v[at];
        if (exclusive == 0) r[at] = sum;
        if (ints && std::fabs(sum) > 9.007199254740992e15) {
          return a.im.Error(a.n, "the integer sum leaves the exactly representable range");
        }
      }
    }
  }
  return Single(FromDoubles(x->dtype, x->dims, r));
}

struct Entry {
  absl::string_view op_type;
  Folder fold;
};

constexpr Entry kSpecial[] = {
    {"Cast", FoldCast},     {"CastLike", FoldCastLike}, {"Clip", FoldClip},
    {"MatMul", FoldMatMul}, {"Mod", FoldMod},           {"Range", FoldRange},
    {"Where", FoldWhere},   {"Trilu", FoldTrilu},       {"CumSum", FoldCumSum},
};

}  // namespace

Folder FindMathFolder(absl::string_view op_type) {
  if (FindBinaryRule(op_type) != nullptr) return FoldBinaryOp;
  for (const UnaryRule& r : kUnaryRules) {
    if (r.op == op_type) return FoldUnaryOp;
  }
  for (const Entry& e : kSpecial) {
    if (e.op_type == op_type) return e.fold;
  }
  return nullptr;
}

}  // namespace tunejit::onnx_import
