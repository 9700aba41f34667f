// CPU: the epilogue's activation (ops/op_template.h Epilogue::activation: clip, silu, hard_swish)
// on the templates that fuse it (conv2d_nhwc_wgmma.cuda, depthwise_conv2d_nhwc.cuda,
// conv2d_nchw_stem_mma.cuda, dense_wgmma.cuda, into float16 or float32 outputs) and its rejection
// everywhere else with a message naming it and what is supported; the kernel names (a distinct
// kernel and cache key per activation and clip bounds, unchanged names without one); the GPU
// reference plans; the CPU reference's values; and NVRTC sm_90a builds of the new
// specializations. The GPU test is activation_epilogue_gpu_test.cc.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/cpu_reference.h"
#include "ops/plan_util.h"
#include "ops/reference_kernels.h"
#include "ops/split.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/offers.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using Act = Epilogue::Activation;
using Out = Epilogue::Output;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

constexpr Epilogue kRelu6{.bias = true, .activation = Act::kClip, .clip_lo = 0, .clip_hi = 6};
constexpr Epilogue kSilu{.bias = true, .activation = Act::kSilu};
constexpr Epilogue kHardSwish{.bias = true, .activation = Act::kHardSwish};
constexpr Epilogue kGelu{.bias = true, .activation = Act::kGelu};
constexpr Epilogue kGeluTanh{.bias = true, .activation = Act::kGeluTanh};

autotvm::Conv2dParams Geometry(int64_t n, int64_t c, int64_t hw, int64_t co, int64_t k,
                               int64_t groups = 1, int stride = 1) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = c, p.h = p.w = hw, p.co = co, p.kh = p.kw = k, p.groups = groups;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = static_cast<int>(k / 2);
  return p;
}

// The one workload `mode` offers for the conv (the first of several).
autotvm::Workload OfferedConv(const autotvm::Conv2dParams& p, NumericMode mode, bool half_output,
                              const std::string& task) {
  for (const autotvm::Implementation& impl : testing::OfferedConv(p, mode, half_output)) {
    if (impl.workload.task_name == task) return impl.workload;
  }
  ADD_FAILURE() << task << " is not offered";
  return {};
}

autotvm::Workload OfferedDense(int64_t m, int64_t n, int64_t k, NumericMode mode, bool half_output,
                               const std::string& task) {
  autotvm::DenseParams p;
  p.m = m, p.n = n, p.k = k;
  for (const autotvm::Implementation& impl : testing::OfferedDense(p, mode, half_output)) {
    if (impl.workload.task_name == task) return impl.workload;
  }
  ADD_FAILURE() << task << " is not offered";
  return {};
}

// The template's plan of `w` with its fallback config.
absl::StatusOr<OpPlan> Plan(const autotvm::Workload& w, const Epilogue& e,
                            const autotvm::ConfigEntity* config = nullptr) {
  const OpTemplate* op = FindOpTemplate(w.task_name);
  if (op == nullptr) return absl::NotFoundError(w.task_name);
  autotvm::ConfigEntity fallback;
  if (config == nullptr) {
    absl::StatusOr<autotvm::ConfigEntity> c = op->FallbackConfig(w);
    if (!c.ok()) return c.status();
    fallback = *c;
    config = &fallback;
  }
  return op->Specialize(w, *config, kHopper, e);
}

std::string NameOf(const autotvm::Workload& w, const Epilogue& e) {
  absl::StatusOr<OpPlan> plan = Plan(w, e);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? plan->kernels[0].spec.name_expression : "";
}

TEST(ActivationNames, EpiAndActTypeNames) {
  EXPECT_EQ(ActivationTypeName(kRelu6), "tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>");
  EXPECT_EQ(ActivationTypeName(Epilogue{.activation = Act::kClip, .clip_lo = -1, .clip_hi = 1}),
            "tunejit::Act<tunejit::ActKind::kClip, -1082130432, 1065353216>");
  // -0.0's bits are INT_MIN, still an int template argument.
  EXPECT_EQ(ActivationTypeName(Epilogue{.activation = Act::kClip, .clip_lo = -0.0f, .clip_hi = 6}),
            "tunejit::Act<tunejit::ActKind::kClip, -2147483648, 1086324736>");
  EXPECT_EQ(ActivationTypeName(kSilu), "tunejit::Act<tunejit::ActKind::kSilu>");
  EXPECT_EQ(ActivationTypeName(kHardSwish), "tunejit::Act<tunejit::ActKind::kHardSwish>");
  EXPECT_EQ(ActivationTypeName(kGelu), "tunejit::Act<tunejit::ActKind::kGelu>");
  EXPECT_EQ(ActivationName(Act::kGelu), "gelu");
  EXPECT_EQ(ActivationTypeName(kGeluTanh), "tunejit::Act<tunejit::ActKind::kGeluTanh>");
  EXPECT_EQ(ActivationName(Act::kGeluTanh), "gelu_tanh");
  EXPECT_EQ(ActivationTypeName(Epilogue{}), "tunejit::Act<>");
  EXPECT_EQ(EpilogueTypeName(kRelu6),
            "tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, false, "
            "tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>");
  EXPECT_EQ(EpilogueTypeName(Epilogue{.bias = true, .residual = true, .activation = Act::kSilu}),
            "tunejit::Epi<true, false, tunejit::EpiOut::kAccumulator, true, "
            "tunejit::Act<tunejit::ActKind::kSilu>>");
  // Without an activation the names are what they were (the kernel cache keys stay valid).
  EXPECT_EQ(EpilogueTypeName(Epilogue{.bias = true, .relu = true}),
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>");
  EXPECT_EQ(ActivationArg(Epilogue{.bias = true}), "");
  EXPECT_EQ(ActivationArg(kHardSwish), ", tunejit::Act<tunejit::ActKind::kHardSwish>");
  EXPECT_EQ(ActivationName(Act::kHardSwish), "hard_swish");
  // The code the int-coded templates read has no activation in it.
  EXPECT_EQ(EpilogueCode(kSilu), EpilogueCode(Epilogue{.bias = true}));
}

TEST(ActivationRules, CheckActivationMessages) {
  EXPECT_TRUE(CheckActivation("t", Epilogue{.relu = true}, "no reason needed").ok());
  EXPECT_TRUE(CheckActivation("t", kSilu, "").ok());
  const absl::Status refused = CheckActivation("conv2d_nchw.cuda", kSilu, "it fuses relu only");
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("conv2d_nchw.cuda: takes no silu activation in its epilogue: it fuses "
                        "relu only (supported: clip, silu and hard_swish into the float16 or "
                        "float32 output of conv2d_nhwc_wgmma.cuda, depthwise_conv2d_nhwc.cuda, "
                        "conv2d_nchw_stem_mma.cuda, conv2d_nchw_patchify_wgmma.cuda and "
                        "dense_wgmma.cuda"));
  const absl::Status unordered =
      CheckActivation("t", Epilogue{.activation = Act::kClip, .clip_lo = 1, .clip_hi = 0}, "");
  EXPECT_EQ(unordered.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unordered.message()), HasSubstr("clip bounds [1, 0] are not ordered"));
  const float nan = std::nanf("");
  EXPECT_FALSE(
      CheckActivation("t", Epilogue{.activation = Act::kClip, .clip_lo = nan, .clip_hi = 6}, "")
          .ok());
}

TEST(ActivationRules, ExactlyTheFp16TensorCoreTemplatesTakeOne) {
  std::set<std::string> taking;
  for (const OpTemplate* op : AllOpTemplates()) {
    if (op->takes_activation()) taking.insert(std::string(op->task_name()));
  }
  EXPECT_EQ(taking, (std::set<std::string>{"conv2d_nhwc_wgmma.cuda", "depthwise_conv2d_nhwc.cuda",
                                           "conv2d_nchw_stem_mma.cuda",
                                           "conv2d_nchw_patchify_wgmma.cuda", "dense_wgmma.cuda"}));
}

TEST(ActivationRules, Conv2dWgmmaTakesEachIntoFloat16AndFloat32) {
  const autotvm::Conv2dParams p = Geometry(2, 32, 14, 64, 1);
  for (bool half : {true, false}) {
    const autotvm::Workload w =
        OfferedConv(p, NumericMode::kFp16TensorCores, half, "conv2d_nhwc_wgmma.cuda");
    for (const Epilogue& e : {kRelu6, kSilu, kHardSwish, kGelu, kGeluTanh}) {
      absl::StatusOr<OpPlan> plan = Plan(w, e);
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_THAT(plan->kernels[0].spec.name_expression,
                  HasSubstr(absl::StrCat(EpilogueTypeName(e), ", ", half ? 1 : 0, ", 0>>")));
    }
  }
  // After the residual add and its ReLU.
  const autotvm::Workload w =
      OfferedConv(p, NumericMode::kFp16TensorCores, true, "conv2d_nhwc_wgmma.cuda");
  Epilogue after_residual = kRelu6;
  after_residual.relu = after_residual.residual = true;
  EXPECT_TRUE(Plan(w, after_residual).ok());
}

TEST(ActivationRules, Conv2dWgmmaRefusesPoolsAndInt8) {
  // A pooled conv: the pool reads the epilogue's value.
  OpRequest pooled;
  pooled.op = OpRequest::Op::kConv2dMaxPool;
  pooled.mode = NumericMode::kFp16TensorCores;
  pooled.conv = Geometry(2, 32, 16, 64, 3);
  pooled.half_output = true;
  const std::vector<autotvm::Implementation> pool = testing::Implementations(pooled);
  ASSERT_EQ(pool.size(), 1u);
  absl::StatusOr<OpPlan> plan = Plan(pool[0].workload, kRelu6);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(plan.status().message()),
              HasSubstr("conv2d_nhwc_wgmma_pool.cuda: takes no clip activation in its epilogue: "
                        "a 2x2 max pool follows its epilogue (supported:"));
  // int8 operands, and an fp16 conv requantizing to int8.
  const autotvm::Workload int8 = OfferedConv(
      Geometry(2, 32, 14, 64, 1), NumericMode::kInt8TensorCores, false, "conv2d_nhwc_wgmma.cuda");
  Epilogue scaled = kSilu;
  scaled.output = Out::kFloat32;
  EXPECT_TRUE(Plan(int8, Epilogue{.bias = true, .output = Out::kFloat32}).ok());
  EXPECT_THAT(std::string(Plan(int8, scaled).status().message()),
              HasSubstr("takes no silu activation in its epilogue: int8 operands"));
  const autotvm::Workload fp16 = OfferedConv(
      Geometry(2, 32, 14, 64, 1), NumericMode::kFp16TensorCores, true, "conv2d_nhwc_wgmma.cuda");
  Epilogue requantized = kHardSwish;
  requantized.output = Out::kInt8Requantize;
  EXPECT_THAT(std::string(Plan(fp16, requantized).status().message()),
              HasSubstr("takes no hard_swish activation in its epilogue: a requantized int8 "
                        "output"));
  EXPECT_EQ(
      Plan(fp16, Epilogue{.activation = Act::kClip, .clip_lo = 6, .clip_hi = 0}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(ActivationRules, DepthwiseNhwcStemAndDenseWgmmaTakeOne) {
  const autotvm::Workload dw =
      OfferedConv(Geometry(2, 96, 14, 96, 3, /*groups=*/96), NumericMode::kFp16TensorCores, true,
                  "depthwise_conv2d_nhwc.cuda");
  EXPECT_THAT(NameOf(dw, kRelu6),
              HasSubstr("tunejit::DepthwiseIo<1, tunejit::Epi<true, false, "
                        "tunejit::EpiOut::kAccumulator, false, "
                        "tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>, 1>>"));
  Epilogue requantized = kRelu6;
  requantized.output = Out::kInt8Requantize;
  EXPECT_THAT(std::string(Plan(dw, requantized).status().message()),
              HasSubstr("depthwise_conv2d_nhwc.cuda: takes no clip activation"));

  const autotvm::Workload stem =
      OfferedConv(Geometry(2, 3, 32, 16, 3, 1, 2), NumericMode::kFp16TensorCores, true,
                  "conv2d_nchw_stem_mma.cuda");
  const std::string stem_name = NameOf(stem, kHardSwish);
  EXPECT_TRUE(absl::EndsWith(stem_name, ", 1, 1, tunejit::Act<tunejit::ActKind::kHardSwish>>"))
      << stem_name;
  EXPECT_TRUE(absl::EndsWith(NameOf(stem, Epilogue{.bias = true}), ", 1, 1>"));

  const autotvm::Workload dense =
      OfferedDense(8, 1024, 576, NumericMode::kFp16TensorCores, true, "dense_wgmma.cuda");
  EXPECT_TRUE(absl::EndsWith(NameOf(dense, kHardSwish),
                             ", 1, 1, 1, tunejit::Act<tunejit::ActKind::kHardSwish>>"));
  // Split-K: the GEMM writes raw partial sums; the sum kernel runs the epilogue and the
  // activation.
  const autotvm::ConfigEntity split = testing::Config(
      {OtherKnob("tile_m", 128), OtherKnob("tile_n", 128), OtherKnob("tile_k", 64),
       OtherKnob("stages", 4), OtherKnob("consumer_wg", 1), OtherKnob("split_k", 2)});
  absl::StatusOr<OpPlan> plan = Plan(dense, kSilu, &split);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 2u);
  EXPECT_TRUE(absl::EndsWith(plan->kernels[0].spec.name_expression, ", 0, 0, 2>"));
  EXPECT_EQ(plan->kernels[1].spec.name_expression,
            "tunejit::gemm_split_k_sum<2, 0, 1, 1, tunejit::Act<tunejit::ActKind::kSilu>>");
}

// Every other template refuses an activation with the reason and what is supported, and
// accepts the same epilogue without it.
TEST(ActivationRules, EveryOtherTemplateRefusesOne) {
  const autotvm::Conv2dParams conv = Geometry(2, 32, 14, 64, 3);
  std::vector<std::pair<autotvm::Workload, Epilogue>> cases;
  for (const auto& impl : testing::OfferedConv(conv, NumericMode::kFp32, false)) {
    cases.push_back({impl.workload, Epilogue{.bias = true}});  // conv2d_nchw, winograd
  }
  for (const auto& impl : testing::OfferedConv(conv, NumericMode::kInt8Dp4a, false)) {
    cases.push_back({impl.workload, Epilogue{.bias = true, .output = Out::kFloat32}});
  }
  for (const auto& impl :
       testing::OfferedConv(Geometry(2, 32, 14, 32, 3, 32), NumericMode::kFp32, false)) {
    cases.push_back({impl.workload, Epilogue{.bias = true}});  // depthwise_conv2d_nchw
  }
  for (int64_t m : {4, 64}) {  // dense small / large batch
    autotvm::DenseParams d;
    d.m = m, d.n = 64, d.k = 128;
    for (const auto& impl : testing::OfferedDense(d, NumericMode::kFp32, false)) {
      cases.push_back({impl.workload, Epilogue{.bias = true}});
    }
  }
  std::set<std::string> refused;
  for (const auto& [w, e] : cases) {
    ASSERT_TRUE(Plan(w, e).ok()) << w.task_name << ": " << Plan(w, e).status();
    Epilogue with = e;
    with.activation = Act::kHardSwish;
    const absl::Status s = Plan(w, with).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << w.task_name;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr(absl::StrCat(w.task_name,
                                       ": takes no hard_swish activation in its "
                                       "epilogue: it runs on the CUDA cores and "
                                       "fuses relu only (supported: clip, silu")));
    refused.insert(w.task_name);
  }
  EXPECT_EQ(refused, (std::set<std::string>{"conv2d_nchw.cuda", "conv2d_nchw_winograd.cuda",
                                            "conv2d_NCHWc_int8.cuda", "depthwise_conv2d_nchw.cuda",
                                            "dense_small_batch.cuda", "dense_large_batch.cuda"}));
}

// One kernel (and cache key) per activation and clip bounds.
TEST(ActivationNames, EachActivationIsItsOwnKernel) {
  const autotvm::Workload w = OfferedConv(Geometry(2, 32, 14, 64, 1), NumericMode::kFp16TensorCores,
                                          true, "conv2d_nhwc_wgmma.cuda");
  const std::vector<Epilogue> epilogues = {
      Epilogue{.bias = true},
      Epilogue{.bias = true, .relu = true},
      kRelu6,
      Epilogue{.bias = true, .activation = Act::kClip, .clip_lo = -1, .clip_hi = 1},
      kSilu,
      kHardSwish};
  std::set<std::string> names;
  for (const Epilogue& e : epilogues) names.insert(NameOf(w, e));
  EXPECT_EQ(names.size(), epilogues.size());
  EXPECT_EQ(NameOf(w, Epilogue{.bias = true}),
            "tunejit::conv2d_wgmma<tunejit::ConvTilePolicy<8, 16, 1, 64, 0>, "
            "tunejit::ConvPipelinePolicy<4, 2, 0, 1>, tunejit::ConvLoadPolicy<64, 0, 0>, "
            "tunejit::ConvOutputPolicy<0, tunejit::Epi<true, false, "
            "tunejit::EpiOut::kAccumulator>, 1, 0>>");
}

TEST(ActivationReference, PlansNameTheActivationAndRefuseInt8Outputs) {
  autotvm::Conv2dParams p = Geometry(1, 32, 8, 64, 3);
  p.layout = "NHWC";
  p.data_dtype = p.kernel_dtype = "float16";
  absl::StatusOr<OpPlan> conv = ReferenceConv2dPlan(p, kRelu6);
  ASSERT_TRUE(conv.ok()) << conv.status();
  EXPECT_EQ(conv->kernels[0].spec.name_expression,
            "tunejit::conv2d_reference<tunejit::f16, 1, true, true, "
            "tunejit::Act<tunejit::ActKind::kClip, 0, 1086324736>>");
  autotvm::DenseParams d;
  d.m = 1, d.n = 64, d.k = 32, d.data_dtype = "float16";
  absl::StatusOr<OpPlan> dense = ReferenceDensePlan(d, kHardSwish);
  ASSERT_TRUE(dense.ok()) << dense.status();
  EXPECT_EQ(dense->kernels[0].spec.name_expression,
            "tunejit::dense_reference<tunejit::f16, 1, "
            "tunejit::Act<tunejit::ActKind::kHardSwish>>");
  Epilogue requantized = kSilu;
  requantized.output = Out::kInt8Requantize;
  EXPECT_EQ(ReferenceConv2dPlan(p, requantized).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ActivationReference, CpuValues) {
  EXPECT_EQ(cpuref::ActivationValue(kRelu6, -2.5f), 0.0f);
  EXPECT_EQ(cpuref::ActivationValue(kRelu6, 3.25f), 3.25f);
  EXPECT_EQ(cpuref::ActivationValue(kRelu6, 7.0f), 6.0f);
  EXPECT_TRUE(std::isnan(cpuref::ActivationValue(kRelu6, std::nanf(""))));
  EXPECT_EQ(cpuref::ActivationValue(kHardSwish, -3.0f), -0.0f);
  EXPECT_EQ(cpuref::ActivationValue(kHardSwish, 1.5f), 1.5f * (1.5f / 6.0f + 0.5f));
  EXPECT_EQ(cpuref::ActivationValue(kHardSwish, 4.0f), 4.0f);
  EXPECT_EQ(cpuref::ActivationValue(kSilu, 0.0f), 0.0f);
  EXPECT_NEAR(cpuref::ActivationValue(kSilu, 2.0f), 2.0 / (1.0 + std::exp(-2.0)), 1e-6);
  EXPECT_EQ(cpuref::ActivationValue(Epilogue{}, -1.0f), -1.0f);
  // EpilogueFloat applies it last: bias 1, relu, then clip [0, 6].
  Epilogue e = kRelu6;
  e.relu = true;
  const std::vector<double> acc = {-4, 2, 9};
  EXPECT_EQ(cpuref::EpilogueFloat(acc, 1, 3, e, {1.0f}, {}), (std::vector<float>{0, 3, 6}));
}

// NVRTC sm_90a builds of each template's new specializations. The PTX shows the activation:
// the clip's bound 6.0 (0f40C00000), silu's expf (ex2.approx), none of them in the kernel
// without an activation.
TEST(ActivationCompile, NewSpecializationsBuildForSm90a) {
  KernelCompiler compiler(nullptr);
  struct Build {
    autotvm::Workload workload;
    Epilogue epilogue;
    const char* ptx_mark;
    autotvm::ConfigEntity config = {};
  };
  const autotvm::Conv2dParams pointwise = Geometry(2, 64, 14, 64, 1);
  const autotvm::ConfigEntity swapped =
      testing::Config({OtherKnob("tile_h", 8), OtherKnob("tile_w", 16), OtherKnob("tile_n", 64),
                       OtherKnob("stages", 4), OtherKnob("consumer_wg", 2),
                       OtherKnob("pingpong", 0), OtherKnob("im2col", 0), OtherKnob("cluster", 1),
                       OtherKnob("halo", 0), OtherKnob("swap_ab", 1), OtherKnob("tile_b", 1)});
  Epilogue residual_relu6 = kRelu6;
  residual_relu6.relu = residual_relu6.residual = true;
  const std::vector<Build> builds = {
      {OfferedConv(pointwise, NumericMode::kFp16TensorCores, true, "conv2d_nhwc_wgmma.cuda"),
       kRelu6, "0f40C00000"},
      {OfferedConv(pointwise, NumericMode::kFp16TensorCores, true, "conv2d_nhwc_wgmma.cuda"), kSilu,
       "ex2.approx", swapped},
      {OfferedConv(pointwise, NumericMode::kFp16TensorCores, false, "conv2d_nhwc_wgmma.cuda"),
       kHardSwish, "div.rn.f32"},
      {OfferedConv(pointwise, NumericMode::kFp16TensorCores, true, "conv2d_nhwc_wgmma.cuda"),
       residual_relu6, "0f40C00000"},
      {OfferedConv(Geometry(2, 96, 14, 96, 3, 96), NumericMode::kFp16TensorCores, true,
                   "depthwise_conv2d_nhwc.cuda"),
       kRelu6, "0f40C00000"},
      {OfferedConv(Geometry(2, 96, 14, 96, 3, 96), NumericMode::kFp16TensorCores, false,
                   "depthwise_conv2d_nhwc.cuda"),
       Epilogue{.bias = true, .activation = Act::kClip, .clip_lo = -0.0f, .clip_hi = 6},
       "0f40C00000"},
      {OfferedConv(Geometry(2, 3, 32, 32, 3, 1, 2), NumericMode::kFp16TensorCores, true,
                   "conv2d_nchw_stem_mma.cuda"),
       kSilu, "ex2.approx"},
      {OfferedDense(8, 1024, 576, NumericMode::kFp16TensorCores, true, "dense_wgmma.cuda"),
       kHardSwish, "div.rn.f32"},
      // GELU's 1 / sqrt(2) as PTX writes the float.
      {OfferedDense(8, 1024, 576, NumericMode::kFp16TensorCores, true, "dense_wgmma.cuda"), kGelu,
       "0f3F3504F3"},
  };
  for (const Build& b : builds) {
    absl::StatusOr<OpPlan> plan =
        Plan(b.workload, b.epilogue, b.config.knobs.empty() ? nullptr : &b.config);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const KernelSpec& spec = plan->kernels[0].spec;
    absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
    ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
    EXPECT_TRUE(absl::StrContains(kernel->program.ptx, b.ptx_mark))
        << spec.name_expression << " lacks " << b.ptx_mark;
    Epilogue none = b.epilogue;
    none.activation = Act::kNone;
    absl::StatusOr<OpPlan> plain =
        Plan(b.workload, none, b.config.knobs.empty() ? nullptr : &b.config);
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<CompiledKernel> without =
        compiler.Compile(plain->kernels[0].spec, GpuArch{9, 0, false});
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_FALSE(absl::StrContains(without->program.ptx, b.ptx_mark))
        << plain->kernels[0].spec.name_expression << " has " << b.ptx_mark;
  }
  // The reference kernels with an activation build too.
  autotvm::Conv2dParams p = Geometry(1, 32, 8, 64, 3);
  p.layout = "NHWC";
  p.data_dtype = p.kernel_dtype = "float16";
  absl::StatusOr<OpPlan> ref = ReferenceConv2dPlan(p, kSilu);
  ASSERT_TRUE(ref.ok()) << ref.status();
  absl::StatusOr<CompiledKernel> ref_kernel =
      compiler.Compile(ref->kernels[0].spec, GpuArch{9, 0, false});
  ASSERT_TRUE(ref_kernel.ok()) << ref_kernel.status();
  EXPECT_TRUE(absl::StrContains(ref_kernel->program.ptx, "ex2.approx"));
}

}  // namespace
}  // namespace tunejit
