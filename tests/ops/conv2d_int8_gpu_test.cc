// conv2d_NCHWc_int8.cuda on a GPU (label gpu; skips without one): random configs of the AutoTVM
// space (all 12 knobs), our fallback and the seed record's knobs, on several shapes (VGG-like,
// 7x7, channels multiples of 4 but not 8, batch 1 and 3, stride 2, 5x5 and 1x1 kernels), with every
// epilogue kind, against ops/cpu_reference: every element must be exact. Outputs are poisoned
// before each run.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

constexpr char kTask[] = "conv2d_NCHWc_int8.cuda";
constexpr int kConfigsPerShape = 4;

autotvm::Conv2dParams Conv(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, int kernel = 3,
                           int stride = 1, int pad = 1) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = ci, p.h = h, p.w = w, p.co = co, p.kh = p.kw = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.data_dtype = p.kernel_dtype = "int8";
  p.out_dtype = "int32";
  return p;
}

std::vector<autotvm::Conv2dParams> Shapes() {
  return {Conv(1, 64, 56, 56, 64),           // VGG-like at batch 1
          Conv(3, 12, 7, 7, 20),             // 7x7, batch 3, channels 4 (mod 8)
          Conv(2, 36, 28, 28, 44, 3, 2, 1),  // stride 2
          Conv(1, 128, 14, 14, 128),
          Conv(3, 4, 9, 11, 8, 5, 2, 2),     // 5x5, stride 2, non-square image
          Conv(1, 16, 15, 15, 12, 1, 1, 0),  // 1x1
          Conv(4, 64, 14, 14, 64)};          // the seed record's knobs run here
}

Epilogue EpilogueFor(int i) {
  switch (i % 4) {
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
  static constexpr int64_t kUnroll[3] = {0, 512, 1500};
  std::vector<int64_t> perm{0, 1, 2};
  for (int k = rng() % 6; k > 0; --k) std::next_permutation(perm.begin(), perm.end());
  return testing::Config(
      {SplitKnob("tile_n", testing::RandomSplit(p.n, 4, rng)),
       SplitKnob("tile_f", testing::RandomSplit(p.co / 4, 4, rng)),
       SplitKnob("tile_y", testing::RandomSplit(p.OutH(), 4, rng)),
       SplitKnob("tile_x", testing::RandomSplit(p.OutW(), 4, rng)), OtherKnob("fuse_yx", rng() % 2),
       SplitKnob("tile_rc", testing::RandomSplit(p.ci / 4, 2, rng)),
       SplitKnob("tile_ry", testing::RandomSplit(p.kh, 2, rng)),
       SplitKnob("tile_rx", testing::RandomSplit(p.kw, 2, rng)),
       autotvm::Knob{"reorder_inner", "re", autotvm::Json(perm)},
       OtherKnob("AA_double_buffer", rng() % 2), OtherKnob("WW_double_buffer", rng() % 2),
       OtherKnob("auto_unroll_max_step", kUnroll[rng() % 3])});
}

// The seed record [128,512,14,14] index 13276589889.
autotvm::ConfigEntity SeedConfig() {
  return testing::Config({SplitKnob("tile_n", {-1, 2, 2, 1}), SplitKnob("tile_f", {-1, 1, 4, 2}),
                          SplitKnob("tile_y", {-1, 2, 1, 1}), SplitKnob("tile_x", {-1, 1, 14, 1}),
                          OtherKnob("fuse_yx", 1), SplitKnob("tile_rc", {-1, 1}),
                          SplitKnob("tile_ry", {-1, 3}), SplitKnob("tile_rx", {-1, 1}),
                          autotvm::Knob{"reorder_inner", "re", autotvm::Json::array({1, 0, 2})},
                          OtherKnob("AA_double_buffer", 1), OtherKnob("WW_double_buffer", 0),
                          OtherKnob("auto_unroll_max_step", 1500)});
}

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

template <typename T>
void ExpectEqual(const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      if (bad < 5) ADD_FAILURE() << "element " << i << ": got " << +got[i] << ", want " << +want[i];
      ++bad;
    }
  }
  EXPECT_EQ(bad, 0) << "of " << got.size();
}

struct Case {
  int shape = 0;
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  OpPlan plan;
};

TEST(Conv2dInt8Gpu, RandomFallbackAndSeedConfigsAreExact) {
  TUNEJIT_REQUIRE_GPU();
  absl::StatusOr<std::unique_ptr<testing::GpuHarness>> h = testing::GpuHarness::Create();
  ASSERT_TRUE(h.ok()) << h.status();
  testing::GpuHarness& harness = **h;
  auto specialize = [&](const autotvm::Conv2dParams& p, const autotvm::ConfigEntity& c,
                        const Epilogue& e) {
    return Conv2dNchwcInt8Template()->Specialize(autotvm::MakeConv2dWorkload(kTask, p), c,
                                                 harness.limits(), e);
  };
  const std::vector<autotvm::Conv2dParams> shapes = Shapes();
  std::mt19937 rng(4242);
  std::vector<Case> cases;
  int rejected = 0;
  for (size_t s = 0; s < shapes.size(); ++s) {
    const autotvm::Conv2dParams& p = shapes[s];
    std::vector<autotvm::ConfigEntity> configs;
    absl::StatusOr<autotvm::ConfigEntity> fallback =
        Conv2dNchwcInt8Template()->FallbackConfig(autotvm::MakeConv2dWorkload(kTask, p));
    ASSERT_TRUE(fallback.ok()) << fallback.status();
    configs.push_back(*fallback);
    if (s + 1 == shapes.size()) configs.push_back(SeedConfig());
    for (const autotvm::ConfigEntity& config : configs) {
      Case c{static_cast<int>(s), config, EpilogueFor(cases.size()), {}};
      absl::StatusOr<OpPlan> plan = specialize(p, c.config, c.epilogue);
      ASSERT_TRUE(plan.ok()) << plan.status() << " " << config.ToString();
      c.plan = *std::move(plan);
      cases.push_back(std::move(c));
    }
    for (int tries = 0, got = 0; got < kConfigsPerShape && tries < 5000; ++tries) {
      Case c{static_cast<int>(s), RandomConfig(p, rng), EpilogueFor(cases.size()), {}};
      absl::StatusOr<OpPlan> plan = specialize(p, c.config, c.epilogue);
      if (!plan.ok()) {
        ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << plan.status();
        ++rejected;
        continue;
      }
      c.plan = *std::move(plan);
      cases.push_back(std::move(c));
      ++got;
    }
  }
  ASSERT_GE(cases.size(), 20u + shapes.size());
  std::vector<OpPlan> plans;
  for (const Case& c : cases) plans.push_back(c.plan);
  const absl::Status compiled = harness.Precompile(plans);
  ASSERT_TRUE(compiled.ok()) << compiled;

  // One set of inputs and one reference per shape; the epilogue differs per case.
  for (size_t s = 0; s < shapes.size(); ++s) {
    const autotvm::Conv2dParams& p = shapes[s];
    const std::vector<int8_t> data = RandomInt8(p.n * p.ci * p.h * p.w, 10 + s);
    const std::vector<int8_t> weight = RandomInt8(p.co * p.ci * p.kh * p.kw, 20 + s);
    const std::vector<float> bias = testing::RandomFloats(p.co, 30 + s);
    const std::vector<float> scale = testing::RandomFloats(p.co, 40 + s);
    const std::vector<int32_t> acc = cpuref::Conv2dInt8(p, data, weight);
    const int64_t inner = p.OutH() * p.OutW();
    const size_t outputs = static_cast<size_t>(p.n * p.co * inner);
    const std::vector<std::vector<uint8_t>> inputs = {testing::Bytes(data), testing::Bytes(weight),
                                                      testing::Bytes(bias), testing::Bytes(scale)};
    for (const Case& c : cases) {
      if (c.shape != static_cast<int>(s)) continue;
      SCOPED_TRACE(::testing::Message() << "shape " << s << " config " << c.config.ToString()
                                        << " out " << static_cast<int>(c.epilogue.output));
      const Epilogue& e = c.epilogue;
      const size_t elem = e.output == Epilogue::Output::kInt8Requantize ? 1 : 4;
      absl::StatusOr<std::vector<std::vector<uint8_t>>> out =
          harness.Run(c.plan, inputs, {outputs * elem});
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
    }
  }
  std::printf("NCHWc int8: %zu cases, %d random configs rejected by Specialize\n", cases.size(),
              rejected);
}

}  // namespace
}  // namespace tunejit
