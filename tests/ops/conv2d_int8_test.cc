// conv2d_NCHWc_int8.cuda on the CPU (label cpu): the seed log's records (specialize, launch shapes
// of spec 6.4, NVRTC compile for sm_90), the knobs' effect on the plan, validity rejections with
// reasons and the fallback config.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/plan_util.h"
#include "ops/split.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

constexpr char kTask[] = "conv2d_NCHWc_int8.cuda";

autotvm::Conv2dParams Conv(int64_t n, int64_t ci, int64_t h, int64_t w, int64_t co, int kernel = 3,
                           int stride = 1, int pad = 1) {
  autotvm::Conv2dParams p;
  p.n = n, p.ci = ci, p.h = h, p.w = w, p.co = co, p.kh = kernel, p.kw = kernel;
  p.stride_h = p.stride_w = stride;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = pad;
  p.data_dtype = p.kernel_dtype = "int8";
  p.out_dtype = "int32";
  return p;
}

struct Knobs {
  std::vector<int64_t> n{-1, 1, 1, 1}, f{-1, 1, 4, 1}, y{-1, 1, 2, 1}, x{-1, 1, 7, 1};
  int64_t fuse_yx = 0, rc = 1, ry = 3, rx = 1;
  std::vector<int64_t> perm{0, 1, 2};
  int64_t aa_db = 0, ww_db = 0, unroll = 0;
};

autotvm::ConfigEntity Config(const Knobs& k) {
  autotvm::ConfigEntity c;
  c.knobs = {SplitKnob("tile_n", k.n),
             SplitKnob("tile_f", k.f),
             SplitKnob("tile_y", k.y),
             SplitKnob("tile_x", k.x),
             OtherKnob("fuse_yx", k.fuse_yx),
             SplitKnob("tile_rc", {-1, k.rc}),
             SplitKnob("tile_ry", {-1, k.ry}),
             SplitKnob("tile_rx", {-1, k.rx}),
             autotvm::Knob{"reorder_inner", "re", autotvm::Json(k.perm)},
             OtherKnob("AA_double_buffer", k.aa_db),
             OtherKnob("WW_double_buffer", k.ww_db),
             OtherKnob("auto_unroll_max_step", k.unroll)};
  return c;
}

absl::StatusOr<OpPlan> Plan(const autotvm::Conv2dParams& p, const autotvm::ConfigEntity& c,
                            Epilogue e = {}) {
  return Conv2dNchwcInt8Template()->Specialize(autotvm::MakeConv2dWorkload(kTask, p), c,
                                               DeviceLimits::ForArch(GpuArch{9, 0, false}), e);
}

const PlannedKernel& ConvKernel(const OpPlan& plan) { return plan.kernels.at(2); }

TEST(Conv2dInt8Template, IsRegistered) {
  EXPECT_EQ(FindOpTemplate(kTask), Conv2dNchwcInt8Template());
}

TEST(Conv2dInt8Template, SeedLaunchShapesFollowSpec64) {
  const std::vector<testing::LogRecord> records =
      testing::ReadLogRecords(testing::RepoData("seed-vgg16-v100.log"), {kTask});
  ASSERT_EQ(records.size(), 6u);
  for (const testing::LogRecord& r : records) {
    absl::StatusOr<OpPlan> plan = Conv2dNchwcInt8Template()->Specialize(
        r.workload, r.config, DeviceLimits::ForArch(GpuArch{9, 0, false}), Epilogue{});
    ASSERT_TRUE(plan.ok()) << plan.status() << " " << r.config.ToString();
    ASSERT_EQ(plan->kernels.size(), 3u);
    EXPECT_EQ(plan->kernels[0].phase, PlannedKernel::Phase::kPrepare);  // weight packing
    EXPECT_EQ(plan->kernels[1].phase, PlannedKernel::Phase::kRun);      // data packing
    EXPECT_EQ(plan->kernels[2].phase, PlannedKernel::Phase::kRun);
    EXPECT_EQ(plan->workspace_persistent, (std::vector<bool>{true, false}));
    absl::StatusOr<autotvm::Conv2dParams> p = autotvm::ParseConv2dWorkload(r.workload);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(plan->workspace_bytes[0], p->co * p->ci * p->kh * p->kw);
    EXPECT_EQ(plan->workspace_bytes[1], p->n * p->ci * p->h * p->w);
    auto block = [&](const char* name) {
      std::vector<int64_t> s = *r.config.Split(name);
      return s[1] * s[2] * s[3];
    };
    auto threads = [&](const char* name) { return (*r.config.Split(name))[2]; };
    const LaunchShape& s = ConvKernel(*plan).shape;
    EXPECT_EQ(s.grid[0], (p->OutH() / block("tile_y")) * (p->OutW() / block("tile_x")));
    EXPECT_EQ(s.grid[1], p->co / 4 / block("tile_f"));
    EXPECT_EQ(s.grid[2], p->n / block("tile_n"));
    if (*r.config.Other("fuse_yx") == 1) {
      EXPECT_EQ(s.block[0], threads("tile_y") * threads("tile_x"));
      EXPECT_EQ(s.block[1], threads("tile_f"));
      EXPECT_EQ(s.block[2], threads("tile_n"));
    } else {
      EXPECT_EQ(s.block[0], threads("tile_x"));
      EXPECT_EQ(s.block[1], threads("tile_y"));
      EXPECT_EQ(s.block[2], threads("tile_n") * threads("tile_f"));
    }
  }
  // The seed the spec spells out (index 13276589889).
  absl::StatusOr<OpPlan> seed = Conv2dNchwcInt8Template()->Specialize(
      records[0].workload, records[0].config, DeviceLimits::ForArch(GpuArch{9, 0, false}), {});
  ASSERT_TRUE(seed.ok());
  EXPECT_EQ(ConvKernel(*seed).shape, (LaunchShape{{7, 16, 32}, {14, 4, 2}, 0}));
  EXPECT_THAT(ConvKernel(*seed).spec.name_expression,
              HasSubstr("conv2d_nchwc_int8<2, 2, 1, 1, 4, 2, 2, 1, 1, 1, 14, 1, 1, 1, 3, 1, 1, 0, "
                        "2, 1, 0, 1500, 3, 3, 1, 1, 1, 1, 0>"));
}

TEST(Conv2dInt8Template, SeedKernelsCompileForSm90) {
  const std::vector<testing::LogRecord> records =
      testing::ReadLogRecords(testing::RepoData("seed-vgg16-v100.log"), {kTask});
  ASSERT_FALSE(records.empty());
  std::set<std::string> seen;
  KernelCompiler compiler(nullptr);
  double total = 0, worst = 0;
  for (const testing::LogRecord& r : records) {
    absl::StatusOr<OpPlan> plan = Conv2dNchwcInt8Template()->Specialize(
        r.workload, r.config, DeviceLimits::ForArch(GpuArch{9, 0, false}),
        Epilogue{.relu = true, .output = Epilogue::Output::kInt8Requantize});
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (const PlannedKernel& k : plan->kernels) {
      if (!seen.insert(k.spec.name_expression).second) continue;
      absl::StatusOr<CompiledKernel> c = compiler.Compile(k.spec, GpuArch{9, 0, false});
      ASSERT_TRUE(c.ok()) << c.status();
      EXPECT_FALSE(c->program.cubin.empty());
      total += c->compile_seconds;
      worst = std::max(worst, c->compile_seconds);
    }
  }
  std::printf("NCHWc int8: %zu distinct kernels, NVRTC total %.2f s, worst %.2f s\n", seen.size(),
              total, worst);
}

TEST(Conv2dInt8Template, KnobsReachTheKernel) {
  const autotvm::Conv2dParams p = Conv(2, 16, 14, 14, 32, 3, 2, 1);  // OH = OW = 7
  Knobs k;
  k.perm = {2, 0, 1};
  k.aa_db = 1;
  k.unroll = 512;
  absl::StatusOr<OpPlan> plan = Plan(p, Config(k));
  ASSERT_TRUE(plan.ok()) << plan.status();
  // grid x = ceil(7/2) * ceil(7/7) = 4 (a tail in y), y = 8/4, z = 2; block (7, 2, 4).
  EXPECT_EQ(ConvKernel(*plan).shape, (LaunchShape{{4, 2, 2}, {7, 2, 4}, 0}));
  EXPECT_THAT(ConvKernel(*plan).spec.name_expression,
              HasSubstr("<1, 1, 1, 1, 4, 1, 1, 2, 1, 1, 7, 1, 0, 1, 3, 1, 2, 0, 1, 1, 0, 512, 3, "
                        "3, 2, 2, 1, 1, 0>"));
  k.fuse_yx = 1;
  plan = Plan(p, Config(k));
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(ConvKernel(*plan).shape, (LaunchShape{{4, 2, 2}, {14, 4, 1}, 0}));
  // An NCHW4c (altered) workload with the same shapes gives the same kernels.
  autotvm::Conv2dParams packed = p;
  packed.layout = "NCHW4c";
  absl::StatusOr<OpPlan> alt = Plan(packed, Config(k));
  ASSERT_TRUE(alt.ok()) << alt.status();
  EXPECT_EQ(ConvKernel(*alt).spec, ConvKernel(*plan).spec);
}

TEST(Conv2dInt8Template, RejectsWithReasons) {
  const OpTemplate* op = Conv2dNchwcInt8Template();
  absl::Status c6 = op->CanImplement(autotvm::MakeConv2dWorkload(kTask, Conv(1, 6, 8, 8, 8)));
  EXPECT_EQ(c6.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c6.message(), HasSubstr("multiples of 4"));
  EXPECT_FALSE(op->CanImplement(autotvm::MakeConv2dWorkload(kTask, Conv(1, 8, 8, 8, 10))).ok());
  autotvm::Conv2dParams f32 = Conv(1, 8, 8, 8, 8);
  f32.data_dtype = f32.kernel_dtype = f32.out_dtype = "float32";
  EXPECT_EQ(op->CanImplement(autotvm::MakeConv2dWorkload(kTask, f32)).code(),
            absl::StatusCode::kUnimplemented);

  const autotvm::Conv2dParams p = Conv(8, 64, 28, 28, 128);
  auto message = [&](const Knobs& k, Epilogue e = {}) {
    absl::StatusOr<OpPlan> plan = Plan(p, Config(k), e);
    EXPECT_FALSE(plan.ok());
    return plan.ok() ? std::string() : std::string(plan.status().message());
  };
  Knobs threads;
  threads.f = {-1, 1, 32, 1};
  threads.y = {-1, 1, 4, 1};
  threads.x = {-1, 1, 28, 1};
  EXPECT_THAT(message(threads), HasSubstr("threads per block"));
  Knobs zdim;  // fuse_yx = 0: block z = TN * TF = 128 > 64
  zdim.n = {-1, 1, 8, 1};
  zdim.f = {-1, 1, 16, 1};
  zdim.x = {-1, 1, 1, 1};
  zdim.y = {-1, 1, 1, 1};
  EXPECT_THAT(message(zdim), HasSubstr("block dim z"));
  Knobs smem;
  smem.n = {-1, 8, 1, 1};
  smem.rc = 16;
  smem.y = {-1, 1, 2, 4};  // AA = 8 images * 16 chunks * 10 rows * 14 cols * 4 B = 70 KiB
  smem.x = {-1, 1, 14, 1};
  EXPECT_THAT(message(smem), HasSubstr("shared memory"));
  Knobs acc;
  acc.n = {-1, 4, 1, 2};
  acc.f = {-1, 2, 2, 2};
  acc.y = {-1, 1, 1, 4};  // (4*2) * (2*2) * 4 * 1 * 4 = 512
  EXPECT_THAT(message(acc), HasSubstr("accumulators"));
  Knobs perm;
  perm.perm = {0, 0, 1};
  EXPECT_THAT(message(perm), HasSubstr("permutation"));
  Knobs flag;
  flag.aa_db = 2;
  EXPECT_THAT(message(flag), HasSubstr("AA_double_buffer"));
  EXPECT_THAT(message(Knobs{}, Epilogue{.bias = true}), HasSubstr("bias"));
  EXPECT_TRUE(Plan(p, Config(Knobs{})).ok());
}

TEST(Conv2dInt8Template, FallbackIsValidAndUsesManyThreads) {
  for (const autotvm::Conv2dParams& p :
       {Conv(1, 4, 5, 5, 4), Conv(3, 12, 7, 7, 20), Conv(2, 36, 28, 28, 44, 3, 2, 1),
        Conv(128, 512, 14, 14, 512), Conv(1, 16, 15, 15, 12, 1, 1, 0),
        Conv(1, 8, 9, 11, 8, 7, 2, 3)}) {
    absl::StatusOr<autotvm::ConfigEntity> c =
        Conv2dNchwcInt8Template()->FallbackConfig(autotvm::MakeConv2dWorkload(kTask, p));
    ASSERT_TRUE(c.ok()) << c.status();
    absl::StatusOr<OpPlan> plan = Plan(p, *c);
    ASSERT_TRUE(plan.ok()) << plan.status() << " " << c->ToString();
    if (p.co >= 16 && p.OutW() >= 7) {
      EXPECT_GE(ConvKernel(*plan).shape.threads_per_block(), 32u) << c->ToString();
    }
  }
}

}  // namespace
}  // namespace tunejit
