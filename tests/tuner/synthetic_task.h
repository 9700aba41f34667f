// File: tests/tuner/synthetic_task.h
// A conv-like config space and a known cost function over it, for the cost model and
// model-guided search tests: no GPU, and the optimum is computable by enumeration.
//
//   autotvm::ConfigSpace space = SyntheticSpace();           // 141,120 configs
//   double seconds = SyntheticCost(space, index);            // 1e9 when threads > 1024
#ifndef TUNEJIT_TESTS_TUNER_SYNTHETIC_TASK_H_
#define TUNEJIT_TESTS_TUNER_SYNTHETIC_TASK_H_

#include <cmath>
#include <cstdint>
#include <vector>

#include "autotvm/config_space.h"

namespace tunejit::testing {

// tile_f: split 64 in 4 (84), tile_x: split 32 in 4 (56), tile_rc: split 16 in 2 (5),
// auto_unroll_max_step {0, 512, 1500}, unroll_explicit {0, 1}.
inline autotvm::ConfigSpace SyntheticSpace() {
  autotvm::ConfigSpace space;
  (void)space.AddSplit("tile_f", 64, 4);
  (void)space.AddSplit("tile_x", 32, 4);
  (void)space.AddSplit("tile_rc", 16, 2);
  (void)space.AddOther("auto_unroll_max_step", {0, 512, 1500});
  (void)space.AddOther("unroll_explicit", {0, 1});
  return space;
}

// Deterministic "measurement noise" in [-1, 1] per index (a 64-bit mix, no shared RNG state).
inline double SyntheticNoise(int64_t index) {
  uint64_t x = static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<double>(x % 2001) / 1000.0 - 1.0;
}

// Seconds. Fastest at 128 threads per block, 4 inner items, 2 virtual threads, a reduction chunk
// of 4 and unroll step 512; > 1024 threads fails (1e9) as a CUDA launch would.
inline double SyntheticCost(const autotvm::ConfigSpace& space, int64_t index) {
  std::vector<int64_t> d = space.DigitsOf(index);
  const auto& k = space.knobs();
  const std::vector<int64_t>& f = k[0].candidates[d[0]];
  const std::vector<int64_t>& x = k[1].candidates[d[1]];
  const std::vector<int64_t>& rc = k[2].candidates[d[2]];
  int64_t unroll = k[3].candidates[d[3]][0];
  int64_t explicit_unroll = k[4].candidates[d[4]][0];
  double threads = static_cast<double>(f[2] * x[2]);
  if (threads > 1024) return 1e9;
  double t = std::log2(threads), v = std::log2(static_cast<double>(f[1] * x[1]));
  double i = std::log2(static_cast<double>(f[3] * x[3])), r = std::log2(static_cast<double>(rc[1]));
  double slow = 1 + 0.15 * (t - 7) * (t - 7) + 0.1 * (i - 2) * (i - 2) + 0.05 * std::abs(v - 1) +
                0.04 * (r - 2) * (r - 2) + (unroll == 512 ? 0.0 : 0.08) +
                (explicit_unroll == 1 ? 0.0 : 0.03);
  return 1e-4 * slow * (1 + 0.02 * SyntheticNoise(index));
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_TUNER_SYNTHETIC_TASK_H_
