// File: graph/quantize.h
// The int8 arithmetic of the executor (executor/executor.h), on the host, so it can be tested
// without a GPU:
//  * weights: symmetric, per output channel: s_w[c] = max |w[c, ...]| / 127, q = round half to
//    even (w / s_w[c]), saturated to [-127, 127] (an all-zero channel gets s_w = 1, q = 0);
//  * activations: symmetric, per tensor: s = max |x| / 127 over a calibration batch;
//  * an int8 conv accumulates acc = sum(q_x * q_w), so acc * s_in * s_w[c] is the float conv. Its
//    epilogue (ops/op_template.h: v = acc * scale[c] + bias[c], relu, store) then uses
//      requantize to the next int8 conv: scale[c] = s_in * s_w[c] / s_out, bias[c] = b[c] / s_out
//      float output:                    scale[c] = s_in * s_w[c],         bias[c] = b[c]
//    and a float conv requantizing its output: scale[c] = 1 / s_out, bias[c] = b[c] / s_out.
//
//   QuantizedWeights q = QuantizeWeights(weight_floats, /*channels=*/64);
//   float s_x = ActivationScale(calibrated_abs_max);
//   EpilogueScales e = RequantizeEpilogue(s_x, q.scales, bias, s_next);
#ifndef TUNEJIT_GRAPH_QUANTIZE_H_
#define TUNEJIT_GRAPH_QUANTIZE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tunejit {

struct QuantizedWeights {
  std::vector<int8_t> values;  // same layout as the float weights
  std::vector<float> scales;   // per output channel (the weights' first dimension)
};

// `weights` holds `channels` equal rows (OIHW or [N, K]); channels must divide its size.
QuantizedWeights QuantizeWeights(absl::Span<const float> weights, int64_t channels);

// One output channel of QuantizeWeights: writes q of each value of `row` to `out` (same size) and
// returns s_w. The row's values may come in any order (s_w is the row's abs-max, whatever the
// order), so a layout reorder before or after quantizing gives the same bytes.
float QuantizeRow(absl::Span<const float> row, absl::Span<int8_t> out);

// max |x| / 127; 1 when abs_max is 0 or not finite (nothing to scale: every value quantizes to 0).
float ActivationScale(float abs_max);

// max |x| over `values` (the CPU twin of the GPU abs-max kernel).
float AbsMax(absl::Span<const float> values);

// The scale and bias vectors of an epilogue (ops/op_template.h slots 3 and 2).
struct EpilogueScales {
  std::vector<float> scale;
  std::vector<float> bias;  // empty when the layer has no bias
};

// int8 conv -> int8 (kInt8Requantize).
EpilogueScales RequantizeEpilogue(float s_in, absl::Span<const float> s_w,
                                  absl::Span<const float> bias, float s_out);
// int8 conv -> float32 (kFloat32).
EpilogueScales DequantizeEpilogue(float s_in, absl::Span<const float> s_w,
                                  absl::Span<const float> bias);
// float conv -> int8 (kInt8Requantize): `channels` entries of 1 / s_out.
EpilogueScales FloatToInt8Epilogue(int64_t channels, absl::Span<const float> bias, float s_out);

}  // namespace tunejit

#endif  // TUNEJIT_GRAPH_QUANTIZE_H_
