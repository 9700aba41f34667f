#include "tuner/tune_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "ops/op_template.h"
#include "tuner/budget.h"
#include "tuner/measure.h"
#include "tuner/model_search.h"

namespace tunejit {
namespace {

using Clock = std::chrono::steady_clock;

// A slice of a time budget shorter than this is not started: it could not measure a batch.
constexpr double kMinSliceSeconds = 1.0;

// The time after the survey is spent in this many rounds, each split by GainWeights over the
// best times so far. One round split by the survey alone kept giving time to an alternative
// that the other template for its node had left far behind (23 s of a 5-minute VGG-16 run on a
// winograd task 1.8x slower than NCHWc), while the last tasks in the order got almost nothing.
constexpr int kRestRounds = 2;

// Candidates per task in the survey: half a batch (at least 4) tells a task's standing, and 24
// tasks x a full batch of 16 would take most of a 5-minute budget.
int SurveyTrials(int batch_size) {
  return std::min(std::max(1, batch_size), std::max(4, batch_size / 2));
}

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
  void AddTransfer(absl::Span<const autotvm::Record> records) override {
    inner_->AddTransfer(records);
  }

 private:
  static constexpr int kMaxDrawsPerPick = 5000;
  std::unique_ptr<SearchStrategy> inner_;
  absl::flat_hash_set<int64_t> skip_;
  std::function<bool(int64_t)> valid_;
};

// Proposes `first` (the template's fallback config, the baseline any tuning must beat) before the
// inner strategy's picks, and hands out a batch drawn ahead of time (to compile it while another
// task is measured) before asking the inner strategy again.
class PrefetchSearch : public SearchStrategy {
 public:
  PrefetchSearch(std::unique_ptr<SearchStrategy> inner, std::optional<int64_t> first)
      : inner_(std::move(inner)), first_(first) {
    if (first_) ahead_.push_back(*first_);
  }
  // Draws up to `n` indices now (fewer when some are already drawn); NextBatch returns them first.
  const std::vector<int64_t>& Prefetch(int n) {
    if (static_cast<int>(ahead_.size()) < n && inner_->HasNext()) {
      for (int64_t i : inner_->NextBatch(n - static_cast<int>(ahead_.size()))) {
        if (i != first_) ahead_.push_back(i);
      }
    }
    return ahead_;
  }
  std::vector<int64_t> NextBatch(int n) override {
    if (ahead_.empty()) {
      std::vector<int64_t> batch = inner_->NextBatch(n);
      std::erase(batch, first_.value_or(-1));
      return batch;
    }
    Prefetch(n);
    const size_t take = std::min(ahead_.size(), static_cast<size_t>(std::max(0, n)));
    std::vector<int64_t> batch(ahead_.begin(), ahead_.begin() + take);
    ahead_.erase(ahead_.begin(), ahead_.begin() + take);
    return batch;
  }
  void Update(absl::Span<const int64_t> indices,
              absl::Span<const autotvm::MeasureResult> results) override {
    inner_->Update(indices, results);
  }
  bool HasNext() const override { return !ahead_.empty() || inner_->HasNext(); }
  void AddTransfer(absl::Span<const autotvm::Record> records) override {
    inner_->AddTransfer(records);
  }

 private:
  std::unique_ptr<SearchStrategy> inner_;
  std::optional<int64_t> first_;
  std::vector<int64_t> ahead_;
};

// The index of the template's fallback config, unless the resumed log measured it already.
std::optional<int64_t> FallbackIndex(const Task& task, const ResumeLog* resume) {
  const OpTemplate* op = FindOpTemplate(task.workload.task_name);
  if (op == nullptr) return std::nullopt;
  absl::StatusOr<autotvm::ConfigEntity> config = op->FallbackConfig(task.workload);
  if (!config.ok()) return std::nullopt;
  absl::StatusOr<int64_t> index = task.space.IndexOf(*config);
  if (!index.ok()) return std::nullopt;
  if (resume != nullptr && resume->Measured(task.workload.Key()).contains(*index)) {
    return std::nullopt;
  }
  return *index;
}

std::string FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

// How a pass gives each task its budget (see TuneModelOptions::total_seconds).
enum class Pass {
  kFixed,   // each ModelTask's own trials
  kSurvey,  // one batch per task
  kRest,    // the time left, by weight, as tasks start
};

// What one task may spend in one pass.
struct Slice {
  int n_trials = 0;  // <= 0: nothing
  double max_seconds = 0;
};

// Shared by the slot threads.
struct RunState {
  const std::vector<ModelTask>* tasks = nullptr;
  const TuneModelOptions* options = nullptr;
  CompilePool* pool = nullptr;
  int slots = 1;
  // The pass under way: task indices in dispatch order, and for kRest each position's weight and
  // the weight of the positions from it on.
  Pass pass = Pass::kFixed;
  std::vector<size_t> order;
  std::vector<double> weight, pending_weight;
  Clock::time_point deadline;
  std::atomic<size_t> next{0};     // next position in `order`
  std::atomic<bool> abort{false};  // the log cannot be written: stop everywhere
  absl::Mutex print_mu;
  // Per task; each written by one slot thread at a time (a task is in a pass's order once).
  std::vector<TaskOutcome> outcomes;
  std::vector<std::unique_ptr<PrefetchSearch>> searches;  // created when first tuned
  std::vector<double> allotted;                           // seconds of the current slice
  std::vector<char> taken;                                // reached by a slot in this pass
  std::vector<char> accounted;                            // earlier records folded in
  // Best seconds per node label over all its tasks (for early stop); updated by every slot.
  absl::Mutex best_mu;
  absl::flat_hash_map<std::string, double> node_best ABSL_GUARDED_BY(best_mu);
  // This run's records, for transfer between the workloads of one task name; per task, how many
  // of them it has been offered.
  absl::Mutex records_mu;
  std::vector<autotvm::Record> records ABSL_GUARDED_BY(records_mu);
  std::vector<size_t> offered;
};

// Gives task i's search the records of its task name's other workloads measured in this run
// since it was last offered any: the tasks tuned before it teach its cost model which configs
// are fast before it has measured many of its own.
void OfferTransfer(RunState& run, size_t i) {
  const autotvm::Workload& workload = (*run.tasks)[i].task.workload;
  const std::string key = workload.Key();
  std::vector<autotvm::Record> fresh;
  {
    absl::MutexLock lock(&run.records_mu);
    for (size_t r = run.offered[i]; r < run.records.size(); ++r) {
      const autotvm::Record& record = run.records[r];
      if (record.workload.task_name == workload.task_name && record.workload.Key() != key) {
        fresh.push_back(record);
      }
    }
    run.offered[i] = run.records.size();
  }
  if (fresh.empty()) return;
  run.outcomes[i].transferred += static_cast<int64_t>(fresh.size());
  run.searches[i]->AddTransfer(fresh);
}

void NoteNodeBest(RunState& run, const std::string& label, double seconds) {
  if (!(seconds > 0)) return;
  absl::MutexLock lock(&run.best_mu);
  auto [it, inserted] = run.node_best.try_emplace(label, seconds);
  if (!inserted) it->second = std::min(it->second, seconds);
}

double NodeBest(RunState& run, const std::string& label) {
  absl::MutexLock lock(&run.best_mu);
  auto it = run.node_best.find(label);
  return it == run.node_best.end() ? 0.0 : it->second;
}

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
  const double allotted = run.allotted[i];
  double left = 0;
  if (allotted > 0) left = std::max(0.0, allotted - elapsed);
  if (t.trials > 0 && out.result.trials > 0) {
    const double per_trial = elapsed / out.result.trials;
    const double by_trials = per_trial * std::max<int64_t>(0, t.trials - out.trials_total);
    left = allotted > 0 ? std::min(left, by_trials) : by_trials;
  }
  const std::string best =
      out.best_index < 0
          ? std::string("no valid config yet")
          : absl::StrFormat("best %.4f ms, %.1f GFLOP/s", out.best_cost * 1e3, out.best_gflops);
  const std::string budget = t.trials > 0 ? absl::StrCat("/", t.trials) : "";
  absl::MutexLock lock(&run.print_mu);
  std::fprintf(f, "[slot %d] %stask %zu/%zu %s %s: %lld%s trials, %d errors, %s, %s %s\n", out.slot,
               run.pass == Pass::kSurvey ? "survey " : "", i + 1, run.tasks->size(),
               t.task.workload.task_name.c_str(), t.label.c_str(),
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

const std::vector<autotvm::Record>& EarlierRecords(const RunState& run, size_t i) {
  static const std::vector<autotvm::Record> kNone;
  const ResumeLog* resume = run.options->resume;
  return resume != nullptr ? resume->Records((*run.tasks)[i].task.workload.Key()) : kNone;
}

// Folds the task's records from the resumed log into its outcome, once.
void AccountEarlier(RunState& run, size_t i) {
  if (run.accounted[i]) return;
  run.accounted[i] = 1;
  const std::vector<autotvm::Record>& earlier = EarlierRecords(run, i);
  for (const autotvm::Record& r : earlier) Account((*run.tasks)[i].task, r, run.outcomes[i]);
  run.outcomes[i].resumed = static_cast<int64_t>(earlier.size());
  NoteNodeBest(run, (*run.tasks)[i].label, run.outcomes[i].best_cost);
}

// The task's search strategy, made on first use (false, with the outcome's status, on failure).
bool EnsureSearch(RunState& run, size_t i, const WorkerHello& hello) {
  if (run.searches[i] != nullptr) return true;
  const TuneModelOptions& o = *run.options;
  const Task& task = (*run.tasks)[i].task;
  absl::StatusOr<std::unique_ptr<SearchStrategy>> search =
      MakeSearch(o.search, task, o.seed + i, EarlierRecords(run, i), SameTaskName(o.resume, task),
                 TemplateValidity(task, hello.limits));
  if (!search.ok()) {
    run.outcomes[i].status = search.status();
    return false;
  }
  run.searches[i] =
      std::make_unique<PrefetchSearch>(*std::move(search), FallbackIndex(task, o.resume));
  return true;
}

// The budget of the task at position k of the pass, computed as it starts.
Slice SliceFor(const RunState& run, size_t k) {
  const size_t i = run.order[k];
  const ModelTask& mt = (*run.tasks)[i];
  const TaskOutcome& out = run.outcomes[i];
  Slice s;
  s.n_trials = mt.trials > 0
                   ? static_cast<int>(std::clamp<int64_t>(mt.trials - out.trials_total, 0,
                                                          std::numeric_limits<int>::max()))
                   : std::numeric_limits<int>::max();
  switch (run.pass) {
    case Pass::kFixed:  // the trial cap alone
      break;
    case Pass::kSurvey:
      s.n_trials = std::min(s.n_trials, SurveyTrials(run.options->batch_size));
      break;
    case Pass::kRest: {
      const double remaining = std::chrono::duration<double>(run.deadline - Clock::now()).count();
      s.max_seconds = ShareOfRemaining(remaining, run.slots, run.weight[k], run.pending_weight[k]);
      // Too little to measure a batch: leave the time to the tasks after it.
      if (s.max_seconds < kMinSliceSeconds) s.n_trials = 0;
      break;
    }
  }
  return s;
}

void Merge(const TuneResult& more, TuneResult& total) {
  total.trials += more.trials;
  total.errors += more.errors;
  if (more.best_index >= 0 && (total.best_index < 0 || more.best_cost < total.best_cost)) {
    total.best_index = more.best_index;
    total.best_config = more.best_config;
    total.best_cost = more.best_cost;
    total.best_gflops = more.best_gflops;
  }
}

// Tunes the task at position k of the pass for its slice of the budget.
void TuneOne(RunState& run, size_t k, WorkerClient& worker, const WorkerHello& hello, int slot) {
  const TuneModelOptions& o = *run.options;
  const size_t i = run.order[k];
  const ModelTask& mt = (*run.tasks)[i];
  TaskOutcome& out = run.outcomes[i];
  out.slot = slot;
  run.taken[i] = 1;
  AccountEarlier(run, i);
  const Slice slice = SliceFor(run, k);
  if (slice.n_trials <= 0 || !EnsureSearch(run, i, hello)) return;
  OfferTransfer(run, i);  // what the task before it measured (the rest came with its prefetch)
  IsolatedMeasurer measurer(worker, mt.task,
                            {.compiler = o.compiler, .limits = hello.limits, .faults = o.faults});
  TuneOptions t;
  t.compile_pool = run.pool;
  t.n_trials = slice.n_trials;
  t.max_seconds = slice.max_seconds;
  t.batch_size = o.batch_size;
  t.log_path = o.log_path;
  t.tvm_version = o.tvm_version;
  t.stop_factor = o.stop_factor;
  t.known_best_seconds = NodeBest(run, mt.label);
  // The survey made sure every task has records: later slices need not finish a batch.
  if (run.pass == Pass::kRest) t.min_trials = 1;
  run.allotted[i] = slice.max_seconds;
  const int trials_before = out.result.trials;
  const int64_t total_before = out.trials_total;
  const Clock::time_point start = Clock::now();
  t.on_record = [&](const autotvm::Record& r, const Measurement& m) {
    {
      absl::MutexLock lock(&run.records_mu);
      run.records.push_back(r);
    }
    Account(mt.task, r, out);
    NoteNodeBest(run, mt.label, out.best_cost);
    if (!r.ok()) ++out.result.errors;  // live count for progress lines (TuneTask's at the end)
    if (r.result.error_no == autotvm::kRunTimeout) ++out.timeouts;
    if (r.result.error_no == autotvm::kRuntimeDevice) ++out.faults;
    if (!r.ok() && (r.result.error_no >= autotvm::kRuntimeDevice) && o.progress != nullptr) {
      absl::MutexLock lock(&run.print_mu);
      std::fprintf(o.progress, "[slot %d] config %lld: error %d %s: %s\n", slot,
                   static_cast<long long>(r.index), r.result.error_no,
                   autotvm::MeasureErrorName(r.result.error_no), m.message.c_str());
    }
    const int64_t now = out.trials_total - total_before;
    if (now % std::max(1, o.batch_size) == 0) {
      out.result.trials = trials_before + static_cast<int>(now);
      PrintProgress(run, i, out, start, false);
    }
  };
  const int errors_before = out.result.errors;
  absl::StatusOr<TuneResult> result = TuneTask(mt.task, *run.searches[i], measurer, t);
  out.seconds += std::chrono::duration<double>(Clock::now() - start).count();
  out.result.trials = trials_before;
  out.result.errors = errors_before;
  if (!result.ok()) {
    out.status = result.status();
    out.result.trials += static_cast<int>(out.trials_total - total_before);
    return;
  }
  Merge(*result, out.result);
  PrintProgress(run, i, out, start, true);
}

// Prepares the task at position k while the slot measures the task before it: offers it the
// run's new records of its task name's other workloads (fitting a cost model takes a while:
// async), draws its first batch and queues that batch's compiles.
std::future<void> QueueFirstBatch(RunState& run, size_t k, WorkerClient& worker,
                                  const WorkerHello& hello) {
  if (k >= run.order.size()) return {};
  return std::async(std::launch::async, [&run, i = run.order[k], &worker, &hello] {
    AccountEarlier(run, i);
    if (!EnsureSearch(run, i, hello)) return;
    OfferTransfer(run, i);
    const TuneModelOptions& o = *run.options;
    if (o.compiler == nullptr) return;
    const Task& task = (*run.tasks)[i].task;
    const int n = run.pass == Pass::kSurvey ? SurveyTrials(o.batch_size) : o.batch_size;
    IsolatedMeasurer measurer(worker, task,
                              {.compiler = o.compiler, .limits = hello.limits, .faults = o.faults});
    QueueCompiles(task, measurer, *run.pool, run.searches[i]->Prefetch(n));
  });
}

// One slot's share of a pass: positions from the shared counter until none is left.
void RunPass(RunState& run, WorkerClient& worker, const WorkerHello& hello, int slot) {
  size_t k = run.next.fetch_add(1);
  while (k < run.order.size() && !run.abort.load()) {
    // The slot reserves its next task now, to compile that task's first batch while this one is
    // measured.
    const size_t ahead = run.next.fetch_add(1);
    std::future<void> prefetch = QueueFirstBatch(run, ahead, worker, hello);
    const size_t i = run.order[k];
    TuneOne(run, k, worker, hello, slot);
    if (prefetch.valid()) prefetch.wait();
    const absl::Status& s = run.outcomes[i].status;
    if (!s.ok() && worker.Health().ok()) run.abort = true;  // a log write failed: stop all
    if (!worker.Health().ok()) break;                       // this slot is finished
    k = ahead;
  }
}

// Runs the pass in run.order on every slot whose worker starts; tasks no slot reached get an error.
void RunPassOnSlots(RunState& run, std::vector<std::unique_ptr<WorkerClient>>& workers) {
  run.next = 0;
  std::fill(run.taken.begin(), run.taken.end(), 0);
  std::vector<std::thread> threads;
  for (size_t s = 0; s < workers.size(); ++s) {
    threads.emplace_back([&run, &workers, s] {
      WorkerClient& worker = *workers[s];
      absl::StatusOr<WorkerHello> hello = worker.Start();
      if (!hello.ok()) {
        absl::MutexLock lock(&run.print_mu);
        if (run.options->progress != nullptr) {
          std::fprintf(run.options->progress, "[slot %zu] worker does not start, slot unused: %s\n",
                       s, std::string(hello.status().message()).c_str());
        }
        return;
      }
      RunPass(run, worker, *hello, static_cast<int>(s));
    });
  }
  for (std::thread& t : threads) t.join();
  if (run.abort.load()) return;
  for (size_t i : run.order) {
    if (!run.taken[i] && run.outcomes[i].status.ok()) {
      run.outcomes[i].status = absl::UnavailableError("not tuned: no worker was left to run it");
    }
  }
}

// Positions in order of descending weight, with the pending-weight suffix sums kRest needs.
void SetOrder(RunState& run, const std::vector<double>& weights) {
  run.order.clear();
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] > 0) run.order.push_back(i);
  }
  std::stable_sort(run.order.begin(), run.order.end(),
                   [&](size_t a, size_t b) { return weights[a] > weights[b]; });
  run.weight.assign(run.order.size(), 0);
  run.pending_weight.assign(run.order.size() + 1, 0);
  for (size_t k = 0; k < run.order.size(); ++k) run.weight[k] = weights[run.order[k]];
  for (size_t k = run.order.size(); k-- > 0;) {
    run.pending_weight[k] = run.pending_weight[k + 1] + run.weight[k];
  }
}

// The two passes of a time budget: a survey batch for each task the resumed log has no record
// of (biggest first), then what is left of the budget by GainWeights over the survey's results.
void RunTimeBudget(RunState& run, std::vector<std::unique_ptr<WorkerClient>>& workers) {
  const TuneModelOptions& o = *run.options;
  const std::vector<ModelTask>& tasks = *run.tasks;
  const Clock::time_point start = Clock::now();
  double spent = 0;
  std::vector<double> survey(tasks.size(), 0);
  for (size_t i = 0; i < tasks.size(); ++i) {
    const std::string key = tasks[i].task.workload.Key();
    if (o.resume != nullptr) spent += o.resume->Seconds(key);
    const bool seen = o.resume != nullptr && !o.resume->Records(key).empty();
    if (!seen) survey[i] = std::max(tasks[i].task.flops, 1.0);
  }
  run.deadline = start + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(o.total_seconds - spent));
  run.pass = Pass::kSurvey;
  SetOrder(run, survey);
  RunPassOnSlots(run, workers);
  if (run.abort.load()) return;
  const double survey_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const double left = std::chrono::duration<double>(run.deadline - Clock::now()).count();
  if (o.progress != nullptr) {
    std::fprintf(o.progress,
                 "tune: survey of %zu tasks took %s (%s spent before); %s left for the rest\n",
                 run.order.size(), FormatDuration(survey_seconds).c_str(),
                 FormatDuration(spent).c_str(), FormatDuration(std::max(0.0, left)).c_str());
  }
  const Clock::time_point end = run.deadline;
  for (int round = 0; round < kRestRounds && !run.abort.load(); ++round) {
    const double round_left = std::chrono::duration<double>(end - Clock::now()).count();
    if (round_left < kMinSliceSeconds) break;
    run.deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(round_left / (kRestRounds - round)));
    std::vector<std::string> labels;
    std::vector<double> best;
    for (size_t i = 0; i < tasks.size(); ++i) {
      AccountEarlier(run, i);
      labels.push_back(tasks[i].label);
      best.push_back(run.outcomes[i].best_index >= 0 ? run.outcomes[i].best_cost : 0.0);
    }
    run.pass = Pass::kRest;
    SetOrder(run, GainWeights(labels, best));
    RunPassOnSlots(run, workers);
  }
  run.deadline = end;
}

}  // namespace

std::function<bool(int64_t)> TemplateValidity(const Task& task, const DeviceLimits& limits) {
  const OpTemplate* op = FindOpTemplate(task.workload.task_name);
  if (op == nullptr) return {};
  return [op, &task, limits](int64_t index) {
    absl::StatusOr<autotvm::ConfigEntity> config = task.space.Get(index);
    return config.ok() &&
           op->Specialize(task.workload, *config, limits, MeasureEpilogue(task.workload)).ok();
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

  // Declared before the run state: queued compiles refer to nothing in it, but the pool's end
  // (waiting for the running compiles) must come after the last slot stops using it.
  CompilePool pool(options.compile_threads);
  RunState run;
  run.tasks = &tasks;
  run.options = &options;
  run.pool = &pool;
  run.slots = report.slots;
  run.outcomes.resize(tasks.size());
  run.searches.resize(tasks.size());
  run.allotted.assign(tasks.size(), 0);
  run.taken.assign(tasks.size(), 0);
  run.accounted.assign(tasks.size(), 0);
  run.offered.assign(tasks.size(), 0);
  if (options.total_seconds > 0) {
    RunTimeBudget(run, workers);
  } else {
    run.pass = Pass::kFixed;
    SetOrder(run, std::vector<double>(tasks.size(), 1.0));
    RunPassOnSlots(run, workers);
  }
  for (size_t i = 0; i < tasks.size(); ++i) AccountEarlier(run, i);
  for (const auto& w : workers) {
    w->Stop();
    report.restarts += w->restarts();
  }
  report.tasks = std::move(run.outcomes);
  return report;
}

}  // namespace tunejit
