// GPU: batch_matmul.cuda against the CPU batch matmul (ops/cpu_reference.h), outputs poisoned
// first: random valid configs of TVM's space on shapes with broadcast batches and odd sizes, tail
// configs that divide nothing, the fallback, TopHub cuda_v0.10's records on their own shapes, both
// layouts of y, every output kind; and the tuner's GPU reference kernel. Inputs are small integers
// stored as float, so every sum is exact and results compare bit for bit.
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autotvm/log_file.h"
#include "gtest/gtest.h"
#include "ops/batch_matmul.h"
#include "ops/cpu_reference.h"
#include "ops/reference_kernels.h"
#include "ops/templates.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

const OpTemplate& Op() { return *BatchMatmulTemplate(); }

struct Case {
  autotvm::Workload workload;
  autotvm::ConfigEntity config;
  Epilogue epilogue;
  MatmulYLayout layout = MatmulYLayout::kNK;
};

struct Inputs {
  std::vector<float> x, y, y_kn, bias, scale;
  std::vector<double> acc;
};

// y [YB, N, K] -> [YB, K, N].
std::vector<float> TransposeY(const autotvm::BatchMatmulParams& p, const std::vector<float>& y) {
  std::vector<float> t(y.size());
  for (int64_t b = 0; b < p.y_batch; ++b) {
    for (int64_t j = 0; j < p.n; ++j) {
      for (int64_t k = 0; k < p.k; ++k) t[(b * p.k + k) * p.n + j] = y[(b * p.n + j) * p.k + k];
    }
  }
  return t;
}

Inputs MakeInputs(const autotvm::BatchMatmulParams& p, uint32_t seed) {
  Inputs in;
  in.x = testing::RandomIntFloats(p.x_batch * p.m * p.k, 3, seed);
  in.y = testing::RandomIntFloats(p.y_batch * p.n * p.k, 3, seed + 1);
  in.y_kn = TransposeY(p, in.y);
  for (int64_t j = 0; j < p.n; ++j) {
    in.bias.push_back(static_cast<float>(j % 5) - 2.5f);
    in.scale.push_back(j % 2 ? 0.125f : 0.25f);
  }
  in.acc = cpuref::BatchMatmulFloat(p, in.x, in.y);
  return in;
}

// Compiles every plan at once, then runs and checks each case.
void CheckCases(testing::GpuHarness& harness, const std::vector<Case>& cases) {
  std::vector<OpPlan> plans;
  for (const Case& c : cases) {
    absl::StatusOr<OpPlan> plan =
        SpecializeBatchMatmul(c.workload, c.config, harness.limits(), c.epilogue, c.layout);
    ASSERT_TRUE(plan.ok()) << c.config.ToString() << ": " << plan.status();
    plans.push_back(*plan);
  }
  ASSERT_TRUE(harness.Precompile(plans).ok());
  std::map<std::string, Inputs> inputs;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const autotvm::BatchMatmulParams p = *autotvm::ParseBatchMatmulWorkload(c.workload);
    const std::string key = c.workload.args.dump();
    if (!inputs.count(key)) inputs[key] = MakeInputs(p, 7 + inputs.size());
    const Inputs& in = inputs[key];
    const bool int8_out = c.epilogue.output == Epilogue::Output::kInt8Requantize;
    const std::vector<float>& y = c.layout == MatmulYLayout::kKN ? in.y_kn : in.y;
    absl::StatusOr<std::vector<std::vector<uint8_t>>> out =
        harness.Run(plans[i],
                    {testing::Bytes(in.x), testing::Bytes(y), testing::Bytes(in.bias),
                     testing::Bytes(in.scale)},
                    {in.acc.size() * (int8_out ? 1 : 4)});
    SCOPED_TRACE(absl::StrCat(key, " ", c.config.ToString(), " epilogue ", EpilogueCode(c.epilogue),
                              " y_kn ", c.layout == MatmulYLayout::kKN));
    ASSERT_TRUE(out.ok()) << out.status();
    if (int8_out) {
      EXPECT_EQ(testing::FromBytes<int8_t>((*out)[0]),
                cpuref::EpilogueInt8(in.acc, p.n, 1, c.epilogue, in.bias, in.scale));
    } else {
      EXPECT_EQ(testing::FromBytes<float>((*out)[0]),
                cpuref::EpilogueFloat(in.acc, p.n, 1, c.epilogue, in.bias, in.scale));
    }
  }
}

autotvm::ConfigEntity Tile(std::vector<int64_t> y, std::vector<int64_t> x, std::vector<int64_t> k,
                           int64_t unroll) {
  return testing::Config({SplitKnob("tile_y", y), SplitKnob("tile_x", x), SplitKnob("tile_k", k),
                          OtherKnob("auto_unroll_max_step", unroll),
                          OtherKnob("unroll_explicit", 0)});
}

const std::vector<autotvm::BatchMatmulParams> kShapes = {
    {.x_batch = 12, .y_batch = 12, .m = 128, .n = 64, .k = 64},  // BERT-base attention, 128 tokens
    {.x_batch = 1, .y_batch = 3, .m = 100, .n = 52, .k = 37},    // x broadcast, odd sizes
    {.x_batch = 4, .y_batch = 1, .m = 33, .n = 133, .k = 20},    // y broadcast (a weight)
    {.x_batch = 1, .y_batch = 1, .m = 1, .n = 7, .k = 768},      // one row
};

TEST(BatchMatmulGpu, RandomConfigsFallbackAndTails) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  std::mt19937 rng(43);
  const int64_t kUnrolls[] = {8, 16, 32, 64};
  std::vector<Case> cases;
  for (const autotvm::BatchMatmulParams& p : kShapes) {
    const autotvm::Workload w = autotvm::MakeBatchMatmulWorkload(p);
    int valid = 0;
    for (int attempt = 0; attempt < 500 && valid < 4; ++attempt) {
      const autotvm::ConfigEntity c =
          Tile(testing::RandomSplit(p.m, 3, rng), testing::RandomSplit(p.n, 3, rng),
               testing::RandomSplit(p.k, 2, rng), kUnrolls[rng() % 4]);
      if (!Op().Specialize(w, c, harness->limits(), {}).ok()) continue;
      const MatmulYLayout layout = valid % 2 ? MatmulYLayout::kKN : MatmulYLayout::kNK;
      cases.push_back({w, c, Epilogue{}, layout});
      ++valid;
    }
    EXPECT_EQ(valid, 4) << w.args.dump();
    cases.push_back({w, *Op().FallbackConfig(w), Epilogue{}});
    // Tails: splits that divide none of M, N, K.
    for (MatmulYLayout layout : {MatmulYLayout::kNK, MatmulYLayout::kKN}) {
      cases.push_back({w, Tile({-1, 4, 3}, {-1, 8, 3}, {-1, 7}, 64), Epilogue{}, layout});
    }
  }
  EXPECT_GE(cases.size(), 28u);
  CheckCases(*harness, cases);
}

TEST(BatchMatmulGpu, EpilogueVariants) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  using Out = Epilogue::Output;
  std::vector<Case> cases;
  for (const autotvm::BatchMatmulParams& p : {kShapes[0], kShapes[2]}) {
    const autotvm::Workload w = autotvm::MakeBatchMatmulWorkload(p);
    const autotvm::ConfigEntity c = Tile({-1, 8, 2}, {-1, 8, 2}, {-1, 4}, 16);
    for (const Epilogue& e :
         {Epilogue{true, true, Out::kAccumulator}, Epilogue{true, false, Out::kFloat32},
          Epilogue{true, true, Out::kInt8Requantize},
          Epilogue{false, false, Out::kInt8Requantize}}) {
      cases.push_back({w, c, e, MatmulYLayout::kNK});
      cases.push_back({w, c, e, MatmulYLayout::kKN});
    }
  }
  CheckCases(*harness, cases);
}

// TopHub's records on their own shapes (the two largest, 9216 x 128 x 128 and 9216 x 133 x 133,
// left out to keep the CPU reference quick).
TEST(BatchMatmulGpu, TopHubRecords) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  autotvm::LogContents log;
  ASSERT_TRUE(
      autotvm::LoadLogFile(testing::RepoTestData("autotvm/tophub_v0.10_batch_matmul.log"), {}, &log)
          .ok());
  std::vector<Case> cases;
  for (const autotvm::LoadedRecord& r : log.records) {
    const autotvm::BatchMatmulParams p = *autotvm::ParseBatchMatmulWorkload(r.record.workload);
    if (p.m * p.n * p.k > (int64_t{1} << 27)) continue;
    cases.push_back({r.record.workload, r.record.config, Epilogue{}});
  }
  EXPECT_EQ(cases.size(), 16u);
  CheckCases(*harness, cases);
}

TEST(BatchMatmulGpu, ReferenceKernel) {
  TUNEJIT_REQUIRE_GPU();
  std::unique_ptr<testing::GpuHarness> harness = testing::MakeHarness();
  ASSERT_NE(harness, nullptr);
  for (const autotvm::BatchMatmulParams& p : kShapes) {
    const Epilogue e{true, true, Epilogue::Output::kAccumulator};
    const Inputs in = MakeInputs(p, 3);
    absl::StatusOr<OpPlan> plan = ReferenceBatchMatmulPlan(p, e);
    ASSERT_TRUE(plan.ok()) << plan.status();
    absl::StatusOr<std::vector<std::vector<uint8_t>>> out =
        harness->Run(*plan,
                     {testing::Bytes(in.x), testing::Bytes(in.y), testing::Bytes(in.bias),
                      testing::Bytes(in.scale)},
                     {in.acc.size() * 4});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(testing::FromBytes<float>((*out)[0]),
              cpuref::EpilogueFloat(in.acc, p.n, 1, e, in.bias, in.scale));
  }
}

}  // namespace
}  // namespace tunejit
