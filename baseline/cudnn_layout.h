// File: baseline/cudnn_layout.h
// Host-side layout of the fp16 cuDNN baseline (BaselinePrecision::kFp16), which keeps every 4-D
// tensor float16 NHWC on the device (cuDNN's tensor-core convolutions want channels last) while
// the graph, its weights and its callers speak float32 NCHW. Pure CPU: no cuDNN needed.
//
//   std::vector<uint16_t> dev = ToHalfChannelsLast(nchw, {n, c, h, w});  // upload this
//   std::vector<float> back = FromHalfChannelsLast(dev, {n, c, h, w});    // ~ nchw
#ifndef TUNEJIT_BASELINE_CUDNN_LAYOUT_H_
#define TUNEJIT_BASELINE_CUDNN_LAYOUT_H_

#include <array>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace tunejit {

// [d0, d1, d2, d3] float32 (NCHW, or a filter KCRS) -> [d0, d2, d3, d1] float16 bits, rounded to
// nearest even. A dense weight [out, C*H*W] reading a flattened NCHW activation, viewed as
// [out, C, H, W], becomes the weight of the channels-last flatten (columns in h, w, c order).
// `values` must hold the product of `dims`.
std::vector<uint16_t> ToHalfChannelsLast(absl::Span<const float> values,
                                         const std::array<int64_t, 4>& dims);
// The inverse: [d0, d2, d3, d1] float16 bits -> [d0, d1, d2, d3] float32.
std::vector<float> FromHalfChannelsLast(absl::Span<const uint16_t> values,
                                        const std::array<int64_t, 4>& dims);

}  // namespace tunejit

#endif  // TUNEJIT_BASELINE_CUDNN_LAYOUT_H_
