// Fault isolation on a real GPU: tuning through `tunejit tune-worker` processes with a planted
// faulting candidate (an out-of-bounds write: illegal address, dead context) and a planted endless
// one. Both must be recorded (error 4, error 7), the worker restarted, and later candidates must
// measure fine. Needs the `tunejit` binary (built with this test).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autotvm/log_file.h"
#include "cache/kernel_cache.h"
#include "gtest/gtest.h"
#include "tests/testing/gpu_test.h"
#include "tuner/isolated_measurer.h"
#include "tuner/search.h"
#include "tuner/tune_model.h"
#include "tuner/tune_task.h"

namespace tunejit {
namespace {

// The tunejit binary: $TUNEJIT_BINARY on the GPU machine (binaries travel without the build tree),
// else the one built beside this test.
const std::string kTunejit = [] {
  const char* env = std::getenv("TUNEJIT_BINARY");
  return env != nullptr && *env != '\0' ? std::string(env)
                                        : std::string(TUNEJIT_BINARY_DIR "/tunejit");
}();

void ExpectFaultThenHangThenSuccess(const std::vector<autotvm::Record>& records) {
  ASSERT_EQ(records.size(), 12u);
  EXPECT_EQ(records[2].result.error_no, autotvm::kRuntimeDevice);
  EXPECT_EQ(records[5].result.error_no, autotvm::kRunTimeout);
  int ok_after = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_NE(records[i].result.error_no, autotvm::kWrongAnswer) << i;
    if (i > 5 && records[i].ok()) ++ok_after;
    if (records[i].ok()) {
      EXPECT_EQ(records[i].gpu, 0);
      EXPECT_FALSE(records[i].device.empty());
      EXPECT_GT(records[i].result.costs[0], 0);
      EXPECT_LT(records[i].result.costs[0], 1.0);
    }
  }
  EXPECT_GT(ok_after, 0) << "no candidate measured after the planted fault and hang";
}

TEST(TuneIsolationGpu, PlantedFaultAndHangAreRecordedAndTuningGoesOn) {
  TUNEJIT_REQUIRE_GPU();
  const std::string cache_dir = ::testing::TempDir() + "/tunejit_isolation_gpu_cache";
  absl::StatusOr<KernelCache> cache = KernelCache::Open({.dir = cache_dir});
  ASSERT_TRUE(cache.ok()) << cache.status();
  KernelCompiler compiler(&*cache);
  autotvm::DenseParams p;
  p.m = 64;
  p.n = 256;
  p.k = 512;
  absl::StatusOr<Task> task = MakeTask(autotvm::MakeDenseWorkload("dense_large_batch.cuda", p),
                                       *autotvm::ParseTarget("cuda -model=unknown"));
  ASSERT_TRUE(task.ok()) << task.status();

  WorkerOptions wo;
  wo.argv = {kTunejit, "tune-worker", "--gpu", "0", "--cache-dir", cache_dir};
  wo.measure_timeout_seconds = 8;
  WorkerClient worker(wo);
  absl::StatusOr<WorkerHello> hello = worker.Start();
  ASSERT_TRUE(hello.ok()) << hello.status();
  TestFaults faults;
  faults.fault_trial = 2;
  faults.hang_trial = 5;
  IsolatedMeasurer measurer(worker, *task,
                            {.compiler = &compiler, .limits = hello->limits, .faults = &faults});
  // Only configs the template accepts, so the candidates after the planted faults do measure.
  absl::StatusOr<std::unique_ptr<SearchStrategy>> search =
      MakeSearch("random", *task, 7, {}, {}, TemplateValidity(*task, hello->limits));
  ASSERT_TRUE(search.ok()) << search.status();
  TuneOptions options;
  options.n_trials = 12;
  options.batch_size = 4;
  options.progress = stderr;
  options.log_path = ::testing::TempDir() + "/tune_isolation_gpu.log";
  std::remove(options.log_path.c_str());
  std::vector<autotvm::Record> records;
  options.on_record = [&](const autotvm::Record& r, const Measurement& m) {
    records.push_back(r);
    if (!r.ok()) std::fprintf(stderr, "  error %d: %s\n", r.result.error_no, m.message.c_str());
  };
  absl::StatusOr<TuneResult> result = TuneTask(*task, **search, measurer, options);
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectFaultThenHangThenSuccess(records);
  EXPECT_EQ(worker.restarts(), 2);
  worker.Stop();
}

TEST(TuneIsolationGpu, TuneCommandSurvivesPlantedFaults) {
  TUNEJIT_REQUIRE_GPU();
  const std::string log = ::testing::TempDir() + "/tune_command_gpu.log";
  std::remove(log.c_str());
  const std::string cmd =
      absl::StrCat(kTunejit, " tune --model vgg16 --batch 1 --precision fp32 --tasks classifier.0",
                   " --trials 12 --search random --trial-batch 4 --timeout 8 --test-fault-trial 2",
                   " --test-hang-trial 5 --cache-dir ", ::testing::TempDir(),
                   "/tunejit_isolation_gpu_cache", " --log ", log);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  autotvm::LogContents contents;
  ASSERT_TRUE(autotvm::LoadLogFile(log, {.strict = true}, &contents).ok());
  std::vector<autotvm::Record> records;
  for (const autotvm::LoadedRecord& r : contents.records) records.push_back(r.record);
  ExpectFaultThenHangThenSuccess(records);
  std::FILE* svg = std::fopen((log + ".svg").c_str(), "r");
  EXPECT_NE(svg, nullptr) << "no tuning curve";
  if (svg != nullptr) std::fclose(svg);
}

}  // namespace
}  // namespace tunejit
