// Fault isolation without a GPU: the real parent side (ChildProcess, WorkerClient,
// IsolatedMeasurer, TuneTask, TuneModel) against tests/tuner/fake_worker.cc, which crashes, hangs
// or dies "fatally" on chosen config indices. Every candidate must become exactly one record with
// the right error number, and tuning must go on after each fault.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "autotvm/log_file.h"
#include "gtest/gtest.h"
#include "tuner/isolated_measurer.h"
#include "tuner/resume.h"
#include "tuner/search.h"
#include "tuner/tune_model.h"
#include "tuner/tune_task.h"

namespace tunejit {
namespace {

Task DenseTask(int64_t m = 64, int64_t n = 128, int64_t k = 256) {
  autotvm::DenseParams p;
  p.m = m;
  p.n = n;
  p.k = k;
  absl::StatusOr<Task> task = MakeTask(autotvm::MakeDenseWorkload("dense_large_batch.cuda", p),
                                       *autotvm::ParseTarget("cuda -model=unknown"));
  EXPECT_TRUE(task.ok()) << task.status();
  return *task;
}

std::string TempPath(const std::string& name) {
  // The pid keeps concurrent runs (several build dirs, ctest -j) apart.
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::remove(path.c_str());
  return path;
}

WorkerOptions FakeWorker(std::vector<std::string> env = {}) {
  WorkerOptions o;
  o.argv = {TUNEJIT_FAKE_WORKER};
  o.env = std::move(env);
  // Long enough that a loaded CI machine never misses an answer of the fake worker.
  o.measure_timeout_seconds = 1.0;
  o.setup_timeout_seconds = 0.5;
  o.hello_timeout_seconds = 10;
  return o;
}

std::vector<autotvm::Record> ReadLog(const std::string& path) {
  autotvm::LogContents log;
  EXPECT_TRUE(autotvm::LoadLogFile(path, {.strict = true}, &log).ok());
  std::vector<autotvm::Record> out;
  for (auto& r : log.records) out.push_back(r.record);
  return out;
}

int ExpectedError(int64_t index) {
  switch (index % 10) {
    case 3:  // crash
    case 7:  // fatal answer
      return autotvm::kRuntimeDevice;
    case 5:  // hang
      return autotvm::kRunTimeout;
    default:
      return autotvm::kNoError;
  }
}

TEST(ChildProcess, ReadLineTimesOutAndKillReportsTheSignal) {
  absl::StatusOr<ChildProcess> child =
      ChildProcess::Spawn({.argv = {"/bin/sleep", "30"}, .env = {}});
  ASSERT_TRUE(child.ok()) << child.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::string> line = child->ReadLine(0.2);
  EXPECT_TRUE(absl::IsDeadlineExceeded(line.status())) << line.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(child->Kill().find("signal 9"), std::string::npos);
}

TEST(ChildProcess, EchoesLinesAndReportsExit) {
  absl::StatusOr<ChildProcess> child = ChildProcess::Spawn(
      {.argv = {"/bin/sh", "-c", "read a; echo \"got $a\"; exit 3"}, .env = {}});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(child->WriteLine("hello").ok());
  absl::StatusOr<std::string> line = child->ReadLine(10);
  ASSERT_TRUE(line.ok()) << line.status();
  EXPECT_EQ(*line, "got hello");
  absl::StatusOr<std::string> eof = child->ReadLine(10);
  EXPECT_TRUE(absl::IsUnavailable(eof.status())) << eof.status();
  EXPECT_NE(eof.status().message().find("exited with status 3"), std::string::npos);
  // Writing to a dead child is an error, not SIGPIPE.
  EXPECT_FALSE(child->WriteLine("anyone?").ok());
}

TEST(ChildProcess, MissingExecutableIsAnError) {
  EXPECT_FALSE(ChildProcess::Spawn({.argv = {"/nonexistent/worker"}, .env = {}}).ok());
}

TEST(Isolation, CrashHangAndFatalBecomeRecordsAndTuningContinues) {
  Task task = DenseTask();
  ASSERT_GE(task.space.size(), 30);
  const std::string journal = TempPath("isolation_journal.txt");
  WorkerClient worker(FakeWorker({"FAKE_WORKER_JOURNAL=" + journal}));
  IsolatedMeasurer measurer(worker, task, {});
  GridSearch search(task.space.size());
  TuneOptions options;
  options.n_trials = 30;
  options.batch_size = 4;
  options.log_path = TempPath("isolation.log");
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->trials, 30);
  EXPECT_EQ(result->errors, 9);  // 3 crashes, 3 hangs, 3 fatal answers among 0..29
  // Index 0 and 13 cost 1e-4 (the cheapest); 13 crashes, so 0 wins.
  EXPECT_EQ(result->best_index, 0);
  EXPECT_DOUBLE_EQ(result->best_cost, 1e-4);

  std::vector<autotvm::Record> records = ReadLog(options.log_path);
  ASSERT_EQ(records.size(), 30u);
  for (size_t i = 0; i < records.size(); ++i) {
    const autotvm::Record& r = records[i];
    EXPECT_EQ(r.index, static_cast<int64_t>(i)) << "one record per candidate, in order";
    EXPECT_EQ(r.result.error_no, ExpectedError(r.index)) << r.index;
    if (r.ok()) {
      EXPECT_DOUBLE_EQ(r.result.costs[0], 1e-4 * (1 + r.index % 13));
      EXPECT_EQ(r.gpu, 0);  // tagged with the worker's GPU
      EXPECT_EQ(r.device, "Fake GPU");
    } else {
      EXPECT_EQ(r.result.costs, std::vector<double>{1e9});
    }
    if (r.result.error_no == autotvm::kRunTimeout) {
      EXPECT_GE(r.result.all_cost, 1.0);  // killed at the deadline, not before
      EXPECT_LT(r.result.all_cost, 10.0);
    }
  }
  // Each candidate reached a worker exactly once (no retries), and each fault cost one worker.
  std::ifstream in(journal);
  std::map<int64_t, int> sent;
  std::set<int> pids;
  int pid;
  long long seq, index;
  double stop_above;
  while (in >> pid >> seq >> index >> stop_above) {
    ++sent[index];
    pids.insert(pid);
  }
  ASSERT_EQ(sent.size(), 30u);
  for (const auto& [i, n] : sent) EXPECT_EQ(n, 1) << i;
  EXPECT_EQ(pids.size(), 10u);  // the first worker + 9 restarts
  EXPECT_EQ(worker.restarts(), 9);
}

TEST(Isolation, PlantedFaultsUseTheRunWideCandidateCount) {
  Task task = DenseTask();
  WorkerClient worker(FakeWorker({"FAKE_WORKER_WELL_BEHAVED=1"}));
  TestFaults faults;
  faults.fault_trial = 2;
  faults.hang_trial = 5;
  IsolatedMeasureOptions mo;
  mo.faults = &faults;
  IsolatedMeasurer measurer(worker, task, mo);
  GridSearch search(task.space.size());
  TuneOptions options;
  options.n_trials = 8;
  std::vector<autotvm::Record> records;
  std::vector<std::string> messages;
  options.on_record = [&](const autotvm::Record& r, const Measurement& m) {
    records.push_back(r);
    messages.push_back(m.message);
  };
  ASSERT_TRUE(TuneTask(task, search, measurer, options).ok());
  ASSERT_EQ(records.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const int want = i == 2 ? autotvm::kRuntimeDevice : i == 5 ? autotvm::kRunTimeout : 0;
    EXPECT_EQ(records[i].result.error_no, want) << i << ": " << messages[i];
  }
  EXPECT_NE(messages[2].find("planted oob"), std::string::npos) << messages[2];
  EXPECT_NE(messages[5].find("planted hang"), std::string::npos) << messages[5];
  EXPECT_EQ(worker.restarts(), 2);
}

TEST(Isolation, AWorkerThatCannotStartStopsTheTaskWithItsReason) {
  Task task = DenseTask();
  WorkerClient worker(FakeWorker({"FAKE_WORKER_FAIL_START=1"}));
  EXPECT_FALSE(worker.Start().ok());
  IsolatedMeasurer measurer(worker, task, {});
  GridSearch search(task.space.size());
  TuneOptions options;
  options.n_trials = 20;
  int records = 0;
  options.on_record = [&](const autotvm::Record& r, const Measurement&) {
    ++records;
    EXPECT_EQ(r.result.error_no, autotvm::kRuntimeDevice);
  };
  absl::StatusOr<TuneResult> result = TuneTask(task, search, measurer, options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("no CUDA device (fake)"), std::string::npos)
      << result.status();
  EXPECT_LE(records, 3);  // gives up after max_start_failures, not after 20 error records
}

}  // namespace
}  // namespace tunejit
