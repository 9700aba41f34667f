// File: common/random.h
// SplitMix64: a tiny, fast generator whose stream is the same on every platform and standard
// library (std::*_distribution's are not), for random weights, inputs and calibration batches.
//
//   SplitMix64 rng(seed);
//   uint64_t bits = rng.Next();  double u = rng.Uniform();  double z = rng.Normal();
#ifndef TUNEJIT_COMMON_RANDOM_H_
#define TUNEJIT_COMMON_RANDOM_H_

#include <cmath>
#include <cstdint>
#include <numbers>

namespace tunejit {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {                                                           // Box-Muller
    const double u1 = 1.0 - Uniform(), u2 = Uniform();  // u1 in (0, 1]: log is finite
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_RANDOM_H_
