// File: tests/ops/attention_test_util.h
// The CPU reference of attention_mma.cuda (ops/attention.h) for its tests: float64 softmax
// attention over Q, K, V in [B, H, S, D] and an optional mask [B, S_kv], and the relative L2
// error the tests compare with.
//
//   std::vector<double> want = testing::AttentionReference(p, q, k, v, mask, scale);
#ifndef TUNEJIT_TESTS_OPS_ATTENTION_TEST_UTIL_H_
#define TUNEJIT_TESTS_OPS_ATTENTION_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "ops/attention.h"

namespace tunejit::testing {

// O [B, H, S_q, D] = softmax(scale * Q K^T + mask) V in float64; `mask` empty or [B, S_kv]; a
// causal problem (p.mask kCausal) takes query i over keys j <= i only.
inline std::vector<double> AttentionReference(const AttentionParams& p, const std::vector<float>& q,
                                              const std::vector<float>& k,
                                              const std::vector<float>& v,
                                              const std::vector<float>& mask, double scale) {
  const int64_t d = p.head_dim;
  std::vector<double> out(p.batch * p.heads * p.seq_q * d, 0.0);
  std::vector<double> s(p.seq_kv);
  for (int64_t bh = 0; bh < p.batch * p.heads; ++bh) {
    const int64_t b = bh / p.heads;
    const float* kb = k.data() + bh * p.seq_kv * d;
    const float* vb = v.data() + bh * p.seq_kv * d;
    for (int64_t i = 0; i < p.seq_q; ++i) {
      const float* qi = q.data() + (bh * p.seq_q + i) * d;
      double m = -std::numeric_limits<double>::infinity();
      const int64_t keys = p.mask == AttentionMask::kCausal ? std::min(p.seq_kv, i + 1) : p.seq_kv;
      for (int64_t j = 0; j < keys; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double{qi[c]} * kb[j * d + c];
        s[j] = dot * scale + (mask.empty() ? 0.0 : double{mask[b * p.seq_kv + j]});
        m = std::max(m, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < keys; ++j) sum += (s[j] = std::exp(s[j] - m));
      double* o = out.data() + (bh * p.seq_q + i) * d;
      for (int64_t j = 0; j < keys; ++j) {
        for (int64_t c = 0; c < d; ++c) o[c] += s[j] / sum * vb[j * d + c];
      }
    }
  }
  return out;
}

// ||got - want|| / ||want||.
inline double RelativeL2(const std::vector<float>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = (i < got.size() ? got[i] : 0.0) - want[i];
    num += e * e;
    den += want[i] * want[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_OPS_ATTENTION_TEST_UTIL_H_
