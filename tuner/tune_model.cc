#include "tuner/tune_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <limits>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "ops/op_template.h"
#include "tuner/model_search.h"

namespace tunejit {
namespace {

using Clock = std::chrono::steady_clock;

// Filters an inner strategy's proposals through a set of indices measured in an earlier run.
class SkipSearch : public SearchStrategy {
 public:
  SkipSearch(std::unique_ptr<SearchStrategy> inner, absl::flat_hash_set<int64_t> skip,
             std::function<bool(int64_t)> valid)
      : inner_(std::move(inner)), skip_(std::move(skip)), valid_(std::move(valid)) {}
  // Drops skipped and (when a validity check is given) invalid indices. The draws are bounded so
  // a space with almost nothing valid ends the task instead of spinning.
  std::vector<int64_t> NextBatch(int n) override {
    std::vector<int64_t> batch;
    int64_t draws = 0;
    const int64_t max_draws = int64_t{kMaxDrawsPerPick} * n;
    while (static_cast<int>(batch.size()) < n && inner_->HasNext() && draws < max_draws) {
      std::vector<int64_t> next = inner_->NextBatch(n - static_cast<int>(batch.size()));
      draws += static_cast<int64_t>(next.size());
      for (int64_t i : next) {
        if (!skip_.contains(i) && (!valid_ || valid_(i))) batch.push_back(i);
      }
      if (next.empty()) break;
    }
    return batch;
  }
  void Update(absl::Span<const int64_t> indices,
              absl::Span<const autotvm::MeasureResult> results) override {
    inner_->Update(indices, results);
  }
  bool HasNext() const override { return inner_->HasNext(); }

 private:
  static constexpr int kMaxDrawsPerPick = 5000;
  std::unique_ptr<SearchStrategy> inner_;
  absl::flat_hash_set<int64_t> skip_;
  std::function<bool(int64_t)> valid_;
};

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// Shared by the slot threads.
struct RunState {
  const std::vector<ModelTask>* tasks = nullptr;
  const TuneModelOptions* options = nullptr;
  std::atomic<size_t> next_task{0};
  std::atomic<bool> abort{false};  // the log cannot be written: stop everywhere
  absl::Mutex print_mu;
  std::vector<TaskOutcome> outcomes;  // one per task; each written by one slot thread only
};

// Folds one record into the outcome (best, curve, counters).
void Account(const Task& task, const autotvm::Record& r, TaskOutcome& out) {
  ++out.trials_total;
  if (r.ok()) {
    const double cost = r.result.MeanCost();
    if (out.best_index < 0 || cost < out.best_cost) {
      out.best_cost = cost;
      out.best_index = r.index;
      out.best_gflops = cost > 0 ? task.flops / cost / 1e9 : 0;
    }
  }
  if (out.best_index >= 0) out.curve.emplace_back(out.trials_total, out.best_cost * 1e3);
}

void PrintProgress(RunState& run, size_t i, const TaskOutcome& out, Clock::time_point start,
                   bool final) {
  std::FILE* f = run.options->progress;
  if (f == nullptr) return;
  const ModelTask& t = (*run.tasks)[i];
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  double left = 0;
  if (t.seconds > 0) left = std::max(0.0, t.seconds - elapsed);
  if (t.trials > 0 && out.result.trials > 0) {
    const double per_trial = elapsed / out.result.trials;
    const double by_trials = per_trial * std::max<int64_t>(0, t.trials - out.trials_total);
    left = t.seconds > 0 ? std::min(left, by_trials) : by_trials;
  }
  const std::string best =
      out.best_index < 0
          ? std::string("no valid config yet")
          : absl::StrFormat("best %.4f ms, %.1f GFLOP/s", out.best_cost * 1e3, out.best_gflops);
  const std::string budget = t.trials > 0 ? absl::StrCat("/", t.trials) : "";
  absl::MutexLock lock(&run.print_mu);
  std::fprintf(f, "[slot %d] task %zu/%zu %s %s: %lld%s trials, %d errors, %s, %s %s\n", out.slot,
               i + 1, run.tasks->size(), t.task.workload.task_name.c_str(), t.label.c_str(),
               static_cast<long long>(out.trials_total), budget.c_str(), out.result.errors,
               best.c_str(), final ? "done in" : "left",
               FormatDuration(final ? elapsed : left).c_str());
  std::fflush(f);
}

// Earlier records of the task name's other workloads (transfer learning for "xgb").
std::vector<autotvm::Record> SameTaskName(const ResumeLog* resume, const Task& task) {
  std::vector<autotvm::Record> out;
  if (resume == nullptr) return out;
  const std::string key = task.workload.Key();
  for (autotvm::Record& r : resume->AllRecords()) {
    if (r.workload.task_name == task.workload.task_name && r.workload.Key() != key) {
      out.push_back(std::move(r));
    }
  }
  return out;
}

void TuneOne(RunState& run, size_t i, WorkerClient& worker, const WorkerHello& hello, int slot) {
  const TuneModelOptions& o = *run.options;
  const ModelTask& mt = (*run.tasks)[i];
  TaskOutcome& out = run.outcomes[i];
  out.slot = slot;
  const std::string key = mt.task.workload.Key();
  static const std::vector<autotvm::Record> kNone;
  const std::vector<autotvm::Record>& earlier = o.resume ? o.resume->Records(key) : kNone;
  for (const autotvm::Record& r : earlier) Account(mt.task, r, out);
  out.resumed = static_cast<int64_t>(earlier.size());
  TuneOptions t;
  t.n_trials = mt.trials > 0 ? static_cast<int>(std::max<int64_t>(0, mt.trials - out.resumed))
                             : std::numeric_limits<int>::max();
  if (mt.seconds > 0) {
    t.max_seconds = mt.seconds - (o.resume ? o.resume->Seconds(key) : 0.0);
    if (t.max_seconds <= 0) t.n_trials = 0;
  }
  if (t.n_trials <= 0) return;  // the budget was spent by the earlier run
  absl::StatusOr<std::unique_ptr<SearchStrategy>> search =
      MakeSearch(o.search, mt.task, o.seed + i, earlier, SameTaskName(o.resume, mt.task),
                 TemplateValidity(mt.task, hello.limits));
  if (!search.ok()) {
    out.status = search.status();
    return;
  }
  IsolatedMeasurer measurer(worker, mt.task,
                            {.compiler = o.compiler,
                             .limits = hello.limits,
                             .precompile_threads = o.precompile_threads,
                             .faults = o.faults});
  t.batch_size = o.batch_size;
  t.log_path = o.log_path;
  t.tvm_version = o.tvm_version;
  const Clock::time_point start = Clock::now();
  t.on_record = [&](const autotvm::Record& r, const Measurement& m) {
    Account(mt.task, r, out);
    if (!r.ok()) ++out.result.errors;  // live count for progress lines (TuneTask's at the end)
    if (r.result.error_no == autotvm::kRunTimeout) ++out.timeouts;
    if (r.result.error_no == autotvm::kRuntimeDevice) ++out.faults;
    if (!r.ok() && (r.result.error_no >= autotvm::kRuntimeDevice) && o.progress != nullptr) {
      absl::MutexLock lock(&run.print_mu);
      std::fprintf(o.progress, "[slot %d] config %lld: error %d %s: %s\n", slot,
                   static_cast<long long>(r.index), r.result.error_no,
                   autotvm::MeasureErrorName(r.result.error_no), m.message.c_str());
    }
    if ((out.trials_total - out.resumed) % std::max(1, o.batch_size) == 0) {
      out.result.trials = static_cast<int>(out.trials_total - out.resumed);
      PrintProgress(run, i, out, start, false);
    }
  };
  absl::StatusOr<TuneResult> result = TuneTask(mt.task, **search, measurer, t);
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (!result.ok()) {
    out.status = result.status();
    out.result.trials = static_cast<int>(out.trials_total - out.resumed);
    return;
  }
  out.result = *result;
  PrintProgress(run, i, out, start, true);
}

void RunSlot(RunState& run, WorkerClient& worker, int slot) {
  absl::StatusOr<WorkerHello> hello = worker.Start();
  if (!hello.ok()) {
    absl::MutexLock lock(&run.print_mu);
    if (run.options->progress != nullptr) {
      std::fprintf(run.options->progress, "[slot %d] worker does not start, slot unused: %s\n",
                   slot, std::string(hello.status().message()).c_str());
    }
    return;
  }
  while (!run.abort.load()) {
    const size_t i = run.next_task.fetch_add(1);
    if (i >= run.tasks->size()) break;
    TuneOne(run, i, worker, *hello, slot);
    const absl::Status& s = run.outcomes[i].status;
    if (!s.ok() && worker.Health().ok()) run.abort = true;  // a log write failed: stop all
    if (!worker.Health().ok()) break;                       // this slot is finished
  }
  worker.Stop();
}

}  // namespace

std::function<bool(int64_t)> TemplateValidity(const Task& task, const DeviceLimits& limits) {
  const OpTemplate* op = FindOpTemplate(task.workload.task_name);
  if (op == nullptr) return {};
  return [op, &task, limits](int64_t index) {
    absl::StatusOr<autotvm::ConfigEntity> config = task.space.Get(index);
    return config.ok() && op->Specialize(task.workload, *config, limits, Epilogue{}).ok();
  };
}

absl::StatusOr<std::unique_ptr<SearchStrategy>> MakeSearch(
    const std::string& name, const Task& task, uint64_t seed,
    const std::vector<autotvm::Record>& same_workload,
    const std::vector<autotvm::Record>& same_task_name, std::function<bool(int64_t)> valid) {
  absl::flat_hash_set<int64_t> skip;
  for (const autotvm::Record& r : same_workload) skip.insert(r.index);
  std::unique_ptr<SearchStrategy> inner;
  if (name == "random") {
    inner = std::make_unique<RandomSearch>(task.space.size(), seed);
  } else if (name == "grid") {
    inner = std::make_unique<GridSearch>(task.space.size());
  } else if (name == "xgb") {
    ModelSearchOptions model_options;
    model_options.seed = seed;
    auto model = std::make_unique<ModelGuidedSearch>(task.space, model_options);
    model->SetValidity(std::exchange(valid, {}));  // it filters its own proposals: once is enough
    if (!same_task_name.empty()) model->AddTransferHistory(same_task_name, false);
    if (!same_workload.empty()) model->AddTransferHistory(same_workload, true);
    inner = std::move(model);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown search '", name, "': use xgb, random or grid"));
  }
  return std::make_unique<SkipSearch>(std::move(inner), std::move(skip), std::move(valid));
}

absl::StatusOr<TuneModelReport> TuneModel(const std::vector<ModelTask>& tasks,
                                          const TuneModelOptions& options) {
  if (options.log_path.empty()) return absl::InvalidArgumentError("TuneModel needs a log path");
  auto slot_worker = [&](int gpu) {
    WorkerOptions w = options.worker;
    w.argv.push_back("--gpu");
    w.argv.push_back(std::to_string(gpu));
    return std::make_unique<WorkerClient>(std::move(w));
  };
  // The first worker tells how many GPUs there are; the parent never asks CUDA itself.
  std::vector<std::unique_ptr<WorkerClient>> workers;
  workers.push_back(slot_worker(0));
  absl::StatusOr<WorkerHello> hello = workers[0]->Start();
  if (!hello.ok()) return hello.status();
  TuneModelReport report;
  report.device = hello->device;
  report.gpus =
      options.max_gpus > 0 ? std::min(options.max_gpus, hello->device_count) : hello->device_count;
  report.slots = report.gpus * std::max(1, options.workers_per_gpu);
  for (int s = 1; s < report.slots; ++s) workers.push_back(slot_worker(s % report.gpus));

  RunState run;
  run.tasks = &tasks;
  run.options = &options;
  run.outcomes.resize(tasks.size());
  std::vector<std::thread> threads;
  for (int s = 0; s < report.slots; ++s) {
    threads.emplace_back([&run, &workers, s] { RunSlot(run, *workers[s], s); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& w : workers) report.restarts += w->restarts();
  for (TaskOutcome& out : run.outcomes) {
    if (out.slot < 0)
      out.status = absl::UnavailableError("not tuned: no worker was left to run it");
  }
  report.tasks = std::move(run.outcomes);
  return report;
}

}  // namespace tunejit
