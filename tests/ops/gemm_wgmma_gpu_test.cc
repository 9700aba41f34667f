// GPU (Hopper only): dense_wgmma.cuda (wgmma + TMA, kernel_sources/gemm_wgmma.cu) against an exact
// CPU reference, for the fallback and a fixed-seed sample of the space's valid configs, on shapes
// with tails in M, N and K and every epilogue the template takes; then its throughput.
//
// Inputs are multiples of 1/4 in +-[1/4, 2] (RandomQuarters): exact in fp16, and every fp32
// partial sum of their products is exact too, so the fp32 outputs must equal the reference bit for
// bit (any dropped, doubled or misplaced k-slice shows), and the fp16 ones its
// round-to-nearest-even.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::Tensor;

constexpr char kTask[] = "dense_wgmma.cuda";

autotvm::Workload Workload(int64_t m, int64_t n, int64_t k, bool f16_out) {
  return autotvm::Workload{
      kTask, autotvm::Json::array({Tensor({m, k}, "float16"), Tensor({n, k}, "float16"), nullptr,
                                   f16_out ? "float16" : "float32"})};
}

struct Operands {
  int64_t m, n, k;
  std::vector<float> a, b, bias, scale;
  std::vector<float> acc;  // exact sums, as float (exact: see the top)
};

Operands MakeOperands(int64_t m, int64_t n, int64_t k, uint32_t seed) {
  Operands o{m,
             n,
             k,
             testing::RandomQuarters(m * k, seed),
             testing::RandomQuarters(n * k, seed + 1),
             testing::RandomQuarters(n, seed + 2),
             testing::RandomQuarters(n, seed + 3),
             {}};
  o.acc.resize(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t x = 0; x < k; ++x) s += double{o.a[i * k + x]} * o.b[j * k + x];
      o.acc[i * n + j] = static_cast<float>(s);
    }
  }
  return o;
}

// The epilogue of kernel_sources/common.cuh in the same float operations (scale, then bias, relu).
float Expected(const Operands& o, int64_t i, int64_t j, const Epilogue& e) {
  float v = o.acc[i * o.n + j];
  if (e.output == Epilogue::Output::kFloat32) v = v * o.scale[j];
  if (e.bias) v = v + o.bias[j];
  if (e.relu && v < 0) v = 0;
  return v;
}

struct Case {
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  bool f16_out = false;
};

// Runs every case on `o` (one compile of all plans first) and compares each output element.
void CheckCases(testing::GpuHarness& harness, const Operands& o, const std::vector<Case>& cases) {
  const OpTemplate* op = FindOpTemplate(kTask);
  ASSERT_NE(op, nullptr);
  std::vector<OpPlan> plans;
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        op->Specialize(Workload(o.m, o.n, o.k, c.f16_out), c.config, harness.limits(), c.epilogue);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*std::move(plan));
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const std::vector<std::vector<uint8_t>> inputs = {
      testing::Bytes(testing::ToHalves(o.a)), testing::Bytes(testing::ToHalves(o.b)),
      testing::Bytes(o.bias), testing::Bytes(o.scale)};
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& cs = cases[c];
    const size_t elements = static_cast<size_t>(o.m * o.n);
    auto out = harness.Run(plans[c], inputs, {elements * (cs.f16_out ? 2 : 4)});
    ASSERT_TRUE(out.ok()) << cs.config.ToString() << ": " << out.status();
    int wrong = 0;
    for (int64_t i = 0; i < o.m && wrong < 5; ++i) {
      for (int64_t j = 0; j < o.n && wrong < 5; ++j) {
        const float want = Expected(o, i, j, cs.epilogue);
        float got = 0;
        if (cs.f16_out) {
          uint16_t h;
          std::memcpy(&h, (*out)[0].data() + (i * o.n + j) * 2, 2);
          got = testing::HalfToFloat(h);
          if (h == testing::FloatToHalf(want)) continue;
        } else {
          std::memcpy(&got, (*out)[0].data() + (i * o.n + j) * 4, 4);
          if (got == want) continue;
        }
        ADD_FAILURE() << plans[c].kernels[0].spec.name_expression << " " << o.m << "x" << o.n << "x"
                      << o.k << " [" << i << ", " << j << "]: " << got << ", want " << want;
        ++wrong;
      }
    }
  }
}

// `count` distinct configs of the space valid for `o`'s shape, drawn with a fixed seed.
std::vector<autotvm::ConfigEntity> SampledConfigs(const DeviceLimits& limits, const Operands& o,
                                                  int count) {
  return testing::SampledValidConfigs(*FindOpTemplate(kTask), Workload(o.m, o.n, o.k, false),
                                      limits, count);
}

TEST(DenseWgmmaGpu, FallbackMatchesOnShapesWithTails) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(kTask);
  // {one tile}, {tails in M, N and K (520 = 8 atoms + 8)}, {many tiles, long K}.
  for (const auto& [m, n, k] :
       std::vector<std::array<int64_t, 3>>{{128, 64, 64}, {1000, 300, 520}, {256, 1024, 4096}}) {
    const Operands o = MakeOperands(m, n, k, static_cast<uint32_t>(m + n + k));
    autotvm::ConfigEntity fallback = *op->FallbackConfig(Workload(m, n, k, false));
    CheckCases(*harness, o,
               {{fallback, {}, false},
                {fallback, {.bias = true, .relu = true}, false},
                {fallback, {.bias = true, .relu = true}, true},
                {fallback, {.bias = true, .output = Epilogue::Output::kFloat32}, false}});
  }
}

// split_k 2, 4 and 8 (the last slice shorter: 65 K tiles), with tails in M and N, each epilogue:
// the slices' sum is exact here, so it must match bit for bit like the one-kernel GEMM.
TEST(DenseWgmmaGpu, SplitKMatches) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Operands o = MakeOperands(200, 520, 4160, 11);
  auto tile = [](int64_t m, int64_t n, int64_t k, int64_t stages, int64_t consumers,
                 int64_t split) {
    return testing::Config({OtherKnob("tile_m", m), OtherKnob("tile_n", n), OtherKnob("tile_k", k),
                            OtherKnob("stages", stages), OtherKnob("consumer_wg", consumers),
                            OtherKnob("split_k", split)});
  };
  CheckCases(
      *harness, o,
      {{tile(128, 128, 64, 4, 2, 2), {}, false},
       {tile(128, 128, 128, 3, 1, 4), {.bias = true, .relu = true}, true},
       {tile(64, 64, 64, 6, 1, 8), {.relu = true, .output = Epilogue::Output::kFloat32}, false},
       {tile(128, 64, 64, 4, 2, 8), {.bias = true, .relu = true}, true}});
}

TEST(DenseWgmmaGpu, SampledConfigsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Operands o = MakeOperands(600, 520, 1032, 7);
  const std::vector<autotvm::ConfigEntity> configs = SampledConfigs(harness->limits(), o, 12);
  ASSERT_EQ(configs.size(), 12u);
  std::vector<Case> cases;
  for (size_t i = 0; i < configs.size(); ++i) {
    switch (i % 3) {
      case 0:
        cases.push_back({configs[i], {}, false});
        break;
      case 1:
        cases.push_back({configs[i], {.bias = true, .relu = true}, true});
        break;
      default:
        cases.push_back({configs[i], {.relu = true, .output = Epilogue::Output::kFloat32}, false});
    }
  }
  CheckCases(*harness, o, cases);
}

// Not a pass/fail speed bound: measured throughput for docs/benchmarks.md, with a check of a
// sample of the outputs so a fast wrong kernel cannot report a number.
TEST(DenseWgmmaGpu, Throughput) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(kTask);
  const std::vector<autotvm::ConfigEntity> configs =
      testing::SampledValidConfigs(*op, Workload(4096, 4096, 4096, false), harness->limits(), 12);
  // VGG-16's classifier.0 at batch 128, and a square GEMM.
  for (const auto& [m, n, k] :
       std::vector<std::array<int64_t, 3>>{{128, 4096, 25088}, {4096, 4096, 4096}}) {
    const autotvm::Workload w = Workload(m, n, k, false);
    std::vector<autotvm::ConfigEntity> all = {*op->FallbackConfig(w)};
    all.insert(all.end(), configs.begin(), configs.end());
    std::vector<OpPlan> plans;
    for (const autotvm::ConfigEntity& c : all) {
      absl::StatusOr<OpPlan> plan = op->Specialize(w, c, harness->limits(), {});
      if (plan.ok()) plans.push_back(*std::move(plan));
    }
    ASSERT_TRUE(harness->Precompile(plans).ok());
    const std::vector<float> a = testing::RandomQuarters(m * k, 1),
                             b = testing::RandomQuarters(n * k, 2);
    const std::vector<std::vector<uint8_t>> inputs = {
        testing::Bytes(testing::ToHalves(a)), testing::Bytes(testing::ToHalves(b)), {}, {}};
    double best = 1e30;
    for (const OpPlan& plan : plans) {
      absl::StatusOr<double> ms = harness->MedianMs(plan, inputs, {size_t(m * n * 4)}, 3, 20);
      ASSERT_TRUE(ms.ok()) << plan.kernels[0].spec.name_expression << ": " << ms.status();
      auto out = harness->Run(plan, inputs, {size_t(m * n * 4)});
      ASSERT_TRUE(out.ok()) << out.status();
      std::mt19937 rng(3);
      for (int s = 0; s < 64; ++s) {  // 64 random elements against the exact sum
        const int64_t i = rng() % m, j = rng() % n;
        double want = 0;
        for (int64_t x = 0; x < k; ++x) want += double{a[i * k + x]} * b[j * k + x];
        float got;
        std::memcpy(&got, (*out)[0].data() + (i * n + j) * 4, 4);
        ASSERT_EQ(got, static_cast<float>(want)) << plan.kernels[0].spec.name_expression;
      }
      const double tflops = 2.0 * m * n * k / (*ms * 1e-3) / 1e12;
      std::printf("dense_wgmma %lldx%lldx%lld %s: %.4f ms, %.1f TFLOP/s\n",
                  static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                  plan.kernels[0].spec.name_expression.c_str(), *ms, tflops);
      best = std::min(best, *ms);
    }
    std::printf("dense_wgmma %lldx%lldx%lld best: %.4f ms (%.1f TFLOP/s)\n",
                static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                best, 2.0 * m * n * k / (best * 1e-3) / 1e12);
  }
}

}  // namespace
}  // namespace tunejit
