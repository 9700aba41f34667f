// conv2d_nchw_winograd.cuda on a GPU (label gpu; skips without one): random configs of the
// AutoTVM space (factors-policy splits), our fallback and the seed records' knobs, on several
// shapes (m = 2 and 4, tails, batch 1 and 3, channels not a multiple of 8, no padding), with every
// epilogue kind, against ops/cpu_reference. float32: relative error < 1e-4; int8 -> int32: every
// element exact. Outputs are poisoned before each run and every element is compared.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "ops/winograd_plan.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

constexpr char kTask[] = "conv2d_nchw_winograd.cuda";
constexpr int kConfigsPerShape = 5;

autotvm::Conv2dParams Conv(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, bool int8,
                           int pad = 1) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = ci, p.h = h, p.w = w, p.co = co, p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.data_dtype = p.kernel_dtype = int8 ? "int8" : "float32";
  p.out_dtype = int8 ? "int32" : "float32";
  return p;
}

std::vector<autotvm::Conv2dParams> Shapes(bool int8) {
  return {Conv(1, 64, 56, 56, 64, int8),    // VGG-like at batch 1, m = 4
          Conv(3, 20, 7, 7, 12, int8),      // 7x7, batch 3, channels not multiples of 8, m = 2
          Conv(2, 36, 24, 24, 44, int8),    // m = 4
          Conv(1, 128, 28, 28, 96, int8),   // m = 2 (28 % 8 != 0)
          Conv(3, 5, 16, 10, 6, int8, 0)};  // no padding: partial tiles (OH 14, OW 8), m = 4
}

// Epilogues cycled over the cases (int8 adds the requantized output).
Epilogue EpilogueFor(int i, bool int8) {
  switch (i % (int8 ? 4 : 3)) {
    case 0:
      return {};
    case 1:
      return {.bias = true, .relu = true, .output = Epilogue::Output::kFloat32};
    case 2:
      return {.relu = true};
    default:
      return {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  }
}

autotvm::ConfigEntity RandomConfig(const autotvm::Conv2dParams& p, std::mt19937& rng) {
  const WinogradGeometry g = WinogradGeometryOf(p);
  static constexpr int64_t kUnroll[3] = {0, 128, 1500};
  return testing::Config({SplitKnob("tile_b", {-1, 1, 1, 1}),
                          SplitKnob("tile_y", testing::RandomSplit(p.co, 4, rng)),
                          SplitKnob("tile_x", testing::RandomSplit(g.tiles, 4, rng)),
                          SplitKnob("tile_rc", testing::RandomSplit(p.ci, 2, rng)),
                          OtherKnob("auto_unroll_max_step", kUnroll[rng() % 3]),
                          OtherKnob("unroll_explicit", rng() % 2)});
}

struct Case {
  int shape = 0;
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  OpPlan plan;
};

std::vector<int8_t> RandomInt8(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-128, 126);
  std::vector<int8_t> v(n);
  for (int8_t& x : v) {
    const int d = dist(rng);
    x = static_cast<int8_t>(d >= 0 ? d + 1 : d);  // never zero
  }
  return v;
}

class WinogradGpu : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    absl::StatusOr<std::unique_ptr<testing::GpuHarness>> h = testing::GpuHarness::Create();
    ASSERT_TRUE(h.ok()) << h.status();
    harness_ = *std::move(h);
  }

  absl::StatusOr<OpPlan> Specialize(const autotvm::Conv2dParams& p, const autotvm::ConfigEntity& c,
                                    const Epilogue& e) {
    return Conv2dNchwWinogradTemplate()->Specialize(autotvm::MakeConv2dWorkload(kTask, p), c,
                                                    harness_->limits(), e);
  }

  // Runs one case and compares every element with the CPU reference.
  void Check(const autotvm::Conv2dParams& p, const Case& c, uint32_t seed) {
    SCOPED_TRACE(::testing::Message()
                 << "shape " << c.shape << " config " << c.config.ToString() << " epilogue bias "
                 << c.epilogue.bias << " relu " << c.epilogue.relu << " out "
                 << static_cast<int>(c.epilogue.output));
    const bool int8 = p.data_dtype == "int8";
    const int64_t outputs = p.n * p.co * p.OutH() * p.OutW();
    const int64_t inner = p.OutH() * p.OutW();
    const std::vector<float> bias = testing::RandomFloats(p.co, seed + 3);
    const std::vector<float> scale = testing::RandomFloats(p.co, seed + 4);
    std::vector<std::vector<uint8_t>> inputs(4);
    inputs[2] = testing::Bytes(bias);
    inputs[3] = testing::Bytes(scale);
    const Epilogue& e = c.epilogue;
    size_t out_elem = 4;
    if (e.output == Epilogue::Output::kInt8Requantize) out_elem = 1;
    if (int8) {
      const std::vector<int8_t> data = RandomInt8(p.n * p.ci * p.h * p.w, seed + 1);
      const std::vector<int8_t> weight = RandomInt8(p.co * p.ci * 9, seed + 2);
      inputs[0] = testing::Bytes(data);
      inputs[1] = testing::Bytes(weight);
      const std::vector<int32_t> acc = cpuref::Conv2dInt8(p, data, weight);
      absl::StatusOr<std::vector<std::vector<uint8_t>>> out =
          harness_->Run(c.plan, inputs, {static_cast<size_t>(outputs) * out_elem});
      ASSERT_TRUE(out.ok()) << out.status();
      if (e.output == Epilogue::Output::kAccumulator) {
        ExpectEqual(testing::FromBytes<int32_t>((*out)[0]), cpuref::EpilogueInt32(acc, e));
      } else if (e.output == Epilogue::Output::kFloat32) {
        ExpectEqual(testing::FromBytes<float>((*out)[0]),
                    cpuref::EpilogueFloat(acc, p.co, inner, e, bias, scale));
      } else {
        ExpectEqual(testing::FromBytes<int8_t>((*out)[0]),
                    cpuref::EpilogueInt8(acc, p.co, inner, e, bias, scale));
      }
      return;
    }
    const std::vector<float> data = testing::RandomFloats(p.n * p.ci * p.h * p.w, seed + 1);
    const std::vector<float> weight = testing::RandomFloats(p.co * p.ci * 9, seed + 2);
    inputs[0] = testing::Bytes(data);
    inputs[1] = testing::Bytes(weight);
    const std::vector<double> acc = cpuref::Conv2dFloat(p, data, weight);
    absl::StatusOr<std::vector<std::vector<uint8_t>>> out =
        harness_->Run(c.plan, inputs, {static_cast<size_t>(outputs) * out_elem});
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> got = testing::FromBytes<float>((*out)[0]);
    const std::vector<float> want = cpuref::EpilogueFloat(acc, p.co, inner, e, bias, scale);
    int64_t non_finite = 0;
    for (float v : got) non_finite += !std::isfinite(v);
    EXPECT_EQ(non_finite, 0) << "elements not written (poison) or not finite";
    EXPECT_LT(cpuref::RelativeError(got, want), 1e-4);
  }

  template <typename T>
  static void ExpectEqual(const std::vector<T>& got, const std::vector<T>& want) {
    ASSERT_EQ(got.size(), want.size());
    int64_t bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) {
        if (bad < 5) {
          ADD_FAILURE() << "element " << i << ": got " << +got[i] << ", want " << +want[i];
        }
        ++bad;
      }
    }
    EXPECT_EQ(bad, 0) << "of " << got.size();
  }

  std::unique_ptr<testing::GpuHarness> harness_;
};

TEST_P(WinogradGpu, RandomFallbackAndSeedConfigsMatchCpuReference) {
  const bool int8 = GetParam();
  const std::vector<autotvm::Conv2dParams> shapes = Shapes(int8);
  std::mt19937 rng(int8 ? 2024 : 1999);
  std::vector<Case> cases;
  int rejected = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const autotvm::Conv2dParams& p = shapes[s];
    for (int tries = 0, got = 0; got < kConfigsPerShape && tries < 2000; ++tries) {
      Case c{static_cast<int>(s), RandomConfig(p, rng), EpilogueFor(cases.size(), int8), {}};
      absl::StatusOr<OpPlan> plan = Specialize(p, c.config, c.epilogue);
      if (!plan.ok()) {
        ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
        ++rejected;
        continue;
      }
      c.plan = *std::move(plan);
      cases.push_back(std::move(c));
      ++got;
    }
    absl::StatusOr<autotvm::ConfigEntity> fallback =
        Conv2dNchwWinogradTemplate()->FallbackConfig(autotvm::MakeConv2dWorkload(kTask, p));
    ASSERT_TRUE(fallback.ok()) << fallback.status();
    Case c{static_cast<int>(s), *fallback, EpilogueFor(cases.size(), int8), {}};
    absl::StatusOr<OpPlan> plan = Specialize(p, c.config, c.epilogue);
    ASSERT_TRUE(plan.ok()) << plan.status();
    c.plan = *std::move(plan);
    cases.push_back(std::move(c));
  }
  // The seed records' knobs (int8 [128,512,14,14] and fp32 [128,3,224,224]) on small batches.
  std::vector<autotvm::Conv2dParams> all_shapes = shapes;
  const autotvm::Conv2dParams seed_shape =
      int8 ? Conv(4, 64, 14, 14, 64, true) : Conv(2, 3, 224, 224, 64, false);
  all_shapes.push_back(seed_shape);
  const autotvm::ConfigEntity seed_config =
      int8
          ? testing::Config({SplitKnob("tile_b", {-1, 1, 1, 1}), SplitKnob("tile_y", {-1, 1, 8, 8}),
                             SplitKnob("tile_x", {-1, 2, 16, 2}), SplitKnob("tile_rc", {-1, 16}),
                             OtherKnob("auto_unroll_max_step", 128),
                             OtherKnob("unroll_explicit", 0)})
          : testing::Config({SplitKnob("tile_b", {-1, 1, 1, 1}), SplitKnob("tile_y", {-1, 1, 8, 8}),
                             SplitKnob("tile_x", {-1, 16, 32, 1}), SplitKnob("tile_rc", {-1, 1}),
                             OtherKnob("auto_unroll_max_step", 128),
                             OtherKnob("unroll_explicit", 1)});
  Case seed{static_cast<int>(shapes.size()), seed_config, Epilogue{}, {}};
  absl::StatusOr<OpPlan> seed_plan = Specialize(seed_shape, seed_config, seed.epilogue);
  ASSERT_TRUE(seed_plan.ok()) << seed_plan.status();
  seed.plan = *std::move(seed_plan);
  cases.push_back(std::move(seed));

  ASSERT_GE(cases.size(), 20u + shapes.size());
  std::vector<OpPlan> plans;
  for (const Case& c : cases) plans.push_back(c.plan);
  const absl::Status compiled = harness_->Precompile(plans);
  ASSERT_TRUE(compiled.ok()) << compiled;
  for (size_t i = 0; i < cases.size(); ++i) {
    Check(all_shapes[cases[i].shape], cases[i], 100 + static_cast<uint32_t>(i));
  }
  std::printf("winograd %s: %zu cases, %d random configs rejected by Specialize\n",
              int8 ? "int8" : "fp32", cases.size(), rejected);
}

INSTANTIATE_TEST_SUITE_P(Dtype, WinogradGpu, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Int8") : std::string("Float32");
                         });

}  // namespace
}  // namespace tunejit
