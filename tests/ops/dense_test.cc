// GPU: dense_small_batch.cuda and dense_large_batch.cuda against the CPU reference, on random
// configs of TVM's space (VGG-16 classifier shapes at small batch, odd sizes), tail configs, the
// fallbacks and the fused epilogue variants. Also the GPU reference kernel (reference.cu).
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "ops/reference_kernels.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using testing::DenseWorkload;

struct DenseCase {
  const OpTemplate* op;
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  bool exact = false;
};

struct Shape {
  int64_t m, n, k;
};

const std::vector<Shape> kShapes = {
    {16, 1000, 4096}, {3, 100, 512}, {32, 37, 1000}, {1, 64, 25}, {50, 128, 96}};

struct DenseInputs {
  std::vector<float> a, w, bias, scale;
  std::vector<double> acc;
};

DenseInputs MakeInputs(const Shape& s, bool exact, uint32_t seed) {
  DenseInputs in;
  if (exact) {
    in.a = testing::RandomIntFloats(s.m * s.k, 3, seed);
    in.w = testing::RandomIntFloats(s.n * s.k, 3, seed + 1);
    for (int64_t j = 0; j < s.n; ++j) {
      in.bias.push_back(static_cast<float>(j % 5) - 2.5f);
      in.scale.push_back(j % 2 ? 0.125f : 0.25f);
    }
  } else {
    in.a = testing::RandomFloats(s.m * s.k, seed);
    in.w = testing::RandomFloats(s.n * s.k, seed + 1);
    in.bias = testing::RandomFloats(s.n, seed + 2);
    in.scale = testing::RandomFloats(s.n, seed + 3);
  }
  in.acc = cpuref::DenseFloat(s.m, s.n, s.k, in.a, in.w);
  return in;
}

// Compiles all plans at once, then runs and checks each case.
void CheckDenseCases(testing::GpuHarness& harness, const std::vector<DenseCase>& cases) {
  std::vector<OpPlan> plans;
  for (const DenseCase& c : cases) {
    auto plan = c.op->Specialize(c.workload, c.config, harness.limits(), c.epilogue);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*plan);
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  std::map<std::string, DenseInputs> inputs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const DenseCase& c = cases[i];
    const autotvm::DenseParams p = *autotvm::ParseDenseWorkload(c.workload);
    const Shape s{p.m, p.n, p.k};
    const std::string key = absl::StrCat(p.m, "x", p.n, "x", p.k, c.exact ? "e" : "r");
    if (!inputs.count(key)) inputs[key] = MakeInputs(s, c.exact, 5 + inputs.size());
    const DenseInputs& in = inputs[key];
    const bool int8_out = c.epilogue.output == Epilogue::Output::kInt8Requantize;
    auto out = harness.Run(plans[i],
                           {testing::Bytes(in.a), testing::Bytes(in.w), testing::Bytes(in.bias),
                            testing::Bytes(in.scale)},
                           {in.acc.size() * (int8_out ? 1 : 4)});
    SCOPED_TRACE(absl::StrCat(std::string(c.op->task_name()), " ", key, " ", c.config.ToString(),
                              " epilogue ", EpilogueCode(c.epilogue)));
    ASSERT_TRUE(out.ok()) << out.status();
    if (int8_out) {
      EXPECT_EQ(testing::FromBytes<int8_t>((*out)[0]),
                cpuref::EpilogueInt8(in.acc, p.n, 1, c.epilogue, in.bias, in.scale));
    } else if (c.exact) {
      EXPECT_EQ(testing::FromBytes<float>((*out)[0]),
                cpuref::EpilogueFloat(in.acc, p.n, 1, c.epilogue, in.bias, in.scale));
    } else {
      EXPECT_LT(cpuref::RelativeError(
                    testing::FromBytes<float>((*out)[0]),
                    cpuref::EpilogueFloat(in.acc, p.n, 1, c.epilogue, in.bias, in.scale)),
                1e-5);
    }
  }
}

TEST(DenseGpu, SmallBatchRandomConfigs) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  const OpTemplate* op = DenseSmallBatchTemplate();
  std::mt19937 rng(11);
  std::vector<DenseCase> cases;
  for (const Shape& s : kShapes) {
    autotvm::Workload w = DenseWorkload("dense_small_batch.cuda", s.m, s.n, s.k);
    int valid = 0;
    for (int attempt = 0; attempt < 100 && valid < 4; ++attempt) {
      autotvm::ConfigEntity c =
          testing::Config({SplitKnob("tile_k", testing::RandomSplit(s.k, 2, rng))});
      if (!op->Specialize(w, c, (*harness)->limits(), {}).ok()) continue;
      cases.push_back({op, w, c, Epilogue{}});
      ++valid;
    }
    cases.push_back({op, w, *op->FallbackConfig(w), Epilogue{}});
    // A thread count that divides nothing (guards) and one past K.
    cases.push_back({op, w, testing::Config({SplitKnob("tile_k", {-1, 48})}), Epilogue{}});
  }
  EXPECT_GE(cases.size(), 25u);
  CheckDenseCases(**harness, cases);
}

autotvm::ConfigEntity LargeConfig(std::vector<int64_t> x, std::vector<int64_t> y,
                                  std::vector<int64_t> k) {
  return testing::Config({SplitKnob("tile_x", x), SplitKnob("tile_y", y), SplitKnob("tile_k", k)});
}

TEST(DenseGpu, LargeBatchRandomConfigs) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  const OpTemplate* op = DenseLargeBatchTemplate();
  std::mt19937 rng(12);
  std::vector<DenseCase> cases;
  for (const Shape& s : kShapes) {
    autotvm::Workload w = DenseWorkload("dense_large_batch.cuda", s.m, s.n, s.k);
    int valid = 0;
    for (int attempt = 0; attempt < 3000 && valid < 5; ++attempt) {
      autotvm::ConfigEntity c =
          LargeConfig(testing::RandomSplit(s.m, 4, rng), testing::RandomSplit(s.n, 4, rng),
                      testing::RandomSplit(s.k, 3, rng));
      if (!op->Specialize(w, c, (*harness)->limits(), {}).ok()) continue;  // mostly Tx != Ty
      cases.push_back({op, w, c, Epilogue{}});
      ++valid;
    }
    EXPECT_EQ(valid, 5) << s.m << "x" << s.n << "x" << s.k;
    cases.push_back({op, w, *op->FallbackConfig(w), Epilogue{}});
    // Tails everywhere: 3 does not divide the shapes, KC = 12 is not a multiple of 4... of K.
    cases.push_back({op, w, LargeConfig({-1, 1, 4, 3}, {-1, 3, 4, 1}, {-1, 3, 4}), Epilogue{}});
  }
  // The seed config on its shape at batch 16.
  cases.push_back({op, DenseWorkload("dense_large_batch.cuda", 16, 1000, 4096),
                   LargeConfig({-1, 2, 4, 1}, {-1, 2, 4, 1}, {-1, 8, 2}), Epilogue{}});
  EXPECT_GE(cases.size(), 30u);
  CheckDenseCases(**harness, cases);
}

TEST(DenseGpu, EpilogueVariants) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  using Out = Epilogue::Output;
  std::vector<DenseCase> cases;
  for (const Shape& s : {kShapes[1], kShapes[2]}) {
    autotvm::Workload small = DenseWorkload("dense_small_batch.cuda", s.m, s.n, s.k);
    autotvm::Workload large = DenseWorkload("dense_large_batch.cuda", s.m, s.n, s.k);
    autotvm::ConfigEntity sc = testing::Config({SplitKnob("tile_k", {-1, 64})});
    autotvm::ConfigEntity lc = LargeConfig({-1, 2, 4, 1}, {-1, 2, 4, 2}, {-1, 4, 2});
    for (const Epilogue& e :
         {Epilogue{true, true, Out::kAccumulator}, Epilogue{true, false, Out::kFloat32}}) {
      cases.push_back({DenseSmallBatchTemplate(), small, sc, e});
      cases.push_back({DenseLargeBatchTemplate(), large, lc, e});
    }
    for (const Epilogue& e : {Epilogue{true, true, Out::kInt8Requantize},
                              Epilogue{false, false, Out::kInt8Requantize}}) {
      cases.push_back({DenseSmallBatchTemplate(), small, sc, e, true});
      cases.push_back({DenseLargeBatchTemplate(), large, lc, e, true});
    }
  }
  CheckDenseCases(**harness, cases);
}

TEST(ReferenceKernelsGpu, MatchCpuReference) {
  TUNEJIT_REQUIRE_GPU();
  auto harness = testing::GpuHarness::Create();
  ASSERT_TRUE(harness.ok()) << harness.status();
  // Dense, float, with bias + relu.
  autotvm::DenseParams dp;
  dp.m = 5, dp.n = 33, dp.k = 70;
  Epilogue e{true, true, Epilogue::Output::kAccumulator};
  DenseInputs in = MakeInputs({dp.m, dp.n, dp.k}, false, 3);
  auto dense_plan = ReferenceDensePlan(dp, e);
  ASSERT_TRUE(dense_plan.ok()) << dense_plan.status();
  auto out = (*harness)->Run(*dense_plan,
                             {testing::Bytes(in.a), testing::Bytes(in.w), testing::Bytes(in.bias),
                              testing::Bytes(in.scale)},
                             {in.acc.size() * 4});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(cpuref::RelativeError(testing::FromBytes<float>((*out)[0]),
                                  cpuref::EpilogueFloat(in.acc, dp.n, 1, e, in.bias, in.scale)),
            1e-6);
  // Grouped int8 conv, int32 accumulator output: exact.
  autotvm::Conv2dParams p;
  p.n = 2, p.ci = 6, p.h = 9, p.w = 8, p.co = 9, p.kh = 3, p.kw = 2, p.groups = 3;
  p.stride_h = 2, p.pad_top = 1, p.pad_bottom = 1, p.pad_left = 1, p.dilation_w = 2;
  p.data_dtype = p.kernel_dtype = "int8";
  p.out_dtype = "int32";
  std::mt19937 rng(9);
  std::vector<int8_t> data(p.n * p.ci * p.h * p.w), weight(p.co * 2 * p.kh * p.kw);
  for (int8_t& v : data) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  for (int8_t& v : weight) v = static_cast<int8_t>(static_cast<int>(rng() % 256) - 128);
  auto conv_plan = ReferenceConv2dPlan(p, Epilogue{.relu = true});
  ASSERT_TRUE(conv_plan.ok()) << conv_plan.status();
  std::vector<int32_t> want =
      cpuref::EpilogueInt32(cpuref::Conv2dInt8(p, data, weight), Epilogue{.relu = true});
  auto conv_out = (*harness)->Run(*conv_plan, {testing::Bytes(data), testing::Bytes(weight)},
                                  {want.size() * 4});
  ASSERT_TRUE(conv_out.ok()) << conv_out.status();
  EXPECT_EQ(testing::FromBytes<int32_t>((*conv_out)[0]), want);
}

}  // namespace
}  // namespace tunejit
