#include "graph/quantize.h"

#include <algorithm>
#include <cmath>

namespace tunejit {

QuantizedWeights QuantizeWeights(absl::Span<const float> weights, int64_t channels) {
  QuantizedWeights q;
  q.values.resize(weights.size());
  q.scales.assign(static_cast<size_t>(channels), 1.0f);
  if (channels <= 0) return q;
  const size_t row = weights.size() / static_cast<size_t>(channels);
  for (int64_t c = 0; c < channels; ++c) {
    q.scales[c] =
        QuantizeRow(weights.subspan(c * row, row), absl::MakeSpan(q.values).subspan(c * row, row));
  }
  return q;
}

float QuantizeRow(absl::Span<const float> row, absl::Span<int8_t> out) {
  const float s = ActivationScale(AbsMax(row));
  for (size_t i = 0; i < row.size(); ++i) {
    // nearbyint rounds half to even in the default rounding mode, as the GPU's __float2int_rn.
    const float v = std::nearbyint(row[i] / s);
    out[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  return s;
}

float ActivationScale(float abs_max) {
  return abs_max > 0.0f && std::isfinite(abs_max) ? abs_max / 127.0f : 1.0f;
}

float AbsMax(absl::Span<const float> values) {
  float m = 0.0f;
  for (float v : values) m = std::max(m, std::fabs(v));
  return m;
}

EpilogueScales RequantizeEpilogue(float s_in, absl::Span<const float> s_w,
                                  absl::Span<const float> bias, float s_out) {
  EpilogueScales e;
  for (float w : s_w) e.scale.push_back(s_in * w / s_out);
  for (float b : bias) e.bias.push_back(b / s_out);
  return e;
}

EpilogueScales DequantizeEpilogue(float s_in, absl::Span<const float> s_w,
                                  absl::Span<const float> bias) {
  EpilogueScales e;
  for (float w : s_w) e.scale.push_back(s_in * w);
  e.bias.assign(bias.begin(), bias.end());
  return e;
}

EpilogueScales FloatToInt8Epilogue(int64_t channels, absl::Span<const float> bias, float s_out) {
  EpilogueScales e;
  e.scale.assign(static_cast<size_t>(channels), 1.0f / s_out);
  for (float b : bias) e.bias.push_back(b / s_out);
  return e;
}

}  // namespace tunejit
