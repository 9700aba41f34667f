// GPU: depthwise_conv2d_nchw.cuda against the CPU reference (a grouped conv with groups == C), on
// random configs of TVM's space over MobileNet-like and odd shapes (channel multiplier 3, stride 2,
// dilation, batch 1 and 3), tail configs, the fallback and the epilogue variants.
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

constexpr char kTask[] = "depthwise_conv2d_nchw.cuda";

std::vector<autotvm::Workload> Shapes() {
  return {
      ConvWorkload(kTask, {1, 32, 112, 112}, {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}),
      ConvWorkload(kTask, {3, 17, 7, 7}, {17, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}),
      ConvWorkload(kTask, {2, 8, 15, 15}, {8, 3, 5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}),
      ConvWorkload(kTask, {1, 64, 28, 28}, {64, 1, 3, 3}, {2, 2}, {2, 2, 1, 1}, {2, 2}),
      ConvWorkload(kTask, {1, 12, 9, 20}, {12, 2, 3, 5}, {1, 2}, {1, 2, 1, 2}, {1, 1}),
  };
}

// The reference sees a grouped conv: weight [C*mult, 1, KH, KW], groups = C.
autotvm::Conv2dParams ParamsOf(const autotvm::Workload& w) {
  autotvm::Conv2dParams p = *autotvm::ParseConv2dWorkload(w);
  const int64_t multiplier = w.args[1][1][1].get<int64_t>();
  p.co = p.ci * multiplier;
  p.groups = p.ci;
  return p;
}

autotvm::ConfigEntity DrawConfig(const autotvm::Conv2dParams& p, std::mt19937& rng) {
  using testing::RandomSplit;
  const int64_t unroll[] = {0, 256, 1500};
  return testing::Config({SplitKnob("tile_f", RandomSplit(p.co, 4, rng)),
                          SplitKnob("tile_y", RandomSplit(p.OutH(), 4, rng)),
                          SplitKnob("tile_x", RandomSplit(p.OutW(), 4, rng)),
                          OtherKnob("auto_unroll_max_step", unroll[rng() % 3]),
                          OtherKnob("unroll_explicit", rng() % 2)});
}

autotvm::ConfigEntity TailConfig() {
  return testing::Config({SplitKnob("tile_f", {-1, 2, 2, 1}), SplitKnob("tile_y", {-1, 1, 4, 2}),
                          SplitKnob("tile_x", {-1, 2, 8, 1}),
                          OtherKnob("auto_unroll_max_step", 256), OtherKnob("unroll_explicit", 0)});
}

TEST(DepthwiseGpu, RandomConfigsMatchCpuReference) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  const OpTemplate& op = *DepthwiseConv2dNchwTemplate();
  std::mt19937 rng(777);
  std::vector<ConvCase> cases;
  for (const autotvm::Workload& w : Shapes()) {
    const autotvm::Conv2dParams p = ParamsOf(w);
    for (autotvm::ConfigEntity& c : testing::RandomValidConfigs(
             op, w, (*harness)->limits(), [&](std::mt19937& r) { return DrawConfig(p, r); }, 5,
             rng)) {
      cases.push_back({w, std::move(c), Epilogue{}});
    }
    cases.push_back({w, TailConfig(), Epilogue{}});
    cases.push_back({w, *op.FallbackConfig(w), Epilogue{}});
  }
  EXPECT_GE(cases.size(), 30u);
  EXPECT_EQ(testing::CheckConvCases(**harness, op, cases, ParamsOf),
            static_cast<int>(cases.size()));
}

TEST(DepthwiseGpu, EpilogueVariants) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  using Out = Epilogue::Output;
  std::vector<ConvCase> cases;
  for (const autotvm::Workload& w : {Shapes()[1], Shapes()[2]}) {
    cases.push_back({w, TailConfig(), Epilogue{true, true, Out::kAccumulator}});
    cases.push_back({w, TailConfig(), Epilogue{true, true, Out::kInt8Requantize}, true});
    cases.push_back({w, TailConfig(), Epilogue{false, true, Out::kFloat32}, true});
  }
  EXPECT_EQ(testing::CheckConvCases(**harness, *DepthwiseConv2dNchwTemplate(), cases, ParamsOf),
            static_cast<int>(cases.size()));
}

}  // namespace
}  // namespace tunejit
