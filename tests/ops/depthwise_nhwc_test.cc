// CPU: depthwise_conv2d_nhwc.cuda's workload (NHWC float16 data, [C, KH, KW, 1] float16 kernel),
// its offer, its rules and bad inputs, the plan (grid, block, kernel arguments), the knob space,
// fallback configs for every depthwise conv of the zoo (tests/data/zoo_convs.txt) at batch 1 to
// 256, and NVRTC builds of sampled valid configs with 16-byte loads and stores in the PTX. The GPU
// test is depthwise_nhwc_gpu_test.cc.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "autotvm/config_space.h"
#include "autotvm/dispatch.h"
#include "autotvm/target.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/offers.h"
#include "tests/testing/zoo_convs.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

const DeviceLimits kHopper = DeviceLimits::ForArch(GpuArch{9, 0, true});

// data [n, h, w, c], kernel [c, k, k, multiplier], stride, symmetric pad, dilation.
autotvm::Workload DwWorkload(int64_t n, int64_t h, int64_t w, int64_t c, int64_t k, int pad = 1,
                             int stride = 1, int dilation = 1, const std::string& out = "float16",
                             const std::string& dtype = "float16", int64_t multiplier = 1) {
  return autotvm::Workload{autotvm::kDepthwiseConv2dNhwc,
                           autotvm::Json::array({testing::Tensor({n, h, w, c}, dtype),
                                                 testing::Tensor({c, k, k, multiplier}, dtype),
                                                 {stride, stride},
                                                 {pad, pad, pad, pad},
                                                 {dilation, dilation},
                                                 out})};
}

autotvm::ConfigEntity Tile(int64_t c, int64_t h, int64_t w, int64_t thread_h, int64_t thread_w) {
  return testing::Config({OtherKnob("tile_c", c), OtherKnob("tile_h", h), OtherKnob("tile_w", w),
                          OtherKnob("thread_h", thread_h), OtherKnob("thread_w", thread_w)});
}

const OpTemplate& Op() { return *FindOpTemplate(autotvm::kDepthwiseConv2dNhwc); }

std::string Reason(const absl::Status& s) { return std::string(s.message()); }

// A depthwise conv's geometry as the graph gives it (float32, NCHW terms).
autotvm::Conv2dParams DepthwiseGeometry(int64_t n, int64_t c, int64_t hw, int64_t k, int stride) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = c, p.h = p.w = hw, p.co = c, p.kh = p.kw = k, p.groups = c;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = static_cast<int>(k / 2);
  return p;
}

TEST(DepthwiseNhwcWorkload, OfferedAtFp16AndRoundTrips) {
  const autotvm::Conv2dParams p = DepthwiseGeometry(32, 144, 56, 3, 1);
  OpRequest request;
  request.conv = p;
  request.mode = NumericMode::kFp16TensorCores;
  request.half_output = true;
  const std::vector<OpOffer> offers = OffersFor(request);
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].rank, 0);
  EXPECT_TRUE(offers[0].forms.nhwc);
  EXPECT_FALSE(offers[0].forms.float_nchw_data);
  const autotvm::Workload& w = offers[0].implementation.workload;
  EXPECT_EQ(w.Key(), DwWorkload(32, 56, 56, 144, 3).Key());
  absl::StatusOr<autotvm::Conv2dParams> back = autotvm::ParseConv2dWorkload(w);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout, "NHWC");
  EXPECT_EQ(back->groups, 144);
  EXPECT_EQ(back->ci, 144);
  EXPECT_EQ(back->co, 144);
  EXPECT_TRUE(back->Depthwise());
  EXPECT_EQ(back->out_dtype, "float16");
  EXPECT_TRUE(Op().CanImplement(w).ok()) << Op().CanImplement(w);
  // The logits' float32 output when no conv reads it.
  request.half_output = false;
  EXPECT_EQ(testing::Implementations(request)[0].workload.args.back(), "float32");

  auto offered = [](const autotvm::Conv2dParams& q, NumericMode mode) {
    int n = 0;
    for (const autotvm::Implementation& impl : testing::OfferedConv(q, mode, true)) {
      n += impl.workload.task_name == autotvm::kDepthwiseConv2dNhwc;
    }
    return n;
  };
  // Tails, strides, 7x7 and dilations are taken.
  autotvm::Conv2dParams q = DepthwiseGeometry(1, 12, 15, 3, 2);
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 1);
  q = DepthwiseGeometry(1, 768, 7, 7, 1);
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 1);
  q.dilation_h = q.dilation_w = 2;
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 1);
  // Not: other modes (the int8 network's depthwise convs come down its ladder at fp16), a channel
  // multiplier, grouped or ordinary convs, a dilation whose one-pixel window is past 48 KiB.
  EXPECT_EQ(offered(p, NumericMode::kFp32), 0);
  EXPECT_EQ(offered(p, NumericMode::kInt8TensorCores), 0);
  EXPECT_EQ(offered(p, NumericMode::kInt8Dp4a), 0);
  q = p;
  q.co = 2 * p.ci;
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 0);
  q = p;
  q.groups = 2;
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 0);
  q = p;
  q.groups = 1;
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 0);
  q = DepthwiseGeometry(1, 8, 512, 7, 1);
  q.dilation_h = q.dilation_w = 64;
  q.pad_top = q.pad_left = q.pad_bottom = q.pad_right = 192;
  EXPECT_EQ(offered(q, NumericMode::kFp16TensorCores), 0);
}

TEST(DepthwiseNhwc, PlansTheKernelGridAndArguments) {
  const autotvm::Workload w = DwWorkload(32, 56, 56, 144, 3, 1, 2);  // 28 x 28 out
  absl::StatusOr<OpPlan> plan =
      Op().Specialize(w, Tile(32, 8, 8, 2, 2), kHopper, Epilogue{.bias = true, .relu = true});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->kernels.size(), 1u);
  const PlannedKernel& k = plan->kernels[0];
  EXPECT_EQ(k.spec.source_file, "depthwise_nhwc.cu");
  EXPECT_EQ(k.spec.name_expression,
            "tunejit::depthwise_conv2d_nhwc<tunejit::DepthwiseFilter<3, 3, 2, 2, 1, 1>, "
            "tunejit::DepthwiseTile<32, 8, 8, 2, 2>, tunejit::DepthwiseIo<1, "
            "tunejit::Epi<true, true, tunejit::EpiOut::kAccumulator>, 1>>");
  // 144 channels in 5 blocks of 32, 28 x 28 in 4 x 4 tiles of 8 x 8.
  EXPECT_EQ(k.shape.grid[0], 32u * 16 * 5);
  EXPECT_EQ(k.shape.block[0], 4u * 4 * 4);
  EXPECT_EQ(k.shape.shared_bytes, 0u);  // static shared memory only
  EXPECT_TRUE(k.shape.overlaps_previous);
  ASSERT_EQ(k.args.size(), 5u + 10u);
  EXPECT_EQ(k.args[2].kind, KernelArg::Kind::kInput);  // bias
  std::vector<int64_t> ints;
  for (size_t i = 5; i < k.args.size(); ++i) {
    EXPECT_EQ(k.args[i].kind, KernelArg::Kind::kInt32);
    ints.push_back(k.args[i].index_or_int);
  }
  EXPECT_THAT(ints, ::testing::ElementsAre(144, 56, 56, 28, 28, 1, 1, 5, 4, 16));
  // Requantizing to int8 replaces the float16 output; float32 out with a scale; C in 8s or not.
  plan = Op().Specialize(w, Tile(32, 8, 8, 2, 2), kHopper,
                         {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->kernels[0].spec.name_expression,
              HasSubstr("DepthwiseIo<1, tunejit::Epi<true, true, tunejit::EpiOut::kInt8>, 0>"));
  plan = Op().Specialize(DwWorkload(2, 9, 9, 12, 5, 2, 1, 1, "float32"), Tile(16, 4, 4, 1, 2),
                         kHopper, {.output = Epilogue::Output::kFloat32});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(
      plan->kernels[0].spec.name_expression,
      HasSubstr("DepthwiseIo<0, tunejit::Epi<false, false, tunejit::EpiOut::kFloat32>, 0>"));
}

TEST(DepthwiseNhwc, RejectsBadWorkloadsNamingWhatIsSupported) {
  EXPECT_THAT(Reason(Op().CanImplement(DwWorkload(1, 8, 8, 16, 3, 1, 1, 1, "float16", "float32"))),
              HasSubstr("float32 x float32 -> float16 (expected float16 x float16 -> float16 | "
                        "float32)"));
  EXPECT_THAT(Reason(Op().CanImplement(DwWorkload(1, 8, 8, 16, 3, 1, 1, 1, "int32"))),
              HasSubstr("expected float16 x float16"));
  EXPECT_THAT(
      Reason(Op().CanImplement(DwWorkload(1, 8, 8, 16, 3, 1, 1, 1, "float16", "float16", 2))),
      HasSubstr("channel multiplier 2 (only 1"));
  EXPECT_THAT(Reason(Op().CanImplement(DwWorkload(1, 2, 2, 16, 5, 0))), HasSubstr("output"));
  autotvm::Workload other = DwWorkload(1, 8, 8, 16, 3);
  other.task_name = "depthwise_conv2d_nchw.cuda";
  EXPECT_THAT(Reason(Op().CanImplement(other)), HasSubstr("workload is for"));
  autotvm::Workload mismatched = DwWorkload(1, 8, 8, 16, 3);
  mismatched.args[1][1] = autotvm::Json::array({8, 3, 3, 1});  // 8 filters for 16 channels
  EXPECT_THAT(Reason(Op().CanImplement(mismatched)), HasSubstr("kernel channels"));
  mismatched.args[1][1] = autotvm::Json::array({16, 3, 3});
  EXPECT_THAT(Reason(Op().CanImplement(mismatched)), HasSubstr("4-D"));
}

TEST(DepthwiseNhwc, RejectsConfigsAndEpiloguesWithTheRule) {
  const autotvm::Workload w = DwWorkload(2, 32, 32, 64, 3);
  auto rejected = [&](const autotvm::Workload& wl, const autotvm::ConfigEntity& c) {
    const absl::Status s = Op().Specialize(wl, c, kHopper, {}).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    return Reason(s);
  };
  EXPECT_THAT(rejected(w, Tile(12, 8, 8, 1, 1)), HasSubstr("tile_c 12 (whole 8-channel vectors)"));
  EXPECT_THAT(rejected(w, Tile(32, 8, 8, 1, 3)), HasSubstr("does not divide the block tile 8x8"));
  EXPECT_THAT(rejected(w, Tile(32, 8, 8, 4, 4)), HasSubstr("16 pixels per thread > 8"));
  // Tiles twice the work: channels, rows, columns.
  EXPECT_THAT(rejected(DwWorkload(2, 32, 32, 16, 3), Tile(32, 8, 8, 1, 1)),
              HasSubstr("tile_c 32 for 16 channels"));
  EXPECT_THAT(rejected(DwWorkload(2, 7, 7, 64, 3), Tile(32, 16, 8, 1, 1)),
              HasSubstr("tile_h 16 for 7 output rows"));
  EXPECT_THAT(rejected(DwWorkload(2, 3, 3, 64, 3), Tile(32, 1, 8, 1, 1)),
              HasSubstr("tile_w 8 for 3 output columns"));
  // 8 pixels across a 7x7 filter: 14 input columns a thread.
  EXPECT_THAT(rejected(DwWorkload(2, 32, 32, 64, 7, 3), Tile(32, 8, 8, 1, 8)),
              HasSubstr("registers per thread"));
  // 1024 threads of about 104 registers.
  EXPECT_THAT(rejected(DwWorkload(2, 64, 64, 128, 3), Tile(128, 16, 16, 2, 2)),
              HasSubstr("1024 threads x about 104 registers > regs_per_block 65536"));
  // Stride 2: a 33 x 33 window of 64 channels.
  EXPECT_THAT(rejected(DwWorkload(2, 64, 64, 64, 3, 1, 2), Tile(64, 16, 16, 4, 2)),
              HasSubstr("shared memory 141696 bytes > shared_bytes_per_block 49152"));
  EXPECT_THAT(
      Reason(Op().Specialize(w, testing::Config({OtherKnob("tile_c", 8)}), kHopper, {}).status()),
      HasSubstr("tile_h"));
  // A scaled float32 value cannot go out as float16.
  const absl::Status scaled =
      Op().Specialize(w, Tile(32, 8, 8, 1, 4), kHopper, {.output = Epilogue::Output::kFloat32})
          .status();
  EXPECT_THAT(Reason(scaled), HasSubstr("does not fit a float16 output"));
}

TEST(DepthwiseNhwcSpace, IndexEntityRoundTripAndRules) {
  const autotvm::Workload w = DwWorkload(128, 56, 56, 144, 3);
  absl::StatusOr<autotvm::ConfigSpace> space = BuildConfigSpace(w, *autotvm::ParseTarget("cuda"));
  ASSERT_TRUE(space.ok()) << space.status();
  EXPECT_EQ(space->size(), 5 * 5 * 6 * 3 * 4);
  EXPECT_TRUE(HasConfigSpace(autotvm::kDepthwiseConv2dNhwc));
  int valid = 0;
  for (int64_t i = 0; i < space->size(); ++i) {
    absl::StatusOr<autotvm::ConfigEntity> c = space->Get(i);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(*space->IndexOf(*c), i);
    absl::StatusOr<OpPlan> plan = Op().Specialize(w, *c, kHopper, {});
    if (!plan.ok()) continue;
    ++valid;
    // What every valid config keeps to.
    const int64_t th = *c->Other("thread_h"), tw = *c->Other("thread_w");
    EXPECT_EQ(*c->Other("tile_h") % th, 0);
    EXPECT_EQ(*c->Other("tile_w") % tw, 0);
    EXPECT_LE(th * tw, 8);
    EXPECT_LE(plan->kernels[0].shape.block[0], 1024u);
  }
  EXPECT_GT(valid, 400);
  EXPECT_LT(valid, space->size());
}

// The zoo's depthwise convolutions.
std::vector<autotvm::Conv2dParams> ZooDepthwiseConvs() {
  std::vector<autotvm::Conv2dParams> convs;
  for (const autotvm::Conv2dParams& p : testing::ZooConvs()) {
    if (p.Depthwise()) convs.push_back(p);
  }
  return convs;
}

// Every zoo depthwise conv gets this template at fp16, and its fallback plans at batch 1 to 256
// with every epilogue a network gives it.
TEST(DepthwiseNhwcFallback, ValidForEveryZooDepthwiseConv) {
  const std::vector<autotvm::Conv2dParams> convs = ZooDepthwiseConvs();
  ASSERT_GE(convs.size(), 30u);
  const Epilogue epilogues[] = {
      {},
      {.bias = true, .relu = true},
      {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize}};
  int checked = 0;
  for (const int64_t batch : {1, 32, 128, 256}) {
    for (autotvm::Conv2dParams p : convs) {
      p.n = batch;
      const std::vector<autotvm::Implementation> impls =
          testing::OfferedConv(p, NumericMode::kFp16TensorCores, /*half_output=*/true);
      ASSERT_EQ(impls.size(), 1u);
      ASSERT_EQ(impls[0].workload.task_name, autotvm::kDepthwiseConv2dNhwc);
      absl::StatusOr<autotvm::ConfigEntity> fallback = Op().FallbackConfig(impls[0].workload);
      ASSERT_TRUE(fallback.ok()) << fallback.status();
      for (const Epilogue& e : epilogues) {
        absl::StatusOr<OpPlan> plan = Op().Specialize(impls[0].workload, *fallback, kHopper, e);
        EXPECT_TRUE(plan.ok()) << impls[0].workload.args.dump() << " " << fallback->ToString()
                               << ": " << plan.status();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 3 * static_cast<int>(convs.size()));
  // MobileNetV2's 112 x 112 x 32: 32 channels by 8 x 8 pixels, 4 a thread.
  const autotvm::ConfigEntity mobilenet = *Op().FallbackConfig(DwWorkload(128, 112, 112, 32, 3));
  EXPECT_EQ(mobilenet.ToString(), Tile(32, 8, 8, 1, 4).ToString());
  // Small images, few channels: the tile shrinks to the work.
  EXPECT_EQ(Op().FallbackConfig(DwWorkload(1, 3, 5, 12, 3))->ToString(),
            Tile(16, 4, 8, 1, 4).ToString());
  // A dilation of 8 across a 5x5 filter: 4 x 4 pixels by 16 channels (a 36 x 36 window), 2
  // pixels a thread (10 of the 34 input columns between them read).
  const autotvm::Workload dilated = DwWorkload(1, 80, 80, 64, 5, 16, 1, 8);
  absl::StatusOr<autotvm::ConfigEntity> narrow = Op().FallbackConfig(dilated);
  ASSERT_TRUE(narrow.ok()) << narrow.status();
  EXPECT_EQ(narrow->ToString(), Tile(16, 4, 4, 1, 2).ToString());
}

// A fixed-seed sample of valid configs builds with NVRTC for sm_90 with 16-byte global loads and
// stores (C in 8s), and with element loads for C = 12; every output kind.
TEST(DepthwiseNhwcSpace, SampledValidConfigsCompile) {
  struct Case {
    autotvm::Workload workload;
    Epilogue epilogue;
    bool vector_io;
  };
  const std::vector<Case> cases = {
      {DwWorkload(128, 56, 56, 144, 3), {.bias = true, .relu = true}, true},
      {DwWorkload(128, 56, 56, 144, 5, 2, 2, 1, "float32"), {}, true},
      {DwWorkload(32, 14, 14, 384, 7, 3),
       {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize},
       true},
      {DwWorkload(2, 17, 13, 12, 3, 1, 2, 1, "float32"),
       {.bias = true, .output = Epilogue::Output::kFloat32},
       false},
  };
  KernelCompiler compiler(nullptr);
  for (const Case& c : cases) {
    const std::vector<autotvm::ConfigEntity> configs =
        testing::SampledValidConfigs(Op(), c.workload, kHopper, 2);
    ASSERT_EQ(configs.size(), 2u);
    for (const autotvm::ConfigEntity& config : configs) {
      absl::StatusOr<OpPlan> plan = Op().Specialize(c.workload, config, kHopper, c.epilogue);
      ASSERT_TRUE(plan.ok()) << config.ToString() << ": " << plan.status();
      const KernelSpec& spec = plan->kernels[0].spec;
      absl::StatusOr<CompiledKernel> kernel = compiler.Compile(spec, GpuArch{9, 0, false});
      ASSERT_TRUE(kernel.ok()) << spec.name_expression << ": " << kernel.status();
      const std::string& ptx = kernel->program.ptx;
      EXPECT_EQ(absl::StrContains(ptx, "ld.global.nc.v4.u32"), c.vector_io) << spec.name_expression;
      EXPECT_TRUE(absl::StrContains(ptx, "griddepcontrol.wait")) << spec.name_expression;
      if (c.vector_io && c.epilogue.output != Epilogue::Output::kInt8Requantize) {
        EXPECT_TRUE(absl::StrContains(ptx, "st.global.v4")) << spec.name_expression;
      }
    }
  }
}

}  // namespace
}  // namespace tunejit
