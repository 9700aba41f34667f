#include "ops/cpu_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/tensor_ops_reference.h"

namespace tunejit::cpuref {
namespace {

template <typename Acc, typename T>
std::vector<Acc> Conv2d(const autotvm::Conv2dParams& p, absl::Span<const T> data,
                        absl::Span<const T> weight) {
  const int64_t oh = p.OutH(), ow = p.OutW();
  const int64_t cig = p.ci / p.groups, cog = p.co / p.groups;
  std::vector<Acc> out(static_cast<size_t>(p.n * p.co * oh * ow));
  for (int64_t b = 0; b < p.n; ++b) {
    for (int64_t f = 0; f < p.co; ++f) {
      const int64_t g = f / cog;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          Acc acc = 0;
          for (int64_t c = 0; c < cig; ++c) {
            const int64_t gc = g * cig + c;
            for (int64_t ky = 0; ky < p.kh; ++ky) {
              const int64_t iy = y * p.stride_h + ky * p.dilation_h - p.pad_top;
              if (iy < 0 || iy >= p.h) continue;
              for (int64_t kx = 0; kx < p.kw; ++kx) {
                const int64_t ix = x * p.stride_w + kx * p.dilation_w - p.pad_left;
                if (ix < 0 || ix >= p.w) continue;
                acc += static_cast<Acc>(data[((b * p.ci + gc) * p.h + iy) * p.w + ix]) *
                       static_cast<Acc>(weight[((f * cig + c) * p.kh + ky) * p.kw + kx]);
              }
            }
          }
          out[((b * p.co + f) * oh + y) * ow + x] = acc;
        }
      }
    }
  }
  return out;
}

template <typename Acc, typename T>
std::vector<Acc> Dense(int64_t m, int64_t n, int64_t k, absl::Span<const T> a,
                       absl::Span<const T> w) {
  std::vector<Acc> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      Acc acc = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        acc += static_cast<Acc>(a[i * k + kk]) * static_cast<Acc>(w[j * k + kk]);
      }
      out[i * n + j] = acc;
    }
  }
  return out;
}

// The kernels' float epilogue: acc as float, then * scale, + bias (each rounded), relu, the
// activation.
float EpilogueValue(float v, int64_t c, const Epilogue& e, absl::Span<const float> bias,
                    absl::Span<const float> scale) {
  if (e.output != Epilogue::Output::kAccumulator) v = v * scale[c];
  if (e.bias) v = v + bias[c];
  if (e.relu) v = v < 0.0f ? 0.0f : v;
  return ActivationValue(e, v);
}

template <typename A>
std::vector<float> EpilogueFloatImpl(absl::Span<const A> acc, int64_t channels, int64_t inner,
                                     const Epilogue& e, absl::Span<const float> bias,
                                     absl::Span<const float> scale) {
  std::vector<float> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    out[i] = EpilogueValue(static_cast<float>(acc[i]), c, e, bias, scale);
  }
  return out;
}

template <typename A>
std::vector<int8_t> EpilogueInt8Impl(absl::Span<const A> acc, int64_t channels, int64_t inner,
                                     const Epilogue& e, absl::Span<const float> bias,
                                     absl::Span<const float> scale) {
  std::vector<int8_t> out(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) {
    const int64_t c = (static_cast<int64_t>(i) / inner) % channels;
    out[i] = SaturateToInt8(EpilogueValue(static_cast<float>(acc[i]), c, e, bias, scale));
  }
  return out;
}

// Fills every output position of a 2-D pool with reduce(visit), where visit(f) calls f(value)
// for each input element of that output's window inside the image (padding is skipped): max and
// average pooling share the window walk.
template <typename T, typename Reduce>
std::vector<T> Pool(const Pool2dParams& p, absl::Span<const T> x, Reduce reduce) {
  const int64_t oh = p.OutH(), ow = p.OutW();
  std::vector<T> out(static_cast<size_t>(p.n * p.c * oh * ow));
  for (int64_t plane = 0; plane < p.n * p.c; ++plane) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t xx = 0; xx < ow; ++xx) {
        auto visit = [&](auto&& f) {
          for (int ky = 0; ky < p.kh; ++ky) {
            const int64_t iy = y * p.stride_h + ky - p.pad_top;
            if (iy < 0 || iy >= p.h) continue;
            for (int kx = 0; kx < p.kw; ++kx) {
              const int64_t ix = xx * p.stride_w + kx - p.pad_left;
              if (ix < 0 || ix >= p.w) continue;
              f(x[(plane * p.h + iy) * p.w + ix]);
            }
          }
        };
        out[(plane * oh + y) * ow + xx] = reduce(visit);
      }
    }
  }
  return out;
}

template <typename T>
std::vector<T> MaxPool(const Pool2dParams& p, absl::Span<const T> x) {
  return Pool(p, x, [](auto&& visit) {
    T best = std::numeric_limits<T>::lowest();
    if constexpr (std::is_floating_point_v<T>) best = -std::numeric_limits<T>::infinity();
    visit([&](T v) { best = std::max(best, v); });
    return best;
  });
}

template <typename T>
std::vector<float> DequantizeImpl(absl::Span<const T> x, int64_t channels, int64_t inner,
                                  absl::Span<const float> scale) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = channels == 1 ? 0 : (static_cast<int64_t>(i) / inner) % channels;
    out[i] = static_cast<float>(x[i]) * scale[c];
  }
  return out;
}

}  // namespace

std::vector<double> Conv2dFloat(const autotvm::Conv2dParams& p, absl::Span<const float> data,
                                absl::Span<const float> weight) {
  return Conv2d<double>(p, data, weight);
}

std::vector<int32_t> Conv2dInt8(const autotvm::Conv2dParams& p, absl::Span<const int8_t> data,
                                absl::Span<const int8_t> weight) {
  return Conv2d<int32_t>(p, data, weight);
}

std::vector<double> DenseFloat(int64_t m, int64_t n, int64_t k, absl::Span<const float> a,
                               absl::Span<const float> w) {
  return Dense<double>(m, n, k, a, w);
}

std::vector<int32_t> DenseInt8(int64_t m, int64_t n, int64_t k, absl::Span<const int8_t> a,
                               absl::Span<const int8_t> w) {
  return Dense<int32_t>(m, n, k, a, w);
}

std::vector<float> PatchGather(const autotvm::Conv2dParams& p, int64_t columns,
                               absl::Span<const float> data) {
  const int64_t oh = p.OutH(), ow = p.OutW(), k = p.ci * p.kh * p.kw;
  std::vector<float> out(static_cast<size_t>(p.n * oh * ow * columns), 0.0f);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t x = 0; x < ow; ++x) {
        float* row = out.data() + ((n * oh + y) * ow + x) * columns;
        for (int64_t col = 0; col < k; ++col) {
          const int64_t c = col / (p.kh * p.kw), i = col / p.kw % p.kh, j = col % p.kw;
          row[col] = data[((n * p.ci + c) * p.h + y * p.stride_h + i) * p.w + x * p.stride_w + j];
        }
      }
    }
  }
  return out;
}

std::vector<double> BatchMatmulFloat(const autotvm::BatchMatmulParams& p, absl::Span<const float> x,
                                     absl::Span<const float> y, bool y_kn) {
  std::vector<double> out(static_cast<size_t>(p.batch() * p.m * p.n));
  for (int64_t b = 0; b < p.batch(); ++b) {
    const float* xb = x.data() + (p.x_batch == 1 ? 0 : b * p.m * p.k);
    const float* yb = y.data() + (p.y_batch == 1 ? 0 : b * p.n * p.k);
    for (int64_t i = 0; i < p.m; ++i) {
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t kk = 0; kk < p.k; ++kk) {
          const float yv = y_kn ? yb[kk * p.n + j] : yb[j * p.k + kk];
          acc += static_cast<double>(xb[i * p.k + kk]) * yv;
        }
        out[(b * p.m + i) * p.n + j] = acc;
      }
    }
  }
  return out;
}

std::vector<float> EpilogueFloat(absl::Span<const double> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale) {
  return EpilogueFloatImpl(acc, channels, inner, e, bias, scale);
}

std::vector<float> EpilogueFloat(absl::Span<const int32_t> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale) {
  return EpilogueFloatImpl(acc, channels, inner, e, bias, scale);
}

std::vector<int8_t> EpilogueInt8(absl::Span<const double> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale) {
  return EpilogueInt8Impl(acc, channels, inner, e, bias, scale);
}

std::vector<int8_t> EpilogueInt8(absl::Span<const int32_t> acc, int64_t channels, int64_t inner,
                                 const Epilogue& e, absl::Span<const float> bias,
                                 absl::Span<const float> scale) {
  return EpilogueInt8Impl(acc, channels, inner, e, bias, scale);
}

std::vector<int32_t> EpilogueInt32(absl::Span<const int32_t> acc, const Epilogue& e) {
  std::vector<int32_t> out(acc.begin(), acc.end());
  if (e.relu) {
    for (int32_t& v : out) v = std::max(v, 0);
  }
  return out;
}

int8_t SaturateToInt8(float v) {
  // nearbyint uses the default rounding mode: round half to even, as __float2int_rn.
  const float r = std::nearbyint(std::clamp(v, -128.0f, 127.0f));
  return static_cast<int8_t>(r);
}

std::vector<float> BiasRelu(absl::Span<const float> x, int64_t channels, int64_t inner,
                            absl::Span<const float> bias, bool relu) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    float v = x[i] + bias[(static_cast<int64_t>(i) / inner) % channels];
    out[i] = relu && v < 0.0f ? 0.0f : v;
  }
  return out;
}

std::vector<float> MaxPool2d(const Pool2dParams& p, absl::Span<const float> x) {
  return MaxPool(p, x);
}

std::vector<int8_t> MaxPool2d(const Pool2dParams& p, absl::Span<const int8_t> x) {
  return MaxPool(p, x);
}

std::vector<float> AvgPool2d(const Pool2dParams& p, absl::Span<const float> x) {
  return Pool(p, x, [&p](auto&& visit) {
    double sum = 0;
    int count = 0;
    visit([&](float v) {
      sum += v;
      ++count;
    });
    // Floor-mode windows never pass the padded edge, so "include pad" means the whole window.
    const int divisor = p.count_include_pad ? p.kh * p.kw : count;
    return static_cast<float>(sum / std::max(divisor, 1));
  });
}

std::vector<float> GlobalAvgPool(int64_t planes, int64_t inner, absl::Span<const float> x) {
  std::vector<float> out(static_cast<size_t>(planes));
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0;
    for (int64_t j = 0; j < inner; ++j) sum += x[p * inner + j];
    out[p] = static_cast<float>(sum / static_cast<double>(inner));
  }
  return out;
}

std::vector<float> AddRelu(absl::Span<const float> x, absl::Span<const float> r, bool relu) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i] + r[i];
    out[i] = relu && v < 0.0f ? 0.0f : v;
  }
  return out;
}

std::vector<float> AddInt8(absl::Span<const int8_t> x, absl::Span<const int8_t> r, float scale_x,
                           float scale_r, bool relu) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float a = static_cast<float>(x[i]) * scale_x;
    const float b = static_cast<float>(r[i]) * scale_r;
    const float v = a + b;
    out[i] = relu && v < 0.0f ? 0.0f : v;
  }
  return out;
}

float ActivationValue(const Epilogue& e, float v) {
  switch (e.activation) {
    case Epilogue::Activation::kNone:
      return v;
    case Epilogue::Activation::kClip:
      return v < e.clip_lo ? e.clip_lo : (v > e.clip_hi ? e.clip_hi : v);
    case Epilogue::Activation::kSilu:
      return UnaryValue(UnaryFn::kSilu, v);
    case Epilogue::Activation::kHardSwish:
      return UnaryValue(UnaryFn::kHardSwish, v);
    case Epilogue::Activation::kGelu:
      return UnaryValue(UnaryFn::kGelu, v);
    case Epilogue::Activation::kGeluTanh:
      return UnaryValue(UnaryFn::kGeluTanh, v);
  }
  return v;
}

std::vector<float> Clip(absl::Span<const float> x, float lo, float hi) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
  return out;
}

std::vector<float> Softmax(int64_t rows, int64_t cols, absl::Span<const float> x) {
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.data() + r * cols;
    const double m = *std::max_element(in, in + cols);
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(in[j] - m);
    for (int64_t j = 0; j < cols; ++j)
      out[r * cols + j] = static_cast<float>(std::exp(in[j] - m) / sum);
  }
  return out;
}

std::vector<int8_t> Quantize(absl::Span<const float> x, float scale) {
  std::vector<int8_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = SaturateToInt8(x[i] / scale);
  return out;
}

std::vector<float> Dequantize(absl::Span<const int8_t> x, int64_t channels, int64_t inner,
                              absl::Span<const float> scale) {
  return DequantizeImpl(x, channels, inner, scale);
}

std::vector<float> Dequantize(absl::Span<const int32_t> x, int64_t channels, int64_t inner,
                              absl::Span<const float> scale) {
  return DequantizeImpl(x, channels, inner, scale);
}

std::vector<int8_t> Requantize(absl::Span<const int32_t> x, int64_t channels, int64_t inner,
                               absl::Span<const float> scale) {
  std::vector<int8_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int64_t c = channels == 1 ? 0 : (static_cast<int64_t>(i) / inner) % channels;
    out[i] = SaturateToInt8(static_cast<float>(x[i]) * scale[c]);
  }
  return out;
}

double RelativeError(absl::Span<const float> a, absl::Span<const float> b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return std::numeric_limits<double>::infinity();
    const double d = static_cast<double>(a[i]) - b[i];
    diff += d * d;
    norm += static_cast<double>(b[i]) * b[i];
  }
  if (norm == 0) return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
  return std::sqrt(diff / norm);
}

}  // namespace tunejit::cpuref
