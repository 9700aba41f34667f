// TuneTask with a fake measurer: the loop, the log it writes (TVM's format, parsed back by the
// autotvm record parser) and the best tracking, without a GPU.
#include "tuner/tune_task.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "autotvm/log_file.h"
#include "autotvm/record.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"
#include "tuner/measure.h"
#include "tuner/search.h"
#include "tuner/task.h"

namespace tunejit {
namespace {

Task DenseTask() {
  autotvm::DenseParams p;
  p.m = 256;
  p.n = 128;
  p.k = 64;
  absl::StatusOr<autotvm::Target> target = autotvm::ParseTarget("cuda -model=h200");
  EXPECT_TRUE(target.ok());
  absl::StatusOr<Task> task =
      MakeTask(autotvm::MakeDenseWorkload("dense_large_batch.cuda", p), *target);
  EXPECT_TRUE(task.ok()) << task.status();
  return *task;
}

// Cost derived from the config's index; every 4th index fails to instantiate, every 7th is a wrong
// answer. Remembers what it measured.
class FakeMeasurer : public Measurer {
 public:
  explicit FakeMeasurer(const autotvm::ConfigSpace* space) : space_(space) {}
  Measurement Measure(const autotvm::ConfigEntity& config) override {
    absl::StatusOr<int64_t> index = space_->IndexOf(config);
    EXPECT_TRUE(index.ok()) << index.status();
    measured.push_back(*index);
    bounds.push_back(stop_above);
    if (require_precompiled) {
      EXPECT_TRUE(WasPrecompiled(*index)) << *index;
    }
    if (*index % 4 == 0) return FailedMeasurement(autotvm::kInstantiationError, "too big", 0.01);
    if (*index % 7 == 0) return FailedMeasurement(autotvm::kWrongAnswer, "mismatch", 0.02);
    Measurement m;
    m.result.costs = {Cost(*index)};
    m.result.all_cost = 0.5;
    m.result.timestamp = 1700000000.0 + measured.size();
    return m;
  }
  // The bound in force for each Measure call (SetStopAbove comes first).
  void SetStopAbove(double seconds) override { stop_above = seconds; }
  double stop_above = -1;
  // The job runs on a CompilePool thread; it marks the index compiled when it ends.
  std::function<void()> CompileJob(const autotvm::ConfigEntity& config) override {
    const int64_t index = *space_->IndexOf(config);
    return [this, index] {
      absl::Duration delay = compile_delay;
      if (auto it = slow_compiles.find(index); it != slow_compiles.end()) delay = it->second;
      if (delay > absl::ZeroDuration()) absl::SleepFor(delay);
      absl::MutexLock lock(&mu);
      ++compile_jobs;
      precompiled.insert(index);
    };
  }
  bool WasPrecompiled(int64_t index) {
    absl::MutexLock lock(&mu);
    return precompiled.contains(index);
  }
  static double Cost(int64_t index) { return 1e-4 * (1 + (index * 7919) % 1009); }
  std::vector<int64_t> measured;
  std::vector<double> bounds;  // stop_above per Measure call
  absl::Mutex mu;
  std::set<int64_t> precompiled;  // guarded by mu
  int compile_jobs = 0;           // finished, guarded by mu
  bool require_precompiled = false;
  absl::Duration compile_delay;                     // a slow compiler
  std::map<int64_t, absl::Duration> slow_compiles;  // set before tuning: per-index delays

 private:
  const autotvm::ConfigSpace* space_;
};

// Records what the loop reports back.
class RecordingSearch : public RandomSearch {
 public:
  using RandomSearch::RandomSearch;
  void Update(absl::Span<const int64_t> indices,
              absl::Span<const autotvm::MeasureResult> results) override {
    ASSERT_EQ(indices.size(), results.size());
    for (size_t i = 0; i < indices.size(); ++i) updates[indices[i]] = results[i];
  }
  std::map<int64_t, autotvm::MeasureResult> updates;
};

std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string FreshLog(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::remove(path.c_str());
  return path;
}

TEST(TuneTask, WritesTvmRecordsAndTracksBest) {
  const Task task = DenseTask();
  ASSERT_GT(task.space.size(), 100);
  FakeMeasurer measurer(&task.space);
  RecordingSearch search(task.space.size(), 5);
  TuneOptions options;
  options.n_trials = 23;
  options.batch_size = 5;
  options.log_path = FreshLog("tune_task_test.log");
  int callbacks = 0;
  options.on_record = [&](const autotvm::Record& r, const Measurement& m) {
    ++callbacks;
    EXPECT_EQ(r.result.error_no, m.result.error_no);
    EXPECT_EQ(m.message.empty(), m.result.error_no == autotvm::kNoError);
  };
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->trials, 23);
  EXPECT_EQ(callbacks, 23);
  ASSERT_EQ(measurer.measured.size(), 23u);
  EXPECT_EQ(search.updates.size(), 23u);

  std::vector<std::string> lines = ReadLines(options.log_path);
  ASSERT_EQ(lines.size(), 23u);
  int64_t best_index = -1;
  double best = std::numeric_limits<double>::infinity();
  int errors = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    absl::StatusOr<autotvm::Record> r = autotvm::ParseRecordLine(lines[i]);
    ASSERT_TRUE(r.ok()) << r.status() << "\n" << lines[i];
    EXPECT_EQ(r->format, autotvm::RecordFormat::kV02);
    EXPECT_EQ(autotvm::SerializeRecord(*r), lines[i]);
    EXPECT_EQ(lines[i].rfind("{\"input\": [\"cuda -model=h200\", \"dense_large_batch.cuda\"", 0),
              0u)
        << lines[i];
    EXPECT_EQ(r->workload, task.workload);
    const int64_t index = measurer.measured[i];  // the log is in measurement order
    EXPECT_EQ(r->index, index);
    EXPECT_EQ(r->config.ToJson(), task.space.Get(index)->ToJson());
    EXPECT_EQ(search.updates.at(index).error_no, r->result.error_no);
    if (index % 4 == 0 || index % 7 == 0) {
      ++errors;
      EXPECT_EQ(r->result.error_no,
                index % 4 == 0 ? autotvm::kInstantiationError : autotvm::kWrongAnswer);
      EXPECT_EQ(r->result.costs, std::vector<double>{1e9});
      continue;
    }
    EXPECT_EQ(r->result.error_no, autotvm::kNoError);
    ASSERT_EQ(r->result.costs.size(), 1u);
    EXPECT_DOUBLE_EQ(r->result.costs[0], FakeMeasurer::Cost(index));
    if (FakeMeasurer::Cost(index) < best) {
      best = FakeMeasurer::Cost(index);
      best_index = index;
    }
  }
  ASSERT_GE(best_index, 0);
  EXPECT_EQ(result->errors, errors);
  EXPECT_EQ(result->best_index, best_index);
  EXPECT_DOUBLE_EQ(result->best_cost, best);
  EXPECT_NEAR(result->best_gflops, task.flops / best / 1e9, 1e-9 * result->best_gflops);
  EXPECT_EQ(result->best_config.ToJson(), task.space.Get(best_index)->ToJson());

  // The log loads as a whole through the log reader too.
  autotvm::LogContents log;
  ASSERT_TRUE(autotvm::LoadLogFile(options.log_path, {.strict = true}, &log).ok());
  EXPECT_EQ(log.records.size(), 23u);
}

TEST(TuneTask, PrecompilesEachBatchBeforeMeasuringIt) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  measurer.require_precompiled = true;
  RandomSearch search(task.space.size(), 11);
  TuneOptions options;
  options.n_trials = 17;
  options.batch_size = 4;
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->trials, 17);
  absl::MutexLock lock(&measurer.mu);
  EXPECT_EQ(measurer.compile_jobs, 17);
  EXPECT_EQ(measurer.precompiled,
            std::set<int64_t>(measurer.measured.begin(), measurer.measured.end()));
}

// One candidate of the first batch compiles for 1.5 s; the rest of its batch and the next
// batches are measured meanwhile, and it is measured once compiled, reported to the search
// with a later batch.
TEST(TuneTask, SlowCompileDoesNotHoldUpTheOthers) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  measurer.require_precompiled = true;
  measurer.compile_delay = absl::Milliseconds(20);
  RecordingSearch search(task.space.size(), 11);
  const std::vector<int64_t> first = RandomSearch(task.space.size(), 11).NextBatch(4);
  const int64_t slow = first[1];
  measurer.slow_compiles[slow] = absl::Milliseconds(1500);
  CompilePool pool(8);
  TuneOptions options;
  options.n_trials = 16;
  options.batch_size = 4;
  options.compile_pool = &pool;
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->trials, 16);
  ASSERT_EQ(measurer.measured.size(), 16u);
  // The other fifteen compile in about 0.1 s: the slow one, second in its batch, came last.
  EXPECT_EQ(measurer.measured.back(), slow);
  EXPECT_TRUE(search.updates.contains(slow));
  EXPECT_EQ(search.updates.size(), 16u);
}

// A candidate whose compile outlasts the time budget is left out; the loop does not wait for it.
TEST(TuneTask, TimeBudgetDoesNotWaitForAStraggler) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  const std::vector<int64_t> first = RandomSearch(task.space.size(), 11).NextBatch(4);
  measurer.slow_compiles[first[2]] = absl::Seconds(3);
  RandomSearch search(task.space.size(), 11);
  CompilePool pool(8);
  TuneOptions options;
  options.n_trials = 1000;
  options.batch_size = 4;
  options.max_seconds = 0.5;
  options.compile_pool = &pool;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_LT(seconds, 1.5);
  EXPECT_GT(result->trials, 8);
  EXPECT_EQ(std::count(measurer.measured.begin(), measurer.measured.end(), first[2]), 0);
}

// Trials measured when the 0.1 s time budget runs out while the first batch (4) compiles.
int TrialsWhenTimeRunsOutCompiling(int min_trials) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  measurer.compile_delay = absl::Milliseconds(300);
  RandomSearch search(task.space.size(), 11);
  TuneOptions options;
  options.n_trials = 100;
  options.batch_size = 4;
  options.max_seconds = 0.1;
  options.min_trials = min_trials;
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? result->trials : -1;
}

// By default the first batch is still measured (a task with no record at all is the worst
// outcome), and nothing after it.
TEST(TuneTask, TimeBudgetStillMeasuresTheFirstBatch) {
  EXPECT_EQ(TrialsWhenTimeRunsOutCompiling(-1), 4);
}

// In a later pass (min_trials 1) the time budget is kept from the first candidate on.
TEST(TuneTask, MinTrialsOverridesTheFirstBatchRule) {
  EXPECT_EQ(TrialsWhenTimeRunsOutCompiling(1), 1);
}

// Each candidate is measured under stop_factor x the best known so far: first the given node
// best, then this run's own best once it is lower.
TEST(TuneTask, EarlyStopBoundFollowsTheBestKnown) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  RandomSearch search(task.space.size(), 5);
  TuneOptions options;
  options.n_trials = 40;
  options.batch_size = 8;
  options.stop_factor = 2;
  options.known_best_seconds = 0.05;  // above every FakeMeasurer cost (<= 0.1009 s, most lower)
  ASSERT_TRUE(TuneTask(task, search, measurer, options).ok());
  ASSERT_EQ(measurer.bounds.size(), measurer.measured.size());
  double best = options.known_best_seconds;
  for (size_t k = 0; k < measurer.measured.size(); ++k) {
    EXPECT_DOUBLE_EQ(measurer.bounds[k], 2 * best) << k;
    const int64_t index = measurer.measured[k];
    if (index % 4 != 0 && index % 7 != 0) best = std::min(best, FakeMeasurer::Cost(index));
  }
  EXPECT_LT(best, options.known_best_seconds);  // the run's own best took over
}

TEST(TuneTask, NoEarlyStopWithoutAFactorOrABest) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  RandomSearch search(task.space.size(), 5);
  TuneOptions options;
  options.n_trials = 12;
  options.batch_size = 4;
  ASSERT_TRUE(TuneTask(task, search, measurer, options).ok());
  for (double b : measurer.bounds) EXPECT_EQ(b, 0);  // stop_factor 0: off
  FakeMeasurer first(&task.space);
  RandomSearch search2(task.space.size(), 5);
  options.stop_factor = 3;
  ASSERT_TRUE(TuneTask(task, search2, first, options).ok());
  ASSERT_FALSE(first.bounds.empty());
  EXPECT_EQ(first.bounds[0], 0);  // nothing known yet: the first candidate is timed fully
}

TEST(TuneTask, NoPrecompileWithoutPipelining) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  RandomSearch search(task.space.size(), 11);
  TuneOptions options;
  options.n_trials = 9;
  options.batch_size = 4;
  options.pipeline_compile = false;
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->trials, 9);
  absl::MutexLock lock(&measurer.mu);
  EXPECT_EQ(measurer.compile_jobs, 0);
}

TEST(TuneTask, AppendsToExistingLog) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  GridSearch search(task.space.size());
  TuneOptions options;
  options.n_trials = 3;
  options.log_path = FreshLog("tune_task_append.log");
  ASSERT_TRUE(TuneTask(task, search, measurer, options).ok());
  ASSERT_TRUE(TuneTask(task, search, measurer, options).ok());
  std::vector<std::string> lines = ReadLines(options.log_path);
  ASSERT_EQ(lines.size(), 6u);
  // The grid continues; within a call, candidates are measured as their compiles finish.
  ASSERT_EQ(measurer.measured.size(), 6u);
  EXPECT_EQ(std::set<int64_t>(measurer.measured.begin(), measurer.measured.begin() + 3),
            (std::set<int64_t>{0, 1, 2}));
  EXPECT_EQ(std::set<int64_t>(measurer.measured.begin() + 3, measurer.measured.end()),
            (std::set<int64_t>{3, 4, 5}));
}

TEST(TuneTask, StopsWhenSpaceIsExhausted) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  GridSearch search(10);  // pretend the space has 10 points
  TuneOptions options;
  options.n_trials = 100;
  options.batch_size = 4;
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->trials, 10);
}

TEST(TuneTask, AllErrorsMeansNoBest) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  GridSearch search(1);  // index 0 fails to instantiate
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, TuneOptions{});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->trials, 1);
  EXPECT_EQ(result->errors, 1);
  EXPECT_EQ(result->best_index, -1);
}

TEST(TuneTask, UnwritableLogIsAnError) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  GridSearch search(task.space.size());
  TuneOptions options;
  options.n_trials = 2;
  options.log_path = ::testing::TempDir() + "/no/such/dir/tune.log";
  EXPECT_FALSE(TuneTask(task, search, measurer, options).ok());
}

// A broken strategy proposing an index past the end of the space.
class OutOfRangeSearch : public SearchStrategy {
 public:
  explicit OutOfRangeSearch(int64_t size) : size_(size) {}
  std::vector<int64_t> NextBatch(int) override { return {size_}; }
  bool HasNext() const override { return true; }

 private:
  int64_t size_;
};

TEST(TuneTask, IndexOutsideSpaceIsAnError) {
  const Task task = DenseTask();
  FakeMeasurer measurer(&task.space);
  OutOfRangeSearch search(task.space.size());
  EXPECT_FALSE(TuneTask(task, search, measurer, TuneOptions{}).ok());
  EXPECT_TRUE(measurer.measured.empty());
}

TEST(MakeTask, FlopsAndSpace) {
  const Task task = DenseTask();
  EXPECT_DOUBLE_EQ(task.flops, 2.0 * 256 * 128 * 64);
  EXPECT_EQ(task.target.name, "cuda");
  autotvm::Workload bad{"dense_large_batch.cuda", autotvm::Json::array()};
  EXPECT_FALSE(MakeTask(bad, task.target).ok());
}

// batch_matmul.cuda is a task like the others: its space (TopHub cuda_v0.10's first record's
// workload: 36 x 36 x 6 x 4 x 2) enumerates, the loop tunes it and its records read back by index.
TEST(MakeTask, BatchMatmulTunes) {
  autotvm::BatchMatmulParams p{.m = 128, .n = 128, .k = 20};
  absl::StatusOr<Task> task =
      MakeTask(autotvm::MakeBatchMatmulWorkload(p), *autotvm::ParseTarget("cuda -model=v100"));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->space.size(), 62208);
  EXPECT_DOUBLE_EQ(task->flops, 2.0 * 128 * 128 * 20);
  FakeMeasurer measurer(&task->space);
  RandomSearch search(task->space.size(), 11);
  TuneOptions options;
  options.n_trials = 12;
  options.batch_size = 4;
  options.log_path = FreshLog("tune_task_batch_matmul.log");
  absl::StatusOr<TuneResult> result = TuneTask(*task, search, measurer, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->trials, 12);
  autotvm::LogContents log;
  ASSERT_TRUE(autotvm::LoadLogFile(options.log_path, {.strict = true}, &log).ok());
  ASSERT_EQ(log.records.size(), 12u);
  for (size_t i = 0; i < log.records.size(); ++i) {
    const autotvm::Record& r = log.records[i].record;
    EXPECT_EQ(r.workload.task_name, "batch_matmul.cuda");
    EXPECT_EQ(r.index, measurer.measured[i]);
    EXPECT_EQ(*task->space.IndexOf(r.config), r.index);
  }
  // And a good share of random configs instantiate on an sm_90 device (the GPU tuner's concern).
  const OpTemplate* op = FindOpTemplate("batch_matmul.cuda");
  ASSERT_NE(op, nullptr);
  RandomSearch sample(task->space.size(), 2024);
  int ok = 0;
  for (int64_t index : sample.NextBatch(20)) {
    ok += op->Specialize(task->workload, *task->space.Get(index),
                         DeviceLimits::ForArch(GpuArch{9, 0, false}), Epilogue{})
              .ok();
  }
  EXPECT_GE(ok, 5);
}

TEST(FailedMeasurement, CostsOneBillion) {
  Measurement m = FailedMeasurement(autotvm::kCompileDevice, "nvrtc: error", 1.5);
  EXPECT_EQ(m.result.costs, std::vector<double>{1e9});
  EXPECT_EQ(m.result.error_no, 3);
  EXPECT_EQ(m.result.all_cost, 1.5);
  EXPECT_GT(m.result.timestamp, 1.6e9);
  EXPECT_EQ(m.message, "nvrtc: error");
}

}  // namespace
}  // namespace tunejit

namespace tunejit {
namespace {

// The GPU test tunes these tasks with RandomSearch(seed 2024) for 20 trials and needs valid
// configs among them: check on the CPU that enough of them specialize for an sm_90 device.
int SpecializableOfFirst(int n, const autotvm::Workload& workload) {
  absl::StatusOr<Task> task = MakeTask(workload, *autotvm::ParseTarget("cuda"));
  EXPECT_TRUE(task.ok()) << task.status();
  if (!task.ok()) return 0;
  const OpTemplate* op = FindOpTemplate(workload.task_name);
  EXPECT_NE(op, nullptr);
  if (op == nullptr) return 0;
  const DeviceLimits limits = DeviceLimits::ForArch(GpuArch{9, 0, false});
  RandomSearch search(task->space.size(), 2024);
  int ok = 0;
  for (int64_t index : search.NextBatch(n)) {
    ok += op->Specialize(workload, *task->space.Get(index), limits, Epilogue{}).ok();
  }
  return ok;
}

TEST(GpuTestTasks, RandomConfigsOftenSpecialize) {
  // dense_large_batch needs tile_x[2] == tile_y[2]: most random configs of a 128x128 dense fail
  // to instantiate (0 of the first 20), so the GPU test uses 64x64x64.
  autotvm::DenseParams dense{.m = 64, .n = 64, .k = 64};
  EXPECT_GE(SpecializableOfFirst(20, autotvm::MakeDenseWorkload("dense_large_batch.cuda", dense)),
            3);
  autotvm::Conv2dParams conv;
  conv.n = 1;
  conv.ci = 16;
  conv.h = conv.w = 14;
  conv.co = 32;
  conv.kh = conv.kw = 3;
  conv.pad_top = conv.pad_left = conv.pad_bottom = conv.pad_right = 1;
  EXPECT_GE(SpecializableOfFirst(20, autotvm::MakeConv2dWorkload("conv2d_nchw.cuda", conv)), 3);
}

// Only int8 convs on the tensor-core template are timed with the network's requantize epilogue;
// TVM's templates and the float tensor-core tasks keep Epilogue{}.
TEST(MeasureEpilogue, RequantizesOnlyInt8TensorCoreConvs) {
  autotvm::Conv2dParams p;
  p.n = 2, p.ci = 64, p.h = p.w = 20, p.co = 64, p.kh = p.kw = 3;
  p.data_dtype = p.kernel_dtype = "int8";
  p.out_dtype = "int32";
  const Epilogue want{.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
  EXPECT_EQ(MeasureEpilogue(autotvm::MakeConv2dWorkload(autotvm::kConv2dNhwcWgmma, p)), want);
  EXPECT_EQ(MeasureEpilogue(autotvm::MakeConv2dWorkload(autotvm::kConv2dNhwcWgmmaPool, p)), want);
  EXPECT_EQ(MeasureEpilogue(autotvm::MakeConv2dWorkload("conv2d_NCHWc_int8.cuda", p)), Epilogue{});
  p.data_dtype = p.kernel_dtype = p.out_dtype = "float16";
  EXPECT_EQ(MeasureEpilogue(autotvm::MakeConv2dWorkload(autotvm::kConv2dNhwcWgmma, p)), Epilogue{});
  autotvm::DenseParams d{128, 256, 512};
  d.data_dtype = "float16";
  EXPECT_EQ(MeasureEpilogue(autotvm::MakeDenseWorkload("dense_wgmma.cuda", d)), Epilogue{});
}

}  // namespace
}  // namespace tunejit
