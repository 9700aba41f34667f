// TuneModel without a GPU (tests/tuner/fake_worker.cc as the worker): several slots share one task
// queue and one log; resuming skips what is logged and counts it against the budget; a run killed
// with SIGKILL and resumed ends with every (task, index) logged exactly once.
#include "tuner/tune_model.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "autotvm/log_file.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"

namespace tunejit {
namespace {

std::vector<ModelTask> DenseTasks(int count, int64_t trials) {
  std::vector<ModelTask> tasks;
  for (int i = 0; i < count; ++i) {
    autotvm::DenseParams p;
    p.m = 64;
    p.n = 64 * (i + 1);
    p.k = 128;
    absl::StatusOr<Task> task = MakeTask(autotvm::MakeDenseWorkload("dense_large_batch.cuda", p),
                                         *autotvm::ParseTarget("cuda -model=unknown"));
    EXPECT_TRUE(task.ok()) << task.status();
    tasks.push_back({.task = *std::move(task), .label = "t" + std::to_string(i), .trials = trials});
  }
  return tasks;
}

std::string TempPath(const std::string& name) {
  // The pid keeps concurrent runs (several build dirs, ctest -j) apart.
  std::string path = ::testing::TempDir() + "/" + std::to_string(getpid()) + "_" + name;
  std::remove(path.c_str());
  return path;
}

int LineCount(const std::string& path) {
  std::ifstream in(path);
  return static_cast<int>(std::count(std::istreambuf_iterator<char>(in), {}, '\n'));
}

TuneModelOptions FakeOptions(const std::string& log, std::vector<std::string> env) {
  TuneModelOptions o;
  o.log_path = log;
  o.search = "random";
  o.batch_size = 3;
  o.worker.argv = {TUNEJIT_FAKE_WORKER};
  o.worker.env = std::move(env);
  o.worker.measure_timeout_seconds = 1.0;
  o.worker.setup_timeout_seconds = 0.5;
  return o;
}

// (workload key -> index -> times logged), and the GPU tags seen.
struct LogIndex {
  std::map<std::string, std::map<int64_t, int>> count;
  std::set<int> gpus;
  int lines = 0;
};

LogIndex IndexLog(const std::string& path) {
  autotvm::LogContents log;
  absl::Status s = autotvm::LoadLogFile(path, {.strict = true}, &log);
  EXPECT_TRUE(s.ok()) << s;
  LogIndex out;
  for (const autotvm::LoadedRecord& r : log.records) {
    ++out.count[r.record.workload.Key()][r.record.index];
    out.gpus.insert(r.record.gpu);
    ++out.lines;
  }
  return out;
}

void ExpectEachOnce(const LogIndex& log, const std::vector<ModelTask>& tasks, size_t per_task) {
  ASSERT_EQ(log.count.size(), tasks.size());
  for (const ModelTask& t : tasks) {
    const auto it = log.count.find(t.task.workload.Key());
    ASSERT_NE(it, log.count.end()) << t.label;
    EXPECT_EQ(it->second.size(), per_task) << t.label;
    for (const auto& [index, n] : it->second) EXPECT_EQ(n, 1) << t.label << " index " << index;
  }
}

TEST(TuneModel, SlotsShareTheQueueAndTheLog) {
  const std::vector<ModelTask> tasks = DenseTasks(5, 12);
  const std::string log = TempPath("tune_model_slots.log");
  TuneModelOptions o = FakeOptions(log, {"FAKE_WORKER_GPUS=2"});
  o.workers_per_gpu = 2;
  absl::StatusOr<TuneModelReport> report = TuneModel(tasks, o);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->gpus, 2);
  EXPECT_EQ(report->slots, 4);
  EXPECT_EQ(report->device, "Fake GPU");
  std::set<int> slots_used;
  for (const TaskOutcome& out : report->tasks) {
    EXPECT_TRUE(out.status.ok()) << out.status;
    EXPECT_EQ(out.trials_total, 12);
    EXPECT_EQ(out.result.trials, 12);
    slots_used.insert(out.slot);
    EXPECT_EQ(out.curve.empty(), out.best_index < 0);
    EXPECT_EQ(out.timeouts + out.faults, out.result.errors);
  }
  EXPECT_GT(slots_used.size(), 1u) << "tasks were spread over the slots";
  const LogIndex index = IndexLog(log);
  EXPECT_EQ(index.lines, 60);
  ExpectEachOnce(index, tasks, 12);
  EXPECT_EQ(index.gpus, (std::set<int>{0, 1}));
}

// Tasks of one task name learn from each other within a run: each task's search is offered the
// records its predecessors measured (one slot, so the order is fixed), the first none.
TEST(TuneModel, LaterTasksAreOfferedTheEarlierTasksRecords) {
  const std::vector<ModelTask> tasks = DenseTasks(3, 6);
  const std::string log = TempPath("tune_model_transfer.log");
  TuneModelOptions o = FakeOptions(log, {});
  o.search = "xgb";
  absl::StatusOr<TuneModelReport> report = TuneModel(tasks, o);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->tasks.size(), 3u);
  EXPECT_EQ(report->tasks[0].transferred, 0);
  EXPECT_EQ(report->tasks[1].transferred, 6);
  EXPECT_EQ(report->tasks[2].transferred, 12);
  ExpectEachOnce(IndexLog(log), tasks, 6);
}

TEST(TuneModel, ResumeSkipsLoggedIndicesAndCountsThem) {
  const std::string log = TempPath("tune_model_resume.log");
  const std::vector<ModelTask> first = DenseTasks(3, 6);
  ASSERT_TRUE(TuneModel(first, FakeOptions(log, {})).ok());
  ExpectEachOnce(IndexLog(log), first, 6);

  absl::StatusOr<ResumeLog> resume = LoadResumeLog(log, true);
  ASSERT_TRUE(resume.ok()) << resume.status();
  EXPECT_EQ(resume->records, 18);
  const std::vector<ModelTask> second = DenseTasks(3, 10);
  TuneModelOptions o = FakeOptions(log, {});
  o.resume = &*resume;
  o.seed = 99;  // another random order: it would revisit indices if they were not skipped
  absl::StatusOr<TuneModelReport> report = TuneModel(second, o);
  ASSERT_TRUE(report.ok()) << report.status();
  for (const TaskOutcome& out : report->tasks) {
    EXPECT_EQ(out.resumed, 6);
    EXPECT_EQ(out.result.trials, 4);  // only the rest of the budget
    EXPECT_EQ(out.trials_total, 10);
  }
  ExpectEachOnce(IndexLog(log), second, 10);

  // A third run with the budget already spent measures nothing.
  absl::StatusOr<ResumeLog> again = LoadResumeLog(log, true);
  ASSERT_TRUE(again.ok());
  o.resume = &*again;
  report = TuneModel(second, o);
  ASSERT_TRUE(report.ok());
  for (const TaskOutcome& out : report->tasks) EXPECT_EQ(out.result.trials, 0);
  EXPECT_EQ(IndexLog(log).lines, 30);
}

TEST(TuneModel, KilledRunResumesWithoutLosingOrRepeatingRecords) {
  const std::string log = TempPath("tune_model_kill.log");
  const std::vector<ModelTask> tasks = DenseTasks(3, 15);
  const std::vector<std::string> env = {"FAKE_WORKER_WELL_BEHAVED=1", "FAKE_WORKER_DELAY_MS=30"};
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the run to be killed (no threads exist before this point)
    (void)TuneModel(tasks, FakeOptions(log, env));
    _exit(0);
  }
  // Kill it once a few records are in (the log is the only sign of progress we share).
  for (int waited = 0; waited < 2000 && LineCount(log) < 3; ++waited) usleep(5000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before the kill: make it slower";
  absl::StatusOr<ResumeLog> resume = LoadResumeLog(log, true);
  ASSERT_TRUE(resume.ok()) << resume.status();
  const int before = resume->records;
  EXPECT_GT(before, 0);
  EXPECT_LT(before, 45);
  EXPECT_EQ(resume->duplicates, 0);
  TuneModelOptions o = FakeOptions(log, env);
  o.resume = &*resume;
  absl::StatusOr<TuneModelReport> report = TuneModel(tasks, o);
  ASSERT_TRUE(report.ok()) << report.status();
  int resumed = 0;
  for (const TaskOutcome& out : report->tasks) resumed += static_cast<int>(out.resumed);
  EXPECT_EQ(resumed, before);
  ExpectEachOnce(IndexLog(log), tasks, 15);
}

TEST(TuneModel, TimeBudgetSurveysEveryTaskThenSpendsTheRestWithinTheDeadline) {
  const std::string log = TempPath("tune_model_time.log");
  // Two alternatives for one node ("pair") and two single nodes; 10 ms per candidate.
  std::vector<ModelTask> tasks = DenseTasks(4, 0);
  tasks[0].label = tasks[1].label = "pair";
  TuneModelOptions o = FakeOptions(log, {"FAKE_WORKER_WELL_BEHAVED=1", "FAKE_WORKER_DELAY_MS=10"});
  o.total_seconds = 2.0;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TuneModelReport> report = TuneModel(tasks, o);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(report.ok()) << report.status();
  int total = 0;
  for (const TaskOutcome& out : report->tasks) {
    EXPECT_TRUE(out.status.ok()) << out.status;
    EXPECT_GE(out.result.trials, o.batch_size);  // the survey batch
    EXPECT_GE(out.best_index, 0);
    total += out.result.trials;
  }
  EXPECT_GT(total, 4 * o.batch_size);  // the rest of the time was used too
  EXPECT_LT(wall, o.total_seconds + 1.0);
  // Same costs everywhere: a pair's alternative is as close to the best as the other, and each
  // alternative carries the pair's one node, so no task is starved.
  EXPECT_EQ(IndexLog(log).lines, total);
}

// After the survey, the time left goes in two rounds, each weighed by the best times so far:
// a task whose survey batch drew only slow configs (a share under a second in the first round)
// still gets a slice in the second, once the others' bests are known to be no better.
TEST(TuneModel, RestOfTheTimeGoesInTwoRounds) {
  const std::string log = TempPath("tune_model_rounds.log");
  std::vector<ModelTask> tasks = DenseTasks(3, 0);
  TuneModelOptions o = FakeOptions(log, {"FAKE_WORKER_WELL_BEHAVED=1", "FAKE_WORKER_DELAY_MS=10"});
  o.total_seconds = 8.0;  // slices under a second are not started
  std::FILE* progress = std::tmpfile();
  ASSERT_NE(progress, nullptr);
  o.progress = progress;
  absl::StatusOr<TuneModelReport> report = TuneModel(tasks, o);
  ASSERT_TRUE(report.ok()) << report.status();
  std::rewind(progress);
  std::map<std::string, int> slices;  // "task 2/3" -> slices after the survey
  char line[1024];
  while (std::fgets(line, sizeof line, progress) != nullptr) {
    const std::string text = line;
    const size_t at = text.find("] task ");
    if (at == std::string::npos || text.find(" done in ") == std::string::npos) continue;
    ++slices[text.substr(at + 2, text.find(' ', at + 7) - at - 2)];
  }
  std::fclose(progress);
  ASSERT_EQ(slices.size(), 3u);  // every task tuned after the survey
  int most = 0;
  for (const auto& [task, n] : slices) most = std::max(most, n);
  EXPECT_EQ(most, 2);  // and one of them in both rounds
}

// Every candidate goes to the worker with stop_factor x the best time its node has so far, over
// all the node's tasks (the second task of "pair" starts from the first one's best).
TEST(TuneModel, WorkersGetTheNodesEarlyStopBound) {
  const std::string log = TempPath("tune_model_stop.log");
  const std::string journal = TempPath("tune_model_stop_journal.txt");
  std::vector<ModelTask> tasks = DenseTasks(3, 6);
  tasks[0].label = tasks[1].label = "pair";
  TuneModelOptions o =
      FakeOptions(log, {"FAKE_WORKER_WELL_BEHAVED=1", "FAKE_WORKER_JOURNAL=" + journal});
  o.stop_factor = 3;
  ASSERT_TRUE(TuneModel(tasks, o).ok());
  autotvm::LogContents contents;
  ASSERT_TRUE(autotvm::LoadLogFile(log, {.strict = true}, &contents).ok());
  std::map<std::string, std::string> label_of;  // workload key -> label
  for (const ModelTask& t : tasks) label_of[t.task.workload.Key()] = t.label;
  std::ifstream in(journal);
  std::map<std::string, double> best;  // label -> best cost logged so far
  int pid;
  long long seq, index;
  double stop_above;
  size_t k = 0;
  // One slot: requests and records come in the same order.
  while (in >> pid >> seq >> index >> stop_above) {
    ASSERT_LT(k, contents.records.size());
    const autotvm::Record& r = contents.records[k++].record;
    ASSERT_EQ(r.index, index);
    const std::string& label = label_of[r.workload.Key()];
    const auto it = best.find(label);
    EXPECT_DOUBLE_EQ(stop_above, it == best.end() ? 0.0 : 3 * it->second) << k;
    const double cost = r.result.MeanCost();
    best[label] = it == best.end() ? cost : std::min(it->second, cost);
  }
  EXPECT_EQ(k, 18u);
}

TEST(TuneModel, ResumedTimeBudgetSpendsOnlyWhatIsLeft) {
  const std::string log = TempPath("tune_model_time_resume.log");
  const std::vector<ModelTask> tasks = DenseTasks(2, 0);
  TuneModelOptions o = FakeOptions(log, {"FAKE_WORKER_WELL_BEHAVED=1", "FAKE_WORKER_DELAY_MS=10"});
  o.total_seconds = 1.0;
  ASSERT_TRUE(TuneModel(tasks, o).ok());
  absl::StatusOr<ResumeLog> resume = LoadResumeLog(log, true);
  ASSERT_TRUE(resume.ok()) << resume.status();
  const int before = resume->records;
  o.resume = &*resume;
  // The same budget again: (almost) all of it was spent, so little or nothing more is measured.
  absl::StatusOr<TuneModelReport> again = TuneModel(tasks, o);
  ASSERT_TRUE(again.ok()) << again.status();
  int more = 0;
  for (const TaskOutcome& out : again->tasks) {
    if (out.result.trials == 0) {
      EXPECT_EQ(out.trials_total, out.resumed);
    }
    more += out.result.trials;
  }
  EXPECT_LT(more, before / 2);
  // A larger budget continues where the log stopped: no index twice.
  o.total_seconds = 2.0;
  absl::StatusOr<ResumeLog> resume2 = LoadResumeLog(log, true);
  ASSERT_TRUE(resume2.ok());
  o.resume = &*resume2;
  absl::StatusOr<TuneModelReport> longer = TuneModel(tasks, o);
  ASSERT_TRUE(longer.ok()) << longer.status();
  EXPECT_GT(longer->tasks[0].result.trials + longer->tasks[1].result.trials, 0);
  for (const auto& [key, indices] : IndexLog(log).count) {
    for (const auto& [index, n] : indices) EXPECT_EQ(n, 1) << key << " index " << index;
  }
}

TEST(TuneModel, EachTaskMeasuresTheTemplatesFallbackConfigFirst) {
  const std::string log = TempPath("tune_model_fallback.log");
  const std::vector<ModelTask> tasks = DenseTasks(2, 4);
  TuneModelOptions o = FakeOptions(log, {"FAKE_WORKER_WELL_BEHAVED=1"});
  ASSERT_TRUE(TuneModel(tasks, o).ok());
  autotvm::LogContents contents;
  ASSERT_TRUE(autotvm::LoadLogFile(log, {.strict = true}, &contents).ok());
  for (const ModelTask& t : tasks) {
    const OpTemplate* op = FindOpTemplate(t.task.workload.task_name);
    ASSERT_NE(op, nullptr);
    absl::StatusOr<autotvm::ConfigEntity> fallback = op->FallbackConfig(t.task.workload);
    ASSERT_TRUE(fallback.ok()) << fallback.status();
    absl::StatusOr<int64_t> index = t.task.space.IndexOf(*fallback);
    ASSERT_TRUE(index.ok()) << index.status();
    int64_t first = -1, count = 0;
    for (const autotvm::LoadedRecord& r : contents.records) {
      if (r.record.workload.Key() != t.task.workload.Key()) continue;
      if (first < 0) first = r.record.index;
      count += r.record.index == *index;
    }
    EXPECT_EQ(first, *index) << t.label;
    EXPECT_EQ(count, 1) << t.label;  // and never proposed again by the search
  }
}

TEST(TuneModel, NoWorkerIsAnError) {
  TuneModelOptions o =
      FakeOptions(TempPath("tune_model_noworker.log"), {"FAKE_WORKER_FAIL_START=1"});
  absl::StatusOr<TuneModelReport> report = TuneModel(DenseTasks(1, 4), o);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.status().message().find("no CUDA device (fake)"), std::string::npos);
}

TEST(TuneModel, UnknownSearchIsAnError) {
  const std::vector<ModelTask> tasks = DenseTasks(1, 4);
  EXPECT_FALSE(MakeSearch("annealing", tasks[0].task, 1, {}, {}).ok());
  EXPECT_TRUE(MakeSearch("grid", tasks[0].task, 1, {}, {}).ok());
}

}  // namespace
}  // namespace tunejit
