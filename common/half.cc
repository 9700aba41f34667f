#include "common/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace tunejit {
namespace {

void FloatsToHalvesScalar(const float* in, size_t n, uint8_t* out) {
  for (size_t i = 0; i < n; ++i) {
    const uint16_t h = FloatToHalf(in[i]);
    std::memcpy(out + i * sizeof(h), &h, sizeof(h));
  }
}

#if defined(__x86_64__)
// vcvtps2ph rounds to nearest even with subnormals and overflow as IEEE says, as FloatToHalf.
__attribute__((target("avx,f16c"))) void FloatsToHalvesF16c(const float* in, size_t n,
                                                            uint8_t* out) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i * 2), h);
  }
  FloatsToHalvesScalar(in + i, n - i, out + i * 2);
}

// "avx" covers the OS saving the YMM registers; F16C from CPUID itself (clang's
// __builtin_cpu_supports does not know "f16c").
bool HasF16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
           (ecx & bit_F16C) != 0;
  }();
  return has;
}
#endif

}  // namespace

void FloatsToHalves(const float* in, size_t n, uint8_t* out) {
#if defined(__x86_64__)
  if (HasF16c()) return FloatsToHalvesF16c(in, n, out);
#endif
  FloatsToHalvesScalar(in, n, out);
}

}  // namespace tunejit
