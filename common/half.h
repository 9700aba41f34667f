// File: common/half.h
// IEEE binary16 on the host, bit-exact with the GPU's cvt.rn.f16.f32 / cvt.f32.f16: fp16 tensors
// for the tensor-core templates (their inputs, weights and the tuner's random data).
//
//   uint16_t h = FloatToHalf(0.1f);  float back = HalfToFloat(h);  // 0.0999755859375f
#ifndef TUNEJIT_COMMON_HALF_H_
#define TUNEJIT_COMMON_HALF_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace tunejit {

// Round to nearest even; overflow to infinity; NaN stays NaN (quiet).
inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | 0x7c00u | (x > 0x7f800000u ? 0x200u : 0u);  // inf, NaN
  if (x < 0x38800000u) {  // below 2^-14: a subnormal half, in units of 2^-24 (exact scaling)
    float v;
    std::memcpy(&v, &x, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(v * 16777216.0f));
  }
  // Rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even without a
  // branch (a data-dependent one is mispredicted half the time, tripling the cost of converting
  // a weight tensor): adding 0xfff plus the kept lowest bit carries into it exactly when the
  // dropped bits are above half, or half with that bit odd. A carry may round up to inf.
  const uint32_t h = (x - ((127u - 15u) << 23) + 0xfffu + ((x >> 13) & 1u)) >> 13;
  return sign | static_cast<uint16_t>(std::min<uint32_t>(h, 0x7c00u));
}

inline float HalfToFloat(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const float mantissa = static_cast<float>(h & 0x3ffu);
  float v = exponent == 0    ? std::ldexp(mantissa, -24)
            : exponent == 31 ? (mantissa != 0 ? NAN : INFINITY)
                             : std::ldexp(mantissa + 1024.0f, exponent - 25);
  return (h & 0x8000u) ? -v : v;
}

// out[i] = FloatToHalf(in[i]) for i < n, eight at a time with the CPU's F16C conversion where it
// has one (the same rounding; a NaN stays a NaN but may keep its payload's top bits), for the
// hundreds of megabytes of a model's weights. `out` needs no alignment.
void FloatsToHalves(const float* in, size_t n, uint8_t* out);

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_HALF_H_
