// GPU (sm_80+): attention_mma.cuda (ops/attention.h) against the float64 CPU reference on
// float16-exact inputs: every knob combination the rules accept on ViT's 197-token tail (no
// mask), BERT's 128 tokens with a float32 mask and a float16 one, a query count other than the
// key count, D 128, and Q/K/V read out of a packed [B, S, 3, H, D] projection with O written
// [B, S, H, D]. Tolerance 2e-3 relative L2 (float16 output, float16 P in the second product).
// AttentionGpuBench times every valid config (the fallback marked, the best with its TFLOP/s) on
// ViT-B/16's and BERT-base's shapes at batch 32, contiguous [B, H, S, D], and ViT's as the
// executor reads it (CUDA events, median of 50, no L2 flush): run it alone with
//   ./build/tests/ops/ops_attention_gpu_test --gtest_filter='AttentionGpuBench.*'
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "autotvm/target.h"
#include "gtest/gtest.h"
#include "ops/attention.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/attention_test_util.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

constexpr double kTolerance = 2e-3;

const OpTemplate& Op() { return *FindOpTemplate(kAttentionMma); }

// Values on float16's grid in [-2, 2) (exact as float16), so the reference sees the kernel's
// inputs.
std::vector<float> RandomHalves(size_t n, uint32_t seed, float range = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-range, range);
  std::vector<float> v(n);
  for (float& x : v) x = HalfToFloat(FloatToHalf(u(rng)));
  return v;
}

// BERT's extended mask: 0 on kept keys, -10000 on padding (the last quarter of each sequence
// but one of its batch rows).
std::vector<float> PaddingMask(const AttentionParams& p) {
  std::vector<float> mask(p.batch * p.seq_kv, 0.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t kept = b == 0 ? p.seq_kv : p.seq_kv - p.seq_kv / 4 - b % 5;
    for (int64_t j = kept; j < p.seq_kv; ++j) mask[b * p.seq_kv + j] = -10000.0f;
  }
  return mask;
}

std::vector<uint8_t> HalfBytes(const std::vector<float>& v) {
  return testing::Bytes(testing::ToHalves(v));
}

std::vector<float> FromHalfBytes(const std::vector<uint8_t>& bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = HalfToFloat(static_cast<uint16_t>(bytes[2 * i] | (bytes[2 * i + 1] << 8)));
  }
  return out;
}

struct Problem {
  AttentionParams p;
  std::vector<float> q, k, v, mask;
  std::vector<double> want;
};

Problem MakeProblem(const AttentionParams& p, uint32_t seed) {
  Problem pr{p,
             RandomHalves(p.batch * p.heads * p.seq_q * p.head_dim, seed),
             RandomHalves(p.batch * p.heads * p.seq_kv * p.head_dim, seed + 1),
             RandomHalves(p.batch * p.heads * p.seq_kv * p.head_dim, seed + 2),
             ReadsMaskTensor(p.mask) ? PaddingMask(p) : std::vector<float>{},
             {}};
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.head_dim));
  pr.want = testing::AttentionReference(p, pr.q, pr.k, pr.v, pr.mask, scale);
  return pr;
}

std::vector<uint8_t> MaskBytes(const Problem& pr) {
  if (pr.p.mask == AttentionMask::kF32) return testing::Bytes(pr.mask);
  if (pr.p.mask == AttentionMask::kF16) return HalfBytes(pr.mask);
  return {};
}

// Every config of the space the rules accept on `pr`, against the reference.
void CheckEveryConfig(testing::GpuHarness& harness, const Problem& pr) {
  const autotvm::Workload w = MakeAttentionWorkload(pr.p);
  const autotvm::ConfigSpace space = *BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
  std::vector<OpPlan> plans;
  std::vector<std::string> names;
  for (int64_t i = 0; i < space.size(); ++i) {
    const autotvm::ConfigEntity c = *space.Get(i);
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, c, harness.limits(), {});
    if (!plan.ok()) continue;
    plans.push_back(*std::move(plan));
    names.push_back(c.ToString());
  }
  ASSERT_FALSE(plans.empty());
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const std::vector<std::vector<uint8_t>> inputs = {HalfBytes(pr.q), HalfBytes(pr.k),
                                                    HalfBytes(pr.v), MaskBytes(pr)};
  for (size_t c = 0; c < plans.size(); ++c) {
    auto out = harness.Run(plans[c], inputs, {pr.want.size() * 2});
    ASSERT_TRUE(out.ok()) << names[c] << ": " << out.status();
    const double err = testing::RelativeL2(FromHalfBytes((*out)[0]), pr.want);
    EXPECT_LT(err, kTolerance) << w.Key() << " " << names[c];
  }
}

TEST(AttentionGpu, EveryConfigOnViTsTail) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  CheckEveryConfig(*harness, MakeProblem({2, 3, 197, 197, 64, AttentionMask::kNone}, 1));
}

TEST(AttentionGpu, EveryConfigWithBertsMask) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  CheckEveryConfig(*harness, MakeProblem({4, 2, 128, 128, 64, AttentionMask::kF32}, 11));
  CheckEveryConfig(*harness, MakeProblem({3, 2, 100, 100, 64, AttentionMask::kF16}, 21));
}

TEST(AttentionGpu, OtherQueryCountsAndHeadDim128) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  CheckEveryConfig(*harness, MakeProblem({2, 2, 37, 300, 64, AttentionMask::kNone}, 31));
  CheckEveryConfig(*harness, MakeProblem({2, 2, 150, 77, 128, AttentionMask::kF32}, 41));
}

// Causal (GPT-2's, Llama's attention): every config on a tail of 197 tokens (key tiles skipped
// past each CTA's rows, the diagonal inside a tile), D 128, more queries than keys (rows past
// S_kv see every key) and fewer (keys past the last query never read).
TEST(AttentionGpu, EveryConfigCausal) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  CheckEveryConfig(*harness, MakeProblem({2, 3, 197, 197, 64, AttentionMask::kCausal}, 51));
  CheckEveryConfig(*harness, MakeProblem({2, 2, 128, 128, 128, AttentionMask::kCausal}, 61));
  CheckEveryConfig(*harness, MakeProblem({2, 2, 150, 77, 64, AttentionMask::kCausal}, 71));
  CheckEveryConfig(*harness, MakeProblem({2, 2, 37, 300, 64, AttentionMask::kCausal}, 81));
}

// Q, K, V interleaved as a packed [B, S, 3, H, D] projection output (one buffer, K and V at
// offsets), O written [B, S, H, D].
TEST(AttentionGpu, StridedPackedProjection) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const AttentionParams p{2, 3, 197, 197, 64, AttentionMask::kNone};
  const Problem pr = MakeProblem(p, 51);
  const int64_t e = p.heads * p.head_dim;
  std::vector<float> packed(p.batch * p.seq_q * 3 * e);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t s = 0; s < p.seq_q; ++s) {
        for (int64_t d = 0; d < p.head_dim; ++d) {
          const int64_t src = ((b * p.heads + h) * p.seq_q + s) * p.head_dim + d;
          const int64_t dst = (b * p.seq_q + s) * 3 * e + h * p.head_dim + d;
          packed[dst] = pr.q[src];
          packed[dst + e] = pr.k[src];
          packed[dst + 2 * e] = pr.v[src];
        }
      }
    }
  }
  AttentionLayout layout = ContiguousAttentionLayout(p);
  layout.q = layout.k = layout.v = SequenceMajorStrides(p, p.seq_q, 3 * e);
  layout.o = SequenceMajorStrides(p, p.seq_q, e);
  const autotvm::Workload w = MakeAttentionWorkload(p);
  // One packed buffer bound three times, K and V at their offsets.
  layout.k.offset = e;
  layout.v.offset = 2 * e;
  absl::StatusOr<OpPlan> plan =
      SpecializeAttention(w, *Op().FallbackConfig(w), harness->limits(), layout);
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::vector<uint8_t> bytes = HalfBytes(packed);
  auto out = harness->Run(*plan, {bytes, bytes, bytes, {}}, {pr.want.size() * 2});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> got = FromHalfBytes((*out)[0]);
  std::vector<float> bhsd(got.size());
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t s = 0; s < p.seq_q; ++s) {
      for (int64_t h = 0; h < p.heads; ++h) {
        for (int64_t d = 0; d < p.head_dim; ++d) {
          bhsd[((b * p.heads + h) * p.seq_q + s) * p.head_dim + d] =
              got[((b * p.seq_q + s) * p.heads + h) * p.head_dim + d];
        }
      }
    }
  }
  EXPECT_LT(testing::RelativeL2(bhsd, pr.want), kTolerance);
}

// Median kernel times on ViT-B/16 (32, 12, 197, 64) and BERT-base (32, 12, 128, 64, float32
// mask): the fallback and every valid config, the best printed with its TFLOP/s, for comparison
// with torch.nn.functional.scaled_dot_product_attention on the same card.
TEST(AttentionGpuBench, ViTAndBertShapes) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  for (const AttentionParams& p : {AttentionParams{32, 12, 197, 197, 64, AttentionMask::kNone},
                                   AttentionParams{32, 12, 128, 128, 64, AttentionMask::kF32}}) {
    const autotvm::Workload w = MakeAttentionWorkload(p);
    const std::vector<float> q = RandomHalves(p.batch * p.heads * p.seq_q * p.head_dim, 1);
    const std::vector<std::vector<uint8_t>> inputs = {
        HalfBytes(q), HalfBytes(q), HalfBytes(q),
        p.mask == AttentionMask::kNone ? std::vector<uint8_t>{} : testing::Bytes(PaddingMask(p))};
    const size_t out_bytes = q.size() * 2;
    const autotvm::ConfigSpace space = *BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
    const std::string fallback = Op().FallbackConfig(w)->ToString();
    double best_ms = 1e30;
    std::string best;
    for (int64_t i = 0; i < space.size(); ++i) {
      const autotvm::ConfigEntity c = *space.Get(i);
      absl::StatusOr<OpPlan> plan = Op().Specialize(w, c, harness->limits(), {});
      if (!plan.ok()) continue;
      absl::StatusOr<double> ms = harness->MedianMs(*plan, inputs, {out_bytes}, 5, 50);
      ASSERT_TRUE(ms.ok()) << c.ToString() << ": " << ms.status();
      std::printf("%s %s: %.4f ms%s\n", w.Key().c_str(), c.ToString().c_str(), *ms,
                  c.ToString() == fallback ? " (fallback)" : "");
      if (*ms < best_ms) best_ms = *ms, best = c.ToString();
    }
    std::printf("BEST %s %s: %.4f ms, %.1f TFLOP/s\n", w.Key().c_str(), best.c_str(), best_ms,
                p.Flops() / (best_ms * 1e-3) / 1e12);
  }
}

// ViT-B/16 at batch 32 as the executor runs it: Q, K and V read from the packed in-projection
// output [S, B, 3 * E] (torchvision's sequence-first layout), O written [S, B, H, D] for the
// out-projection; every valid config.
TEST(AttentionGpuBench, VitAsTheExecutorReadsIt) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const AttentionParams p{32, 12, 197, 197, 64, AttentionMask::kNone};
  const int64_t e = p.heads * p.head_dim;
  AttentionLayout layout = ContiguousAttentionLayout(p);
  layout.q = {3 * e, p.head_dim, p.batch * 3 * e, 0};
  layout.k = {3 * e, p.head_dim, p.batch * 3 * e, e};
  layout.v = {3 * e, p.head_dim, p.batch * 3 * e, 2 * e};
  layout.o = {e, p.head_dim, p.batch * e, 0};
  const std::vector<uint8_t> packed = HalfBytes(RandomHalves(p.seq_q * p.batch * 3 * e, 2));
  const size_t out_bytes = p.seq_q * p.batch * e * 2;
  const autotvm::Workload w = MakeAttentionWorkload(p);
  const autotvm::ConfigSpace space = *BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
  const std::string fallback = Op().FallbackConfig(w)->ToString();
  for (int64_t i = 0; i < space.size(); ++i) {
    const autotvm::ConfigEntity c = *space.Get(i);
    absl::StatusOr<OpPlan> plan = SpecializeAttention(w, c, harness->limits(), layout);
    if (!plan.ok()) continue;
    absl::StatusOr<double> ms =
        harness->MedianMs(*plan, {packed, packed, packed, {}}, {out_bytes}, 5, 50);
    ASSERT_TRUE(ms.ok()) << c.ToString() << ": " << ms.status();
    std::printf("vit strided %s: %.4f ms, %.1f TFLOP/s%s\n", c.ToString().c_str(), *ms,
                p.Flops() / (*ms * 1e-3) / 1e12, c.ToString() == fallback ? " (fallback)" : "");
  }
}

}  // namespace
}  // namespace tunejit
