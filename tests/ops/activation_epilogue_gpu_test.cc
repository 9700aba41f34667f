// GPU: the activation in the epilogue (Epilogue::activation: clip, silu, hard_swish) on every
// template that fuses it, against two references:
//  * the unfused pair, the template without the activation and then the separate step kernel the
//    executor would run (ops/elementwise.h ClipKernel, ops/tensor_ops.h UnaryKernel) on its
//    output: equal bit for bit, which is what lets the executor fuse;
//  * the CPU: exact accumulators (RandomQuarters inputs), the epilogue, the float16 rounding the
//    unfused step reads, the activation (ops/cpu_reference.h ActivationValue), the final
//    rounding: equal for clip and hard_swish (IEEE operations on both sides), within one
//    float16 ulp (float32: 4 ulp) for silu, whose expf the CPU's std::exp differs from.
// conv2d_nhwc_wgmma.cuda (16-byte and pair stores, swapped tiles' staged rows, channel tails,
// after a residual add), depthwise_conv2d_nhwc.cuda (vector and element I/O),
// conv2d_nchw_stem_mma.cuda and dense_wgmma.cuda (split-K's sum kernel), float16 and float32 out.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/elementwise.h"
#include "ops/split.h"
#include "ops/tensor_ops.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using Act = Epilogue::Activation;

constexpr Epilogue kRelu6{.bias = true, .activation = Act::kClip, .clip_lo = 0, .clip_hi = 6};
constexpr Epilogue kClip{
    .bias = true, .activation = Act::kClip, .clip_lo = -0.5f, .clip_hi = 0.75f};
constexpr Epilogue kSilu{.bias = true, .activation = Act::kSilu};
constexpr Epilogue kHardSwish{.bias = true, .activation = Act::kHardSwish};
constexpr Epilogue kGelu{.bias = true, .activation = Act::kGelu};
constexpr Epilogue kGeluTanh{.bias = true, .activation = Act::kGeluTanh};

// One op to run: its workload and config, its input images (data, weight, bias, scale[,
// residual]), and its exact accumulators in output order, channel i % channels.
struct Problem {
  std::string label;
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<float> acc, bias, scale, residual;  // residual: float16 values, output order
  int64_t channels = 0;
  bool f16_out = false;
};

autotvm::Json Tensor(const std::vector<int64_t>& shape, const std::string& dtype) {
  return testing::Tensor(shape, dtype);
}

// NHWC convolution with groups (OHWI weight [co, k, k, c / groups]), summed in double: exact for
// quarters.
std::vector<float> ConvNhwc(int64_t n, int64_t h, int64_t w, int64_t c, int64_t co, int64_t k,
                            int64_t stride, int64_t groups, const std::vector<float>& x,
                            const std::vector<float>& wt) {
  const int64_t pad = k / 2, oh = (h + 2 * pad - k) / stride + 1,
                ow = (w + 2 * pad - k) / stride + 1;
  const int64_t cg = c / groups, og = co / groups;
  std::vector<float> out(n * oh * ow * co);
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t y = 0; y < oh; ++y) {
      for (int64_t xo = 0; xo < ow; ++xo) {
        for (int64_t f = 0; f < co; ++f) {
          double sum = 0;
          for (int64_t r = 0; r < k; ++r) {
            const int64_t iy = y * stride + r - pad;
            if (iy < 0 || iy >= h) continue;
            for (int64_t q = 0; q < k; ++q) {
              const int64_t ix = xo * stride + q - pad;
              if (ix < 0 || ix >= w) continue;
              for (int64_t j = 0; j < cg; ++j) {
                sum += double{x[((b * h + iy) * w + ix) * c + f / og * cg + j]} *
                       wt[((f * k + r) * k + q) * cg + j];
              }
            }
          }
          out[((b * oh + y) * ow + xo) * co + f] = static_cast<float>(sum);
        }
      }
    }
  }
  return out;
}

// conv2d_nhwc_wgmma.cuda, or with groups == c == co depthwise_conv2d_nhwc.cuda; fp16 operands.
Problem NhwcConv(const std::string& task, int64_t c, int64_t co, int64_t k, int64_t stride,
                 bool f16_out, autotvm::ConfigEntity config, bool residual = false) {
  const int64_t n = 2, h = 10, w = 9, groups = task == autotvm::kDepthwiseConv2dNhwc ? c : 1;
  const int pad = static_cast<int>(k / 2);
  const int s = static_cast<int>(stride);
  Problem p;
  p.label = absl::StrCat(task, " C ", c, " CO ", co, " k ", k, " /", stride,
                         f16_out ? " f16" : " f32", residual ? " residual" : "");
  p.workload = autotvm::Workload{
      task, autotvm::Json::array({Tensor({n, h, w, c}, "float16"),
                                  Tensor({co, k, k, groups == 1 ? c : 1}, "float16"),
                                  {s, s},
                                  {pad, pad, pad, pad},
                                  {1, 1},
                                  f16_out ? "float16" : "float32"})};
  if (config.knobs.empty()) config = *FindOpTemplate(task)->FallbackConfig(p.workload);
  p.config = config;
  const std::vector<float> x = testing::RandomQuarters(n * h * w * c, 11);
  const std::vector<float> wt = testing::RandomQuarters(co * k * k * (c / groups), 12);
  p.acc = ConvNhwc(n, h, w, c, co, k, stride, groups, x, wt);
  p.bias = testing::RandomQuarters(co, 13);
  p.scale = testing::RandomQuarters(co, 14);
  p.channels = co;
  p.f16_out = f16_out;
  p.inputs = {testing::Bytes(testing::ToHalves(x)), testing::Bytes(testing::ToHalves(wt)),
              testing::Bytes(p.bias), testing::Bytes(p.scale)};
  if (residual) {
    p.residual = testing::RandomQuarters(p.acc.size(), 15);
    p.inputs.push_back(testing::Bytes(testing::ToHalves(p.residual)));
  }
  return p;
}

// conv2d_nchw_stem_mma.cuda: float32 NCHW data and OIHW weight in, NHWC out.
Problem Stem(bool f16_out) {
  const int64_t n = 2, c = 3, h = 20, w = 18, co = 32, k = 3;
  Problem p;
  p.label = absl::StrCat("stem", f16_out ? " f16" : " f32");
  p.workload = autotvm::Workload{autotvm::kConv2dNchwStemMma,
                                 autotvm::Json::array({Tensor({n, c, h, w}, "float32"),
                                                       Tensor({co, c, k, k}, "float32"),
                                                       {2, 2},
                                                       {1, 1, 1, 1},
                                                       {1, 1},
                                                       f16_out ? "float16" : "float32"})};
  p.config = *FindOpTemplate(autotvm::kConv2dNchwStemMma)->FallbackConfig(p.workload);
  const std::vector<float> x = testing::RandomQuarters(n * c * h * w, 21);
  const std::vector<float> wt = testing::RandomQuarters(co * c * k * k, 22);
  autotvm::Conv2dParams params;
  params.n = n, params.ci = c, params.h = h, params.w = w, params.co = co, params.kh = k,
  params.kw = k;
  params.stride_h = params.stride_w = 2;
  params.pad_top = params.pad_left = params.pad_bottom = params.pad_right = 1;
  const std::vector<double> nchw = cpuref::Conv2dFloat(params, x, wt);
  const int64_t pixels = params.OutH() * params.OutW();
  p.acc.resize(nchw.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t f = 0; f < co; ++f) {
      for (int64_t px = 0; px < pixels; ++px) {
        p.acc[(b * pixels + px) * co + f] = static_cast<float>(nchw[(b * co + f) * pixels + px]);
      }
    }
  }
  p.bias = testing::RandomQuarters(co, 23);
  p.scale = testing::RandomQuarters(co, 24);
  p.channels = co;
  p.f16_out = f16_out;
  p.inputs = {testing::Bytes(x), testing::Bytes(wt), testing::Bytes(p.bias),
              testing::Bytes(p.scale)};
  return p;
}

// dense_wgmma.cuda: [M, K] x [N, K]^T, fp16 operands; `split_k` slices.
Problem Dense(bool f16_out, int64_t split_k) {
  const int64_t m = 40, n = 72, k = 96;
  Problem p;
  p.label = absl::StrCat("dense", f16_out ? " f16" : " f32", " split_k ", split_k);
  p.workload =
      autotvm::Workload{"dense_wgmma.cuda",
                        autotvm::Json::array({Tensor({m, k}, "float16"), Tensor({n, k}, "float16"),
                                              nullptr, f16_out ? "float16" : "float32"})};
  p.config = testing::Config({OtherKnob("tile_m", 64), OtherKnob("tile_n", 128),
                              OtherKnob("tile_k", 64), OtherKnob("stages", 2),
                              OtherKnob("consumer_wg", 1), OtherKnob("split_k", split_k)});
  const std::vector<float> a = testing::RandomQuarters(m * k, 31);
  const std::vector<float> wt = testing::RandomQuarters(n * k, 32);
  p.acc.resize(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < k; ++q) sum += double{a[i * k + q]} * wt[j * k + q];
      p.acc[i * n + j] = static_cast<float>(sum);
    }
  }
  p.bias = testing::RandomQuarters(n, 33);
  p.scale = testing::RandomQuarters(n, 34);
  p.channels = n;
  p.f16_out = f16_out;
  p.inputs = {testing::Bytes(testing::ToHalves(a)), testing::Bytes(testing::ToHalves(wt)),
              testing::Bytes(p.bias), testing::Bytes(p.scale)};
  return p;
}

float RoundToHalf(float v) { return HalfToFloat(FloatToHalf(v)); }

// What the unfused steps store for output i: the epilogue (the residual add and its ReLU in
// float16, as the add step computes them), rounded as the op stores it, then the activation.
float Expected(const Problem& p, const Epilogue& e, size_t i) {
  const int64_t ch = static_cast<int64_t>(i) % p.channels;
  Epilogue before = e;
  before.activation = Act::kNone;
  before.relu = e.relu && !e.residual;
  float v = testing::EpilogueValue(p.acc[i], p.bias[ch], p.scale[ch], before);
  if (p.f16_out) v = RoundToHalf(v);
  if (e.residual) {
    v = RoundToHalf(v + p.residual[i]);
    if (e.relu && v < 0) v = 0;
  }
  v = cpuref::ActivationValue(e, v);
  return p.f16_out ? RoundToHalf(v) : v;
}

// The separate step after the unfused op, as the executor plans it (executor/step_kernels.cc).
absl::StatusOr<OpPlan> StepAfter(const Problem& p, const Epilogue& e) {
  const ElementType type = p.f16_out ? ElementType::kFloat16 : ElementType::kFloat32;
  const int64_t total = static_cast<int64_t>(p.acc.size());
  const UnaryFn fn = e.activation == Act::kSilu       ? UnaryFn::kSilu
                     : e.activation == Act::kGelu     ? UnaryFn::kGelu
                     : e.activation == Act::kGeluTanh ? UnaryFn::kGeluTanh
                                                      : UnaryFn::kHardSwish;
  absl::StatusOr<PlannedKernel> k = e.activation == Act::kClip
                                        ? ClipKernel(total, e.clip_lo, e.clip_hi, type)
                                        : UnaryKernel(fn, total, 0.2f, 0.5f, type);
  if (!k.ok()) return k.status();
  OpPlan plan;
  plan.kernels.push_back(*std::move(k));
  return plan;
}

float StoredValue(const Problem& p, const std::vector<uint8_t>& bytes, size_t i) {
  if (p.f16_out) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    return HalfToFloat(h);
  }
  float f;
  std::memcpy(&f, bytes.data() + i * 4, 4);
  return f;
}

// Within the tolerance of the activation's arithmetic: exact but for silu and both gelus (one
// float16 ulp, or 4 float32 ulp, of the expected value: expf, erff and tanhf against the host's,
// and the tanh form's 1 + tanh cancelling as the erf form's does). gelu's
// 1 + erf(x / sqrt(2)) cancels for negative x: float32's rounding of it near 1 (2^-24), times
// x / 2 for |x| up to ~5 where the result is not yet 0, leaves up to 2^-21 absolute.
bool Close(const Problem& p, const Epilogue& e, float got, float want) {
  if (got == want) return true;
  const bool gelu = e.activation == Act::kGelu || e.activation == Act::kGeluTanh;
  if ((e.activation != Act::kSilu && !gelu) || !std::isfinite(got)) return false;
  if (gelu && std::abs(got - want) <= std::ldexp(1.0f, -21)) return true;
  const float ulp = p.f16_out ? std::ldexp(1.0f, std::ilogb(want) - 10)
                              : 4 * std::ldexp(1.0f, std::ilogb(want) - 23);
  return std::abs(got - want) <= ulp;
}

void Check(testing::GpuHarness& harness, const Problem& p, const std::vector<Epilogue>& epilogues) {
  const OpTemplate* op = FindOpTemplate(p.workload.task_name);
  ASSERT_NE(op, nullptr);
  std::vector<OpPlan> fused, unfused, steps;
  for (const Epilogue& e : epilogues) {
    Epilogue plain = e;
    plain.activation = Act::kNone;
    absl::StatusOr<OpPlan> f = op->Specialize(p.workload, p.config, harness.limits(), e);
    absl::StatusOr<OpPlan> u = op->Specialize(p.workload, p.config, harness.limits(), plain);
    absl::StatusOr<OpPlan> s = StepAfter(p, e);
    ASSERT_TRUE(f.ok() && u.ok() && s.ok())
        << p.label << ": " << f.status() << u.status() << s.status();
    fused.push_back(*std::move(f));
    unfused.push_back(*std::move(u));
    steps.push_back(*std::move(s));
  }
  std::vector<OpPlan> all = fused;
  all.insert(all.end(), unfused.begin(), unfused.end());
  all.insert(all.end(), steps.begin(), steps.end());
  ASSERT_TRUE(harness.Precompile(all).ok()) << p.label;
  const size_t out_bytes = p.acc.size() * (p.f16_out ? 2 : 4);
  for (size_t c = 0; c < epilogues.size(); ++c) {
    const Epilogue& e = epilogues[c];
    const std::string what = absl::StrCat(p.label, " ", std::string(ActivationName(e.activation)),
                                          e.residual ? " after the residual" : "");
    auto got = harness.Run(fused[c], p.inputs, {out_bytes});
    ASSERT_TRUE(got.ok()) << what << ": " << got.status();
    auto before = harness.Run(unfused[c], p.inputs, {out_bytes});
    ASSERT_TRUE(before.ok()) << what << ": " << before.status();
    auto after = harness.Run(steps[c], {(*before)[0]}, {out_bytes});
    ASSERT_TRUE(after.ok()) << what << ": " << after.status();
    EXPECT_EQ((*got)[0], (*after)[0]) << what << ": fused differs from the op and its step";
    int wrong = 0;
    for (size_t i = 0; i < p.acc.size() && wrong < 5; ++i) {
      const float want = Expected(p, e, i), v = StoredValue(p, (*got)[0], i);
      if (!Close(p, e, v, want)) {
        ADD_FAILURE() << what << ": output " << i << " = " << v << ", want " << want;
        ++wrong;
      }
    }
  }
}

const std::vector<Epilogue> kAll = {kRelu6, kClip, kSilu, kHardSwish, kGelu, kGeluTanh};

autotvm::ConfigEntity WgmmaTile(int64_t bn, int64_t swap_ab) {
  return testing::Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 16), OtherKnob("tile_n", bn),
                          OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                          OtherKnob("pingpong", 0), OtherKnob("im2col", 0), OtherKnob("cluster", 1),
                          OtherKnob("halo", 0), OtherKnob("swap_ab", swap_ab),
                          OtherKnob("tile_b", 1)});
}

TEST(ActivationEpilogueGpu, Conv2dWgmmaMatchesTheUnfusedStepAndTheCpu) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  const char* task = autotvm::kConv2dNhwcWgmma;
  // CO 72: 16-byte stores; CO 36: pairs; swapped tiles (their staged rows, a tail of 8 and of
  // 36 - 32 channels); float32 out.
  Check(*harness, NhwcConv(task, 64, 72, 3, 1, true, WgmmaTile(128, 0)), kAll);
  Check(*harness, NhwcConv(task, 64, 36, 3, 1, true, WgmmaTile(128, 0)), kAll);
  Check(*harness, NhwcConv(task, 64, 72, 1, 1, true, WgmmaTile(64, 1)), kAll);
  Check(*harness, NhwcConv(task, 64, 36, 3, 2, true, WgmmaTile(64, 1)), kAll);
  Check(*harness, NhwcConv(task, 64, 72, 3, 1, false, WgmmaTile(128, 0)), kAll);
  Check(*harness, NhwcConv(task, 64, 36, 1, 1, false, WgmmaTile(64, 1)), kAll);
  // After the residual add and its ReLU (16-byte stores, pairs, staged rows).
  std::vector<Epilogue> residual = kAll;
  for (Epilogue& e : residual) e.relu = e.residual = true;
  Check(*harness, NhwcConv(task, 64, 72, 3, 1, true, WgmmaTile(128, 0), true), residual);
  Check(*harness, NhwcConv(task, 64, 36, 3, 1, true, WgmmaTile(128, 0), true), residual);
  Check(*harness, NhwcConv(task, 64, 72, 1, 1, true, WgmmaTile(64, 1), true), residual);
}

TEST(ActivationEpilogueGpu, DepthwiseNhwcMatchesTheUnfusedStepAndTheCpu) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  const char* task = autotvm::kDepthwiseConv2dNhwc;
  // C 40: 16-byte vectors; C 20: element by element; stride 2; 5x5; float32 out.
  Check(*harness, NhwcConv(task, 40, 40, 3, 1, true, {}), kAll);
  Check(*harness, NhwcConv(task, 20, 20, 3, 2, true, {}), kAll);
  Check(*harness, NhwcConv(task, 40, 40, 5, 2, false, {}), kAll);
  Check(*harness, NhwcConv(task, 20, 20, 3, 1, false, {}), kAll);
}

TEST(ActivationEpilogueGpu, StemMatchesTheUnfusedStepAndTheCpu) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  if (harness->limits().arch.major < 8) GTEST_SKIP() << "the stem needs sm_80";
  Check(*harness, Stem(true), kAll);
  Check(*harness, Stem(false), kAll);
}

TEST(ActivationEpilogueGpu, DenseWgmmaMatchesTheUnfusedStepAndTheCpu) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  TUNEJIT_REQUIRE_HOPPER(harness);
  Check(*harness, Dense(true, 1), kAll);
  Check(*harness, Dense(false, 1), kAll);
  Check(*harness, Dense(true, 2), kAll);  // the split-K sum kernel applies it
  Check(*harness, Dense(false, 2), kAll);
}

}  // namespace
}  // namespace tunejit
