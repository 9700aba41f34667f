#include "baseline/cudnn_layout.h"

#include "common/half.h"

namespace tunejit {
namespace {

// Calls f(first-major index, channels-last index) for every element of `dims` = [d0, d1, d2, d3].
template <typename F>
void ForEachChannelsLast(const std::array<int64_t, 4>& dims, F f) {
  const auto [d0, d1, d2, d3] = dims;
  for (int64_t a = 0; a < d0; ++a) {
    for (int64_t b = 0; b < d1; ++b) {
      for (int64_t c = 0; c < d2; ++c) {
        for (int64_t d = 0; d < d3; ++d) {
          f(((a * d1 + b) * d2 + c) * d3 + d, ((a * d2 + c) * d3 + d) * d1 + b);
        }
      }
    }
  }
}

}  // namespace

std::vector<uint16_t> ToHalfChannelsLast(absl::Span<const float> values,
                                         const std::array<int64_t, 4>& dims) {
  std::vector<uint16_t> out(values.size());
  ForEachChannelsLast(dims,
                      [&](int64_t first, int64_t last) { out[last] = FloatToHalf(values[first]); });
  return out;
}

std::vector<float> FromHalfChannelsLast(absl::Span<const uint16_t> values,
                                        const std::array<int64_t, 4>& dims) {
  std::vector<float> out(values.size());
  ForEachChannelsLast(dims,
                      [&](int64_t first, int64_t last) { out[first] = HalfToFloat(values[last]); });
  return out;
}

}  // namespace tunejit
