// GPU: conv2d_nchw.cuda (direct) against the CPU reference, on random configs of TVM's space
// over VGG-16 shapes (batch scaled down) and odd ones (7x7 spatial, channels not a multiple of 8,
// stride 2, dilation, asymmetric padding, batch 1 and 3), hand-made non-dividing (tail) configs,
// the fallback, and the fused epilogue variants.
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ops/templates.h"
#include "tests/ops/conv_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::ConvCase;
using testing::ConvWorkload;

constexpr char kTask[] = "conv2d_nchw.cuda";

std::vector<autotvm::Workload> Shapes() {
  return {
      // VGG-16 layers at batch 1 / 3.
      ConvWorkload(kTask, {1, 3, 224, 224}, {64, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}),
      ConvWorkload(kTask, {1, 64, 56, 56}, {128, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}),
      ConvWorkload(kTask, {3, 256, 14, 14}, {64, 256, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}),
      // Odd ones.
      ConvWorkload(kTask, {3, 13, 7, 7}, {20, 13, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}),
      ConvWorkload(kTask, {2, 6, 15, 15}, {10, 6, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}),
      ConvWorkload(kTask, {1, 5, 17, 23}, {7, 5, 5, 3}, {2, 1}, {2, 1, 1, 0}, {1, 1}),
      ConvWorkload(kTask, {3, 24, 7, 7}, {40, 24, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}),
  };
}

autotvm::Conv2dParams ParamsOf(const autotvm::Workload& w) {
  return *autotvm::ParseConv2dWorkload(w);
}

autotvm::ConfigEntity DrawConfig(const autotvm::Conv2dParams& p, std::mt19937& rng) {
  using testing::RandomSplit;
  const int64_t unroll[] = {0, 512, 1500};
  return testing::Config({SplitKnob("tile_f", RandomSplit(p.co, 4, rng)),
                          SplitKnob("tile_y", RandomSplit(p.OutH(), 4, rng)),
                          SplitKnob("tile_x", RandomSplit(p.OutW(), 4, rng)),
                          SplitKnob("tile_rc", RandomSplit(p.ci, 2, rng)),
                          SplitKnob("tile_ry", RandomSplit(p.kh, 2, rng)),
                          SplitKnob("tile_rx", RandomSplit(p.kw, 2, rng)),
                          OtherKnob("auto_unroll_max_step", unroll[rng() % 3]),
                          OtherKnob("unroll_explicit", rng() % 2)});
}

// Splits that divide nothing: every tail path of the kernel.
autotvm::ConfigEntity TailConfig() {
  return testing::Config({SplitKnob("tile_f", {-1, 2, 4, 1}), SplitKnob("tile_y", {-1, 1, 4, 2}),
                          SplitKnob("tile_x", {-1, 1, 8, 1}), SplitKnob("tile_rc", {-1, 4}),
                          SplitKnob("tile_ry", {-1, 2}), SplitKnob("tile_rx", {-1, 2}),
                          OtherKnob("auto_unroll_max_step", 512), OtherKnob("unroll_explicit", 1)});
}

TEST(Conv2dNchwGpu, RandomConfigsMatchCpuReference) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  const OpTemplate& op = *Conv2dNchwTemplate();
  std::mt19937 rng(20240601);
  std::vector<ConvCase> cases;
  for (const autotvm::Workload& w : Shapes()) {
    const autotvm::Conv2dParams p = ParamsOf(w);
    for (autotvm::ConfigEntity& c : testing::RandomValidConfigs(
             op, w, (*harness)->limits(), [&](std::mt19937& r) { return DrawConfig(p, r); }, 4,
             rng)) {
      cases.push_back({w, std::move(c), Epilogue{}});
    }
    cases.push_back({w, TailConfig(), Epilogue{}});
    cases.push_back({w, *op.FallbackConfig(w), Epilogue{}});
  }
  // The seed record's config on its shape at batch 1.
  cases.push_back(
      {Shapes()[0],
       testing::Config({SplitKnob("tile_f", {-1, 4, 4, 1}), SplitKnob("tile_y", {-1, 2, 2, 2}),
                        SplitKnob("tile_x", {-1, 1, 32, 1}), SplitKnob("tile_rc", {-1, 3}),
                        SplitKnob("tile_ry", {-1, 3}), SplitKnob("tile_rx", {-1, 3}),
                        OtherKnob("auto_unroll_max_step", 1500), OtherKnob("unroll_explicit", 1)}),
       Epilogue{}});
  EXPECT_GE(cases.size(), 40u);
  EXPECT_EQ(testing::CheckConvCases(**harness, op, cases, ParamsOf),
            static_cast<int>(cases.size()));
}

TEST(Conv2dNchwGpu, EpilogueVariants) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  const OpTemplate& op = *Conv2dNchwTemplate();
  using Out = Epilogue::Output;
  std::vector<ConvCase> cases;
  for (const autotvm::Workload& w : {Shapes()[3], Shapes()[4]}) {
    cases.push_back({w, TailConfig(), Epilogue{true, true, Out::kAccumulator}});
    cases.push_back({w, TailConfig(), Epilogue{true, false, Out::kFloat32}});
    cases.push_back({w, TailConfig(), Epilogue{true, true, Out::kInt8Requantize}, true});
    cases.push_back({w, TailConfig(), Epilogue{false, false, Out::kInt8Requantize}, true});
    cases.push_back({w, TailConfig(), Epilogue{true, true, Out::kFloat32}, true});
  }
  EXPECT_EQ(testing::CheckConvCases(**harness, op, cases, ParamsOf),
            static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace tunejit
