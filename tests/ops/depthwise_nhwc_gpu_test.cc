// GPU: depthwise_conv2d_nhwc.cuda (kernel_sources/depthwise_nhwc.cu) against an exact CPU
// depthwise convolution: MobileNetV2's 3x3 with odd H and W, stride 2 and 3, EfficientNet's 5x5
// (stride 1 and 2), ConvNeXt's 7x7 with padding 3, dilation 2, C not a multiple of 8 (element
// loads and stores), every output kind (float32, float16, requantized int8, scaled float32), the
// fallback and a fixed-seed sample of valid configs. Inputs are RandomQuarters, exact in float16,
// and their sums are exact in float32, so float32 outputs must equal the CPU sums bit for bit and
// float16 / int8 ones their correctly rounded values.
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

struct Shape {
  int64_t n, h, w, c, k, pad, stride, dilation;
  int64_t oh() const { return (h + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
  int64_t ow() const { return (w + 2 * pad - dilation * (k - 1) - 1) / stride + 1; }
};

autotvm::Workload Workload(const Shape& s, const std::string& out) {
  return autotvm::Workload{autotvm::kDepthwiseConv2dNhwc,
                           autotvm::Json::array({testing::Tensor({s.n, s.h, s.w, s.c}, "float16"),
                                                 testing::Tensor({s.c, s.k, s.k, 1}, "float16"),
                                                 {s.stride, s.stride},
                                                 {s.pad, s.pad, s.pad, s.pad},
                                                 {s.dilation, s.dilation},
                                                 out})};
}

struct Operands {
  Shape s;
  std::vector<float> x, w, bias, scale;  // x NHWC, w [C, K, K]
  std::vector<float> acc;                // NHWC, exact
};

// The depthwise convolution in NHWC, summed in double (exact for quarters).
std::vector<float> DepthwiseNhwc(const Shape& s, const std::vector<float>& x,
                                 const std::vector<float>& w) {
  std::vector<float> out(s.n * s.oh() * s.ow() * s.c);
  for (int64_t b = 0; b < s.n; ++b) {
    for (int64_t y = 0; y < s.oh(); ++y) {
      for (int64_t xo = 0; xo < s.ow(); ++xo) {
        for (int64_t c = 0; c < s.c; ++c) {
          double sum = 0;
          for (int64_t r = 0; r < s.k; ++r) {
            const int64_t iy = y * s.stride + r * s.dilation - s.pad;
            if (iy < 0 || iy >= s.h) continue;
            for (int64_t q = 0; q < s.k; ++q) {
              const int64_t ix = xo * s.stride + q * s.dilation - s.pad;
              if (ix < 0 || ix >= s.w) continue;
              sum += double{x[((b * s.h + iy) * s.w + ix) * s.c + c]} * w[(c * s.k + r) * s.k + q];
            }
          }
          out[((b * s.oh() + y) * s.ow() + xo) * s.c + c] = static_cast<float>(sum);
        }
      }
    }
  }
  return out;
}

Operands MakeOperands(const Shape& s, uint32_t seed) {
  Operands o{s,
             testing::RandomQuarters(s.n * s.h * s.w * s.c, seed),
             testing::RandomQuarters(s.c * s.k * s.k, seed + 1),
             testing::RandomQuarters(s.c, seed + 2),
             testing::RandomQuarters(s.c, seed + 3),
             {}};
  o.acc = DepthwiseNhwc(s, o.x, o.w);
  return o;
}

struct Case {
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  std::string out;  // the workload's out_dtype
};

void CheckCases(testing::GpuHarness& harness, const Operands& o, const std::vector<Case>& cases) {
  const OpTemplate* op = FindOpTemplate(autotvm::kDepthwiseConv2dNhwc);
  std::vector<OpPlan> plans;
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        op->Specialize(Workload(o.s, c.out), c.config, harness.limits(), c.epilogue);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*std::move(plan));
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  const std::vector<std::vector<uint8_t>> inputs = {
      testing::Bytes(testing::ToHalves(o.x)), testing::Bytes(testing::ToHalves(o.w)),
      testing::Bytes(o.bias), testing::Bytes(o.scale)};
  for (size_t c = 0; c < cases.size(); ++c) {
    const Case& cs = cases[c];
    const bool to_int8 = cs.epilogue.output == Epilogue::Output::kInt8Requantize;
    const bool f16 = !to_int8 && cs.out == "float16";
    auto out = harness.Run(plans[c], inputs, {o.acc.size() * (to_int8 ? 1 : f16 ? 2 : 4)});
    ASSERT_TRUE(out.ok()) << cs.config.ToString() << ": " << out.status();
    const testing::StoredAs as = to_int8 ? testing::StoredAs::kInt8
                                 : f16   ? testing::StoredAs::kFloat16
                                         : testing::StoredAs::kFloat32;
    int wrong = 0;
    for (size_t i = 0; i < o.acc.size() && wrong < 5; ++i) {
      const int64_t ch = static_cast<int64_t>(i) % o.s.c;
      const float want = testing::EpilogueValue(o.acc[i], o.bias[ch], o.scale[ch], cs.epilogue);
      float got = 0;
      if (testing::StoredExactly((*out)[0], i, as, want, &got)) continue;
      const int64_t pixel = static_cast<int64_t>(i) / o.s.c;
      ADD_FAILURE() << plans[c].kernels[0].spec.name_expression << " image "
                    << pixel / (o.s.oh() * o.s.ow()) << " y " << pixel / o.s.ow() % o.s.oh()
                    << " x " << pixel % o.s.ow() << " c " << ch << ": " << got << ", want " << want;
      ++wrong;
    }
  }
}

TEST(DepthwiseNhwcGpu, FallbackMatchesEveryOutputKind) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const OpTemplate* op = FindOpTemplate(autotvm::kDepthwiseConv2dNhwc);
  for (const Shape& s : std::vector<Shape>{{2, 17, 19, 32, 3, 1, 1, 1},  // odd H and W
                                           {2, 15, 13, 48, 3, 1, 2, 1},  // stride 2
                                           {1, 13, 14, 8, 3, 0, 3, 1},   // stride 3, no pad
                                           {1, 14, 14, 64, 5, 2, 1, 1},  // 5x5
                                           {1, 15, 14, 72, 5, 2, 2, 1},  // 5x5 stride 2
                                           {2, 7, 9, 96, 7, 3, 1, 1},    // ConvNeXt's 7x7
                                           {2, 11, 9, 12, 3, 1, 1, 1},   // C = 12: tails
                                           {1, 9, 10, 20, 3, 2, 1, 2},   // dilation 2, C = 20
                                           {3, 5, 6, 5, 7, 3, 2, 1}}) {  // C = 5, 7x7 stride 2
    const Operands o = MakeOperands(s, static_cast<uint32_t>(s.h * s.c + s.k));
    const autotvm::ConfigEntity fallback = *op->FallbackConfig(Workload(s, "float16"));
    CheckCases(*harness, o,
               {{fallback, {}, "float32"},
                {fallback, {.bias = true, .relu = true}, "float16"},
                {fallback, {.relu = true}, "float16"},
                {fallback, {.bias = true}, "float32"},
                {fallback, {.bias = true, .output = Epilogue::Output::kFloat32}, "float32"},
                {fallback,
                 {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
                 "float16"}});
  }
}

TEST(DepthwiseNhwcGpu, SampledConfigsMatch) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const OpTemplate& op = *FindOpTemplate(autotvm::kDepthwiseConv2dNhwc);
  for (const Shape& s : std::vector<Shape>{{2, 29, 31, 144, 3, 1, 1, 1},  // MobileNetV2-like
                                           {2, 21, 19, 40, 5, 2, 2, 1},
                                           {1, 14, 14, 12, 7, 3, 1, 1}}) {  // 7x7 with tails
    const std::vector<autotvm::ConfigEntity> configs =
        testing::SampledValidConfigs(op, Workload(s, "float16"), harness->limits(), 12);
    ASSERT_EQ(configs.size(), 12u);
    std::vector<Case> cases;
    for (size_t i = 0; i < configs.size(); ++i) {
      cases.push_back({configs[i], {.bias = i % 2 == 1, .relu = i % 2 == 1}, "float16"});
    }
    CheckCases(*harness, MakeOperands(s, 7), cases);
  }
}

}  // namespace
}  // namespace tunejit
