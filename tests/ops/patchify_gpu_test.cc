// GPU (sm_90): conv2d_nchw_patchify_wgmma.cuda (ops/patchify.h: the patch gather, the weight's
// float16 copy and dense_wgmma.cuda's GEMM) against an exact CPU convolution: a small ViT (16x16
// patches, 64 channels), 4x4 patches past the stem's 128 channels, patches whose 27 values are
// padded to 32 on a size the stride does not divide, and 14x14 ones (588 values, 592); every
// output kind (float32, float16, scaled float32, requantized int8), the fallback, split-K and a
// fixed-seed sample of valid configs. Inputs are RandomQuarters, exact in float16, so float32
// outputs equal the CPU sums bit for bit and float16 / int8 ones their correctly rounded values.
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

struct Shape {
  int64_t n, c, h, w, co, k;  // k x k patches at stride k
  int64_t oh() const { return h / k; }
  int64_t ow() const { return w / k; }
};

autotvm::Conv2dParams Params(const Shape& s) {
  autotvm::Conv2dParams p;
  p.n = s.n, p.ci = s.c, p.h = s.h, p.w = s.w, p.co = s.co, p.kh = p.kw = s.k;
  p.stride_h = p.stride_w = static_cast<int>(s.k);
  return p;
}

autotvm::Workload Workload(const Shape& s, const std::string& out) {
  autotvm::Conv2dParams p = Params(s);
  p.out_dtype = out;
  return autotvm::MakeConv2dWorkload(autotvm::kConv2dNchwPatchifyWgmma, p);
}

struct Operands {
  Shape s;
  std::vector<float> x, w, bias, scale;
  std::vector<float> acc;  // NHWC, exact
};

Operands MakeOperands(const Shape& s, uint32_t seed) {
  Operands o{s,
             testing::RandomQuarters(s.n * s.c * s.h * s.w, seed),
             testing::RandomQuarters(s.co * s.c * s.k * s.k, seed + 1),
             testing::RandomQuarters(s.co, seed + 2),
             testing::RandomQuarters(s.co, seed + 3),
             {}};
  const std::vector<double> nchw = cpuref::Conv2dFloat(Params(s), o.x, o.w);
  const int64_t pixels = s.oh() * s.ow();
  o.acc.resize(nchw.size());
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t co = 0; co < s.co; ++co) {
      for (int64_t px = 0; px < pixels; ++px) {
        o.acc[(b * pixels + px) * s.co + co] =
            static_cast<float>(nchw[(b * s.co + co) * pixels + px]);
      }
    }
  }
  return o;
}

struct Case {
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  std::string out;  // the workload's out_dtype
};

autotvm::ConfigEntity WithSplitK(autotvm::ConfigEntity config, int64_t split_k) {
  for (autotvm::Knob& knob : config.knobs) {
    if (knob.name == "split_k") knob = OtherKnob("split_k", split_k);
  }
  return config;
}

void CheckCases(testing::GpuHarness& harness, const Operands& o, const std::vector<Case>& cases) {
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNchwPatchifyWgmma);
  std::vector<OpPlan> plans;
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        op->Specialize(Workload(o.s, c.out), c.config, harness.limits(), c.epilogue);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*std::move(plan));
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const std::vector<std::vector<uint8_t>> inputs = {
      testing::Bytes(o.x), testing::Bytes(o.w), testing::Bytes(o.bias), testing::Bytes(o.scale)};
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& cs = cases[c];
    const bool to_int8 = cs.epilogue.output == Epilogue::Output::kInt8Requantize;
    const bool f16 = !to_int8 && cs.out == "float16";
    auto out = harness.Run(plans[c], inputs, {o.acc.size() * (to_int8 ? 1 : f16 ? 2 : 4)});
    ASSERT_TRUE(out.ok()) << cs.config.ToString() << ": " << out.status();
    int wrong = 0;
    for (size_t i = 0; i < o.acc.size() && wrong < 5; ++i) {
      const int64_t co = static_cast<int64_t>(i) % o.s.co;
      const float want = testing::EpilogueValue(o.acc[i], o.bias[co], o.scale[co], cs.epilogue);
      const testing::StoredAs as = to_int8 ? testing::StoredAs::kInt8
                                   : f16   ? testing::StoredAs::kFloat16
                                           : testing::StoredAs::kFloat32;
      float got = 0;
      if (testing::StoredExactly((*out)[0], i, as, want, &got)) continue;
      const int64_t pixel = static_cast<int64_t>(i) / o.s.co;
      ADD_FAILURE() << cs.config.ToString() << " image " << pixel / (o.s.oh() * o.s.ow()) << " y "
                    << pixel / o.s.ow() % o.s.oh() << " x " << pixel % o.s.ow() << " co " << co
                    << ": " << got << ", want " << want;
      ++wrong;
    }
  }
}

TEST(PatchifyGpu, FallbackMatchesEveryOutputKind) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNchwPatchifyWgmma);
  for (const Shape& s : std::vector<Shape>{{2, 3, 32, 32, 64, 16},     // a small ViT: 8 rows
                                           {2, 3, 36, 44, 192, 4},     // Swin-L's 4x4 stem
                                           {3, 3, 31, 29, 136, 3},     // K 27 -> 32, tails
                                           {2, 3, 56, 70, 80, 14}}) {  // K 588 -> 592
    const Operands o = MakeOperands(s, static_cast<uint32_t>(s.h * s.c + s.co));
    const autotvm::ConfigEntity fallback = *op->FallbackConfig(Workload(s, "float16"));
    std::vector<Case> cases = {
        {fallback, {}, "float32"},
        {fallback, {.bias = true, .relu = true}, "float16"},
        {fallback, {.bias = true, .output = Epilogue::Output::kFloat32}, "float32"},
        {fallback,
         {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
         "float16"}};
    // Split-K where K has a 64-value tile for each slice.
    if (s.c * s.k * s.k > 64) cases.push_back({WithSplitK(fallback, 2), {.bias = true}, "float16"});
    CheckCases(*harness, o, cases);
  }
}

TEST(PatchifyGpu, SampledConfigsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Shape s{4, 3, 96, 64, 256, 16};  // 96 rows of 768 values
  const std::vector<autotvm::ConfigEntity> configs =
      testing::SampledValidConfigs(*FindOpTemplate(autotvm::kConv2dNchwPatchifyWgmma),
                                   Workload(s, "float16"), harness->limits(), 8);
  ASSERT_EQ(configs.size(), 8u);
  std::vector<Case> cases;
  for (size_t i = 0; i < configs.size(); ++i) {
    cases.push_back({configs[i], {.bias = i % 2 == 1, .relu = i % 2 == 1}, "float16"});
  }
  CheckCases(*harness, MakeOperands(s, 7), cases);
}

// ViT-B/16's patch embedding at batch 32 (6272 x 768 x 768): 64 sampled outputs of the fallback
// and of three other tiles against exact sums, and the times of the whole plan, of the gather
// alone, and of the generic conv2d_nchw.cuda fallback this conv ran on before (printed).
TEST(PatchifyGpu, VitB16BatchOf32MatchesAndIsTimed) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const Shape s{32, 3, 224, 224, 768, 16};
  const autotvm::Workload w = Workload(s, "float16");
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNchwPatchifyWgmma);
  const autotvm::ConfigEntity fallback = *op->FallbackConfig(w);
  std::vector<autotvm::ConfigEntity> configs = {fallback};
  for (const auto& [m, n, consumers] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {128, 192, 2}, {128, 256, 2}, {64, 128, 1}}) {
    autotvm::ConfigEntity c = fallback;
    for (autotvm::Knob& knob : c.knobs) {
      if (knob.name == "tile_m") knob = OtherKnob("tile_m", m);
      if (knob.name == "tile_n") knob = OtherKnob("tile_n", n);
      if (knob.name == "consumer_wg") knob = OtherKnob("consumer_wg", consumers);
      if (knob.name == "stages") knob = OtherKnob("stages", 3);
    }
    configs.push_back(c);
  }
  std::vector<OpPlan> plans;
  for (const autotvm::ConfigEntity& c : configs) {
    absl::StatusOr<OpPlan> plan = op->Specialize(w, c, harness->limits(), {});
    ASSERT_TRUE(plan.ok()) << c.ToString() << ": " << plan.status();
    plans.push_back(*std::move(plan));
  }
  autotvm::Conv2dParams direct_p = Params(s);
  const autotvm::Workload direct_w = autotvm::MakeConv2dWorkload("conv2d_nchw.cuda", direct_p);
  const OpTemplate* direct = FindOpTemplate("conv2d_nchw.cuda");
  absl::StatusOr<OpPlan> direct_plan =
      direct->Specialize(direct_w, *direct->FallbackConfig(direct_w), harness->limits(), {});
  ASSERT_TRUE(direct_plan.ok()) << direct_plan.status();
  std::vector<OpPlan> all = plans;
  all.push_back(*direct_plan);
  ASSERT_TRUE(harness->Precompile(all).ok());
  const std::vector<float> x = testing::RandomQuarters(s.n * s.c * s.h * s.w, 11);
  const std::vector<float> wt = testing::RandomQuarters(s.co * s.c * s.k * s.k, 12);
  const std::vector<std::vector<uint8_t>> inputs = {testing::Bytes(x), testing::Bytes(wt), {}, {}};
  const int64_t pixels = s.oh() * s.ow(), out_elements = s.n * pixels * s.co;
  for (size_t p = 0; p < plans.size(); ++p) {
    auto out = harness->Run(plans[p], inputs, {size_t(out_elements * 2)});
    ASSERT_TRUE(out.ok()) << out.status();
    std::mt19937 rng(3);
    for (int sample = 0; sample < 64; ++sample) {
      const int64_t b = rng() % s.n, px = rng() % pixels, o = rng() % s.co;
      const int64_t y = px / s.ow(), xx = px % s.ow();
      double want = 0;
      for (int64_t c = 0; c < s.c; ++c) {
        for (int64_t i = 0; i < s.k; ++i) {
          for (int64_t j = 0; j < s.k; ++j) {
            want += double{x[((b * s.c + c) * s.h + y * s.k + i) * s.w + xx * s.k + j]} *
                    wt[((o * s.c + c) * s.k + i) * s.k + j];
          }
        }
      }
      float got = 0;
      ASSERT_TRUE(testing::StoredExactly((*out)[0], (b * pixels + px) * s.co + o,
                                         testing::StoredAs::kFloat16, static_cast<float>(want),
                                         &got))
          << configs[p].ToString() << " image " << b << " pixel " << px << " channel " << o << ": "
          << got << ", want " << want;
    }
    absl::StatusOr<double> ms = harness->MedianMs(plans[p], inputs, {size_t(out_elements * 2)});
    ASSERT_TRUE(ms.ok()) << ms.status();
    std::printf("patchify ViT-B/16 batch 32 %s: %.4f ms (%.1f TFLOP/s)\n",
                configs[p].ToString().c_str(), *ms, 2.0 * 6272 * 768 * 768 / (*ms * 1e-3) / 1e12);
  }
  OpPlan gather;
  gather.kernels = {plans[0].kernels[1]};
  gather.workspace_bytes = {plans[0].workspace_bytes[0]};
  gather.workspace_persistent = {false};
  absl::StatusOr<double> gather_ms = harness->MedianMs(gather, inputs, {});
  ASSERT_TRUE(gather_ms.ok()) << gather_ms.status();
  std::printf("patchify ViT-B/16 batch 32: the gather alone %.4f ms (%.0f GB/s read + written)\n",
              *gather_ms, (s.n * s.c * s.h * s.w * 4.0 + 6272 * 768 * 2.0) / (*gather_ms * 1e6));
  absl::StatusOr<double> direct_ms =
      harness->MedianMs(*direct_plan, inputs, {size_t(out_elements * 4)}, 1, 3);
  ASSERT_TRUE(direct_ms.ok()) << direct_ms.status();
  std::printf("conv2d_nchw.cuda fallback, the same conv in float32: %.3f ms\n", *direct_ms);
}

}  // namespace
}  // namespace tunejit
