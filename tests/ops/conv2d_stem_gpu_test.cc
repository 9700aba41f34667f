// GPU (sm_80+): conv2d_nchw_stem_mma.cuda (kernel_sources/conv2d_stem.cu) against an exact CPU
// convolution: VGG-16's RGB stem shape with tails in both tile dimensions, stride 2, dilation 2,
// patches of one to four k16 steps (25, 27, 36 and 63 values), 16 to 64 output channels, every
// output kind (float32, float16, requantized int8, scaled float32), the fallback and a fixed-seed
// sample of valid configs. Inputs are RandomQuarters, exact in float16, so float32 outputs must
// equal the CPU sums bit for bit and float16 / int8 ones their correctly rounded values.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
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

struct Shape {
  int64_t n, c, h, w, co, k, pad, stride, dilation;
  int64_t oh() const { return (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

autotvm::Workload Workload(const Shape& s, const std::string& out) {
  return autotvm::Workload{autotvm::kConv2dNchwStemMma,
                           autotvm::Json::array({testing::Tensor({s.n, s.c, s.h, s.w}, "float32"),
                                                 testing::Tensor({s.co, s.c, s.k, s.k}, "float32"),
                                                 {s.stride, s.stride},
                                                 {s.pad, s.pad, s.pad, s.pad},
                                                 {s.dilation, s.dilation},
                                                 out})};
}

struct Operands {
  Shape s;
  std::vector<float> x, w, bias, scale;
  std::vector<float> acc;  // NHWC, exact
};

autotvm::Conv2dParams Params(const Shape& s) {
  autotvm::Conv2dParams p;
  p.n = s.n, p.ci = s.c, p.h = s.h, p.w = s.w, p.co = s.co, p.kh = p.kw = s.k;
  p.stride_h = p.stride_w = static_cast<int>(s.stride);
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = static_cast<int>(s.pad);
  p.dilation_h = p.dilation_w = static_cast<int>(s.dilation);
  return p;
}

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

void CheckCases(testing::GpuHarness& harness, const Operands& o, const std::vector<Case>& cases) {
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNchwStemMma);
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
      ADD_FAILURE() << plans[c].kernels[0].spec.name_expression << " image "
                    << pixel / (o.s.oh() * o.s.ow()) << " y " << pixel / o.s.ow() % o.s.oh()
                    << " x " << pixel % o.s.ow() << " co " << co << ": " << got << ", want "
                    << want;
      ++wrong;
    }
  }
}

TEST(Conv2dStemGpu, FallbackMatchesEveryOutputKind) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const OpTemplate* op = FindOpTemplate(autotvm::kConv2dNchwStemMma);
  for (const Shape& s : std::vector<Shape>{{2, 3, 19, 37, 64, 3, 1, 1, 1},  // VGG's stem, tails
                                           {1, 1, 23, 29, 32, 5, 2, 2, 1},  // stride 2, K 25
                                           {2, 4, 17, 20, 16, 3, 2, 1, 2},  // dilation 2, K 36
                                           {1, 7, 15, 33, 48, 3, 1, 1, 1},  // K 63: 4 steps
                                           // ResNet's 7x7 stride 2: K 147, weights in smem
                                           {2, 3, 45, 39, 64, 7, 3, 2, 1},
                                           // ConvNeXt's 4x4 stride 4 to 96 channels (smem)
                                           {2, 3, 37, 42, 96, 4, 0, 4, 1}}) {
    const Operands o = MakeOperands(s, static_cast<uint32_t>(s.h * s.c + s.co));
    const autotvm::ConfigEntity fallback = *op->FallbackConfig(Workload(s, "float16"));
    CheckCases(*harness, o,
               {{fallback, {}, "float32"},
                {fallback, {.bias = true, .relu = true}, "float16"},
                {fallback, {.bias = true, .output = Epilogue::Output::kFloat32}, "float32"},
                {fallback,
                 {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
                 "float16"}});
  }
}

TEST(Conv2dStemGpu, SampledConfigsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const Shape s{2, 3, 37, 45, 64, 3, 1, 1, 1};
  const std::vector<autotvm::ConfigEntity> configs = testing::SampledValidConfigs(
      *FindOpTemplate(autotvm::kConv2dNchwStemMma), Workload(s, "float16"), harness->limits(), 12);
  ASSERT_EQ(configs.size(), 12u);
  std::vector<Case> cases;
  for (size_t i = 0; i < configs.size(); ++i) {
    cases.push_back({configs[i], {.bias = i % 2 == 1, .relu = i % 2 == 1}, "float16"});
  }
  CheckCases(*harness, MakeOperands(s, 7), cases);
}

}  // namespace
}  // namespace tunejit
