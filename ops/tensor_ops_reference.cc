#include "ops/tensor_ops_reference.h"

#include <algorithm>
#include <cmath>

#include "ops/broadcast.h"

namespace tunejit::cpuref {
namespace {

int64_t Count(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The offset `strides` give to flat index `i` of `shape`.
int64_t Offset(int64_t i, const Dims& shape, const Dims& strides) {
  int64_t offset = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    offset += (i % shape[d]) * strides[d];
    i /= shape[d];
  }
  return offset;
}

// [outer, dim, inner] around `axis`.
struct AxisView {
  int64_t outer = 1, dim = 1, inner = 1;
};
AxisView ViewAround(const Dims& shape, int axis) {
  AxisView v;
  for (int d = 0; d < axis; ++d) v.outer *= shape[d];
  v.dim = shape[axis];
  for (size_t d = axis + 1; d < shape.size(); ++d) v.inner *= shape[d];
  return v;
}

}  // namespace

float UnaryValue(UnaryFn fn, float x, float alpha, float beta) {
  switch (fn) {
    case UnaryFn::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
    case UnaryFn::kTanh:
      return std::tanh(x);
    case UnaryFn::kErf:
      return std::erf(x);
    case UnaryFn::kGelu:
      return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f));
    case UnaryFn::kHardSigmoid:
      return std::min(std::max(alpha * x + beta, 0.0f), 1.0f);
    case UnaryFn::kHardSwish:
      return x * std::min(std::max(x / 6.0f + 0.5f, 0.0f), 1.0f);
    case UnaryFn::kSilu:
      return x / (1.0f + std::exp(-x));
    case UnaryFn::kSqrt:
      return std::sqrt(x);
    case UnaryFn::kExp:
      return std::exp(x);
    case UnaryFn::kReciprocal:
      return 1.0f / x;
    case UnaryFn::kNeg:
      return -x;
    case UnaryFn::kReplaceNan:
      return std::isnan(x) ? alpha : x;
    case UnaryFn::kGeluTanh:
      return 0.5f * x * (1.0f + std::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

float BinaryValue(BinaryFn fn, float a, float b) {
  switch (fn) {
    case BinaryFn::kAdd:
      return a + b;
    case BinaryFn::kSub:
      return a - b;
    case BinaryFn::kMul:
      return a * b;
    case BinaryFn::kDiv:
      return a / b;
    case BinaryFn::kPow:
      return std::pow(a, b);
    case BinaryFn::kMax:
      return std::max(a, b);
    case BinaryFn::kMin:
      return std::min(a, b);
  }
  return a;
}

std::vector<float> Unary(UnaryFn fn, absl::Span<const float> x, float alpha, float beta) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = UnaryValue(fn, x[i], alpha, beta);
  return y;
}

std::vector<float> Binary(BinaryFn fn, const Dims& a_shape, absl::Span<const float> a,
                          const Dims& b_shape, absl::Span<const float> b) {
  const Dims out = *BroadcastShape(a_shape, b_shape);
  const Dims sa = BroadcastStrides(a_shape, out), sb = BroadcastStrides(b_shape, out);
  std::vector<float> y(Count(out));
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    y[i] = BinaryValue(fn, a[Offset(i, out, sa)], b[Offset(i, out, sb)]);
  }
  return y;
}

std::vector<float> Concat(int axis, const std::vector<Dims>& shapes,
                          const std::vector<absl::Span<const float>>& inputs) {
  int64_t joined = 0;
  for (const Dims& s : shapes) joined += s[axis];
  Dims out = shapes[0];
  out[axis] = joined;
  const AxisView o = ViewAround(out, axis);
  std::vector<float> y(Count(out));
  int64_t at = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const int64_t dim = shapes[k][axis];
    for (int64_t p = 0; p < o.outer; ++p) {
      std::copy_n(inputs[k].data() + p * dim * o.inner, dim * o.inner,
                  y.data() + (p * joined + at) * o.inner);
    }
    at += dim;
  }
  return y;
}

std::vector<float> Transpose(const Dims& shape, const Dims& perm, absl::Span<const float> x) {
  Dims out(perm.size()), in_strides = RowMajorStrides(shape), strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out[i] = shape[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) y[i] = x[Offset(i, out, strides)];
  return y;
}

std::vector<float> Slice(const Dims& shape, int axis, int64_t start, int64_t end, int64_t step,
                         absl::Span<const float> x) {
  const AxisView v = ViewAround(shape, axis);
  const int64_t kept = (end - start + step - 1) / step;
  std::vector<float> y;
  y.reserve(v.outer * kept * v.inner);
  for (int64_t p = 0; p < v.outer; ++p) {
    for (int64_t j = start; j < end; j += step) {
      const float* row = x.data() + (p * v.dim + j) * v.inner;
      y.insert(y.end(), row, row + v.inner);
    }
  }
  return y;
}

std::vector<float> ReduceMean(const Dims& shape, const Dims& axes, absl::Span<const float> x) {
  Dims out = shape;
  int64_t count = 1;
  for (int64_t a : axes) {
    count *= shape[a];
    out[a] = 1;
  }
  std::vector<double> sum(Count(out), 0.0);
  const Dims out_strides = RowMajorStrides(out);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rest = i, o = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t idx = rest % shape[d];
      rest /= shape[d];
      if (out[d] == shape[d]) o += idx * out_strides[d];
    }
    sum[o] += x[i];
  }
  std::vector<float> y(sum.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<float>(sum[i] / count);
  return y;
}

std::vector<float> LayerNorm(const Dims& shape, int axis, float epsilon, absl::Span<const float> x,
                             absl::Span<const float> scale, absl::Span<const float> bias) {
  const AxisView v = ViewAround(shape, axis);
  const int64_t cols = v.dim * v.inner;
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < v.outer; ++r) {
    const float* row = x.data() + r * cols;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < cols; ++c) mean += row[c];
    mean /= cols;
    for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
    var /= cols;
    const double inv = 1.0 / std::sqrt(var + epsilon);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>((row[c] - mean) * inv * scale[c] + bias[c]);
    }
  }
  return y;
}

std::vector<float> Rope(const Dims& shape, absl::Span<const float> x,
                        absl::Span<const float> cos_table, absl::Span<const float> sin_table) {
  const int64_t dim = shape.back(), seq = shape[shape.size() - 2], half = dim / 2;
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t d = static_cast<int64_t>(i) % dim;
    const int64_t t = static_cast<int64_t>(i) / dim % seq * dim + d;
    const float r = d < half ? -x[i + half] : x[i - half];
    y[i] = x[i] * cos_table[t] + r * sin_table[t];
  }
  return y;
}

std::vector<float> RmsNorm(int64_t cols, float epsilon, absl::Span<const float> x,
                           absl::Span<const float> scale) {
  std::vector<float> y(x.size());
  for (size_t r = 0; r * cols < x.size(); ++r) {
    const float* row = x.data() + r * cols;
    double squares = 0;
    for (int64_t c = 0; c < cols; ++c) squares += double{row[c]} * row[c];
    const double inv = 1.0 / std::sqrt(squares / cols + epsilon);
    for (int64_t c = 0; c < cols; ++c) {
      y[r * cols + c] = static_cast<float>(row[c] * inv * scale[c]);
    }
  }
  return y;
}

std::vector<float> MatMul(const Dims& a_shape, absl::Span<const float> a, const Dims& b_shape,
                          absl::Span<const float> b) {
  const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back(), n = b_shape.back();
  const Dims a_batch(a_shape.begin(), a_shape.end() - 2),
      b_batch(b_shape.begin(), b_shape.end() - 2);
  const Dims batch = *BroadcastShape(a_batch, b_batch);
  const Dims sa = BroadcastStrides(a_batch, batch), sb = BroadcastStrides(b_batch, batch);
  const int64_t batches = Count(batch);
  std::vector<float> y(batches * m * n);
  for (int64_t i = 0; i < batches; ++i) {
    const float* pa = a.data() + Offset(i, batch, sa) * m * k;
    const float* pb = b.data() + Offset(i, batch, sb) * k * n;
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        double acc = 0;
        for (int64_t j = 0; j < k; ++j) acc += static_cast<double>(pa[r * k + j]) * pb[j * n + c];
        y[(i * m + r) * n + c] = static_cast<float>(acc);
      }
    }
  }
  return y;
}

std::vector<float> SoftmaxAxis(const Dims& shape, int axis, absl::Span<const float> x) {
  const AxisView v = ViewAround(shape, axis);
  std::vector<float> y(x.size());
  for (int64_t p = 0; p < v.outer; ++p) {
    for (int64_t q = 0; q < v.inner; ++q) {
      const int64_t base = p * v.dim * v.inner + q;
      float max = x[base];
      for (int64_t j = 1; j < v.dim; ++j) max = std::max(max, x[base + j * v.inner]);
      double sum = 0;
      for (int64_t j = 0; j < v.dim; ++j)
        sum += std::exp(static_cast<double>(x[base + j * v.inner]) - max);
      for (int64_t j = 0; j < v.dim; ++j) {
        y[base + j * v.inner] =
            static_cast<float>(std::exp(static_cast<double>(x[base + j * v.inner]) - max) / sum);
      }
    }
  }
  return y;
}

int64_t GatherRow(int64_t id, int64_t rows) {
  if (id < 0) id += rows;
  return std::clamp<int64_t>(id, 0, rows - 1);
}

std::vector<float> Gather(const Dims& table_shape, absl::Span<const float> table,
                          absl::Span<const int64_t> ids) {
  const int64_t rows = table_shape.empty() ? 0 : table_shape[0];
  const int64_t row = rows > 0 ? static_cast<int64_t>(table.size()) / rows : 0;
  std::vector<float> out;
  if (rows == 0) return out;
  out.reserve(ids.size() * row);
  for (int64_t id : ids) {
    const float* src = table.data() + GatherRow(id, rows) * row;
    out.insert(out.end(), src, src + row);
  }
  return out;
}

}  // namespace tunejit::cpuref
