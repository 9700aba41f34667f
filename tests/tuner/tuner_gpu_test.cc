// The in-process tuner on a real GPU: tune small dense_large_batch and conv2d_nchw tasks, and on
// Hopper the tensor-core ones (dense_wgmma, conv2d_nhwc_wgmma: NHWC fp16, and int8 measured with
// its requantize epilogue), with random search; every error-free float record's config, re-run
// independently (other inputs, the CPU reference), must be correct; a planted wrong answer must be
// recorded as error 5.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "cache/kernel_cache.h"
#include "gtest/gtest.h"
#include "ops/cpu_reference.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/gpu_test.h"
#include "tests/testing/offers.h"
#include "tuner/measure.h"
#include "tuner/search.h"
#include "tuner/tune_task.h"

namespace tunejit {
namespace {

using testing::Bytes;
using testing::FromBytes;

// [N, A, B, C] <-> [N, C, A, B] (NHWC <-> NCHW, OHWI <-> OIHW): the CPU reference is NCHW.
std::vector<float> ChannelsFirst(const std::vector<float>& v, int64_t n, int64_t a, int64_t b,
                                 int64_t c) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < a * b; ++y)
      for (int64_t k = 0; k < c; ++k) out[(i * c + k) * a * b + y] = v[(i * a * b + y) * c + k];
  return out;
}
std::vector<float> ChannelsLast(const std::vector<float>& v, int64_t n, int64_t c, int64_t a,
                                int64_t b) {
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < c; ++k)
      for (int64_t y = 0; y < a * b; ++y) out[(i * a * b + y) * c + k] = v[(i * c + k) * a * b + y];
  return out;
}

// The CPU reference output (default epilogue) of a float conv (NCHW or the wgmma template's NHWC)
// or dense workload.
std::vector<float> CpuReference(const autotvm::Workload& w, const std::vector<float>& data,
                                const std::vector<float>& weight) {
  if (absl::StatusOr<autotvm::Conv2dParams> c = autotvm::ParseConv2dWorkload(w); c.ok()) {
    if (c->layout != "NHWC") {
      return cpuref::EpilogueFloat(cpuref::Conv2dFloat(*c, data, weight), c->co,
                                   c->OutH() * c->OutW(), Epilogue{}, {}, {});
    }
    const std::vector<float> out = cpuref::EpilogueFloat(
        cpuref::Conv2dFloat(*c, ChannelsFirst(data, c->n, c->h, c->w, c->ci),
                            ChannelsFirst(weight, c->co, c->kh, c->kw, c->ci)),
        c->co, c->OutH() * c->OutW(), Epilogue{}, {}, {});
    return ChannelsLast(out, c->n, c->co, c->OutH(), c->OutW());
  }
  absl::StatusOr<autotvm::DenseParams> d = autotvm::ParseDenseWorkload(w);
  EXPECT_TRUE(d.ok());
  return cpuref::EpilogueFloat(cpuref::DenseFloat(d->m, d->n, d->k, data, weight), d->n, 1,
                               Epilogue{}, {}, {});
}

bool HalfData(const autotvm::Workload& w) { return w.args[0][2] == "float16"; }

// Inputs for a re-run: fp16 data takes multiples of 1/4 (exact as halves, and the fp32 sums of
// their products are exact too), float32 data any floats.
std::vector<uint8_t> InputBytes(const std::vector<float>& v, bool half) {
  return half ? Bytes(testing::ToHalves(v)) : Bytes(v);
}

struct TensorSizes {
  size_t data = 0, weight = 0, out = 0;  // elements
};

TensorSizes SizesOf(const autotvm::Workload& w) {
  if (absl::StatusOr<autotvm::Conv2dParams> c = autotvm::ParseConv2dWorkload(w); c.ok()) {
    return {static_cast<size_t>(c->n * c->ci * c->h * c->w),
            static_cast<size_t>(c->co * (c->ci / c->groups) * c->kh * c->kw),
            static_cast<size_t>(c->n * c->co * c->OutH() * c->OutW())};
  }
  autotvm::DenseParams d = *autotvm::ParseDenseWorkload(w);
  return {static_cast<size_t>(d.m * d.k), static_cast<size_t>(d.n * d.k),
          static_cast<size_t>(d.m * d.n)};
}

class TunerGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TUNEJIT_REQUIRE_GPU();
    absl::StatusOr<Device> device = Device::Open(0);
    ASSERT_TRUE(device.ok()) << device.status();
    device_ = std::make_unique<Device>(*std::move(device));
    CacheOptions options;
    options.dir = ::testing::TempDir() + "/tunejit_tuner_gpu_cache";
    absl::StatusOr<KernelCache> cache = KernelCache::Open(options);
    ASSERT_TRUE(cache.ok()) << cache.status();
    cache_ = std::make_unique<KernelCache>(*std::move(cache));
    compiler_ = std::make_unique<KernelCompiler>(cache_.get());
    absl::StatusOr<std::unique_ptr<testing::GpuHarness>> harness = testing::GpuHarness::Create();
    ASSERT_TRUE(harness.ok()) << harness.status();
    harness_ = *std::move(harness);
  }

  // Re-runs `config` on fresh inputs and compares with the CPU reference.
  void ExpectCorrect(const Task& task, const autotvm::ConfigEntity& config) {
    const OpTemplate* op = FindOpTemplate(task.workload.task_name);
    ASSERT_NE(op, nullptr);
    absl::StatusOr<OpPlan> plan = op->Specialize(task.workload, config, harness_->limits(), {});
    ASSERT_TRUE(plan.ok()) << plan.status();
    TensorSizes n = SizesOf(task.workload);
    const bool half = HalfData(task.workload);
    std::vector<float> data =
        half ? testing::RandomQuarters(n.data, 11) : testing::RandomFloats(n.data, 11);
    std::vector<float> weight =
        half ? testing::RandomQuarters(n.weight, 12) : testing::RandomFloats(n.weight, 12);
    const bool half_out = task.workload.args.back() == "float16";
    absl::StatusOr<std::vector<std::vector<uint8_t>>> out = harness_->Run(
        *plan, {InputBytes(data, half), InputBytes(weight, half)}, {n.out * (half_out ? 2 : 4)});
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<float> got;
    if (half_out) {
      for (uint16_t h : FromBytes<uint16_t>((*out)[0])) got.push_back(HalfToFloat(h));
    } else {
      got = FromBytes<float>((*out)[0]);
    }
    std::vector<float> want = CpuReference(task.workload, data, weight);
    // The sums are exact in float32; a float16 output rounds them (2^-11 relative at most).
    EXPECT_LT(cpuref::RelativeError(got, want), half_out ? 1e-3 : 1e-5) << config.ToString();
  }

  // `recheck`: re-run every good config against the CPU reference (float workloads; the int8
  // kernels' own exact GPU tests cover them).
  void TuneAndCheck(const autotvm::Workload& workload, const std::string& log_name,
                    bool recheck = true) {
    absl::StatusOr<Task> task = MakeTask(workload, *autotvm::ParseTarget("cuda"));
    ASSERT_TRUE(task.ok()) << task.status();
    MeasureOptions mopts;
    mopts.max_timing_seconds = 0.2;
    auto measurer = GpuMeasurer::Create(*device_, *compiler_, *task, mopts);
    ASSERT_TRUE(measurer.ok()) << measurer.status();
    RandomSearch search(task->space.size(), 2024);
    TuneOptions options;
    options.n_trials = 20;
    options.batch_size = 5;
    options.progress = stderr;
    options.log_path = ::testing::TempDir() + "/" + log_name;
    std::remove(options.log_path.c_str());
    std::vector<autotvm::Record> records;
    options.on_record = [&](const autotvm::Record& r, const Measurement& m) {
      records.push_back(r);
      if (!r.ok()) {
        std::fprintf(stderr, "  error %d (%s): %s\n", r.result.error_no,
                     autotvm::MeasureErrorName(r.result.error_no), m.message.c_str());
      }
    };
    absl::StatusOr<TuneResult> result = TuneTask(*task, search, **measurer, options);
    ASSERT_TRUE(result.ok()) << result.status();
    ASSERT_EQ(records.size(), 20u);
    ASSERT_GE(result->best_index, 0) << "no valid config in 20 random trials";
    int ok = 0;
    for (const autotvm::Record& r : records) {
      EXPECT_NE(r.result.error_no, autotvm::kWrongAnswer) << r.config.ToString();
      if (!r.ok()) {
        EXPECT_EQ(r.result.costs, std::vector<double>{1e9});
        continue;
      }
      ++ok;
      ASSERT_EQ(r.result.costs.size(), 1u);
      EXPECT_GT(r.result.costs[0], 0);
      EXPECT_LT(r.result.costs[0], 0.1);
      EXPECT_GE(r.result.costs[0], result->best_cost);
      if (recheck) ExpectCorrect(*task, r.config);
    }
    autotvm::LogContents log;
    ASSERT_TRUE(autotvm::LoadLogFile(options.log_path, {.strict = true}, &log).ok());
    EXPECT_EQ(log.records.size(), 20u);

    // A planted wrong answer: the first measurement's output is corrupted.
    mopts.corrupt_call = 0;
    auto planted = GpuMeasurer::Create(*device_, *compiler_, *task, mopts);
    ASSERT_TRUE(planted.ok()) << planted.status();
    Measurement bad = (*planted)->Measure(result->best_config);
    EXPECT_EQ(bad.result.error_no, autotvm::kWrongAnswer) << bad.message;
    EXPECT_EQ(bad.result.costs, std::vector<double>{1e9});
    Measurement good = (*planted)->Measure(result->best_config);
    EXPECT_EQ(good.result.error_no, autotvm::kNoError) << good.message;
    // Early stop: under a bound no run can meet, the candidate is still checked, then costs its
    // checking run alone: a real time, and far less wall time than the full timing.
    (*planted)->SetStopAbove(1e-9);
    Measurement cut = (*planted)->Measure(result->best_config);
    EXPECT_EQ(cut.result.error_no, autotvm::kNoError) << cut.message;
    ASSERT_EQ(cut.result.costs.size(), 1u);
    EXPECT_GT(cut.result.costs[0], 0);
    EXPECT_LT(cut.result.costs[0], 0.1);
    EXPECT_LT(cut.result.all_cost, good.result.all_cost);
    // A bound the candidate meets when checked but not in its first timed run (0.65 x 1.2 of its
    // own time): timed once, at about its time.
    (*planted)->SetStopAbove(1.2 * good.result.costs[0]);
    Measurement once = (*planted)->Measure(result->best_config);
    EXPECT_EQ(once.result.error_no, autotvm::kNoError) << once.message;
    ASSERT_EQ(once.result.costs.size(), 1u);
    EXPECT_GT(once.result.costs[0], 0);
    EXPECT_LT(once.result.all_cost, good.result.all_cost);
    std::fprintf(stderr, "%s: %d of 20 configs valid\n", workload.task_name.c_str(), ok);
  }

  std::unique_ptr<Device> device_;
  std::unique_ptr<KernelCache> cache_;
  std::unique_ptr<KernelCompiler> compiler_;
  std::unique_ptr<testing::GpuHarness> harness_;
};

TEST_F(TunerGpuTest, DenseLargeBatch) {
  TuneAndCheck(testing::DenseWorkload("dense_large_batch.cuda", 64, 64, 64), "dense.log");
}

TEST_F(TunerGpuTest, Conv2dNchw) {
  TuneAndCheck(testing::ConvWorkload("conv2d_nchw.cuda", {1, 16, 14, 14}, {32, 16, 3, 3}, {1, 1},
                                     {1, 1, 1, 1}, {1, 1}),
               "conv.log");
}

// The tensor-core tasks as `tunejit tune --precision fp16` extracts them (float16 data; float32
// output for the logits' dense, float16 for the convs' activations): the tuner's random fp16
// inputs, its NHWC / fp16 GPU reference, its half-against-float compare and its tolerances.
TEST_F(TunerGpuTest, DenseWgmmaFp16) {
  TUNEJIT_REQUIRE_HOPPER(harness_);
  autotvm::DenseParams p;
  p.m = 128;
  p.n = 200;
  p.k = 1024;
  const std::vector<autotvm::Implementation> impls =
      testing::OfferedDense(p, NumericMode::kFp16TensorCores, /*half_output=*/false);
  ASSERT_EQ(impls.size(), 1u);
  TuneAndCheck(impls[0].workload, "dense_wgmma.log");
}

// A 3x3 conv of 64 -> 136 channels (a tail of the 128-channel tile) on 2 x 20 x 20 pixels.
autotvm::Conv2dParams WgmmaConvParams() {
  autotvm::Conv2dParams p;
  p.n = 2;
  p.ci = 64;
  p.h = p.w = 20;
  p.co = 136;
  p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  return p;
}

TEST_F(TunerGpuTest, Conv2dNhwcWgmmaFp16) {
  TUNEJIT_REQUIRE_HOPPER(harness_);
  // float16 out, as inside a network: the compare kernel reads halves.
  const std::vector<autotvm::Implementation> impls =
      testing::OfferedConv(WgmmaConvParams(), NumericMode::kFp16TensorCores, /*half_output=*/true);
  ASSERT_EQ(impls.size(), 1u);
  TuneAndCheck(impls[0].workload, "conv_wgmma.log");
}

// int8 on the tensor cores is measured as networks run it (MeasureEpilogue): bias, ReLU and
// requantize to int8, compared exactly with the reference kernel's int8 output (the same integer
// sums and float formula); a planted change of one output byte must be a wrong answer.
TEST_F(TunerGpuTest, Conv2dNhwcWgmmaInt8Requantized) {
  TUNEJIT_REQUIRE_HOPPER(harness_);
  const std::vector<autotvm::Implementation> impls =
      testing::OfferedConv(WgmmaConvParams(), NumericMode::kInt8TensorCores, /*half_output=*/false);
  ASSERT_EQ(impls.size(), 1u);
  ASSERT_EQ(MeasureEpilogue(impls[0].workload).output, Epilogue::Output::kInt8Requantize);
  TuneAndCheck(impls[0].workload, "conv_wgmma_int8.log", /*recheck=*/false);
}

}  // namespace
}  // namespace tunejit
