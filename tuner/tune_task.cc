#include "tuner/tune_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autotvm/log_file.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

void PrintProgress(const Task& task, const TuneResult& r, std::FILE* out) {
  if (out == nullptr) return;
  if (r.best_index < 0) {
    std::fprintf(out, "[%s] trials %d, errors %d, no valid config yet\n",
                 task.workload.task_name.c_str(), r.trials, r.errors);
  } else {
    std::fprintf(out, "[%s] trials %d, errors %d, best %.4f ms, %.1f GFLOP/s (config %lld)\n",
                 task.workload.task_name.c_str(), r.trials, r.errors, r.best_cost * 1e3,
                 r.best_gflops, static_cast<long long>(r.best_index));
  }
  std::fflush(out);
}

// A candidate on its way to be measured.
struct Candidate {
  int64_t index = -1;
  std::shared_future<void> compiled;  // invalid: nothing to wait for
  bool Ready() const {
    return !compiled.valid() ||
           compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
};

std::vector<Candidate> Queue(const Task& task, Measurer& measurer, CompilePool* pool,
                             const std::vector<int64_t>& indices) {
  std::vector<Candidate> out(indices.size());
  std::vector<std::shared_future<void>> compiled;
  if (pool != nullptr) compiled = QueueCompiles(task, measurer, *pool, indices);
  for (size_t i = 0; i < indices.size(); ++i) {
    out[i].index = indices[i];
    if (pool != nullptr) out[i].compiled = compiled[i];
  }
  return out;
}

bool AnyReady(const std::vector<Candidate>& candidates) {
  return std::any_of(candidates.begin(), candidates.end(),
                     [](const Candidate& c) { return c.Ready(); });
}

// The early-stop bound for the next candidate (TuneOptions::stop_factor); 0: none.
double StopAbove(const TuneOptions& options, const TuneResult& r) {
  double best = r.best_cost;  // infinity until a candidate succeeds
  if (options.known_best_seconds > 0) best = std::min(best, options.known_best_seconds);
  return options.stop_factor > 0 && std::isfinite(best) ? options.stop_factor * best : 0;
}

// Measures one index, logs the record, updates the running totals.
absl::StatusOr<autotvm::MeasureResult> MeasureOne(const Task& task, Measurer& measurer,
                                                  int64_t index, const TuneOptions& options,
                                                  TuneResult& r) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::ConfigEntity config, task.space.Get(index));
  measurer.SetStopAbove(StopAbove(options, r));
  Measurement m = measurer.Measure(config);
  autotvm::Record record =
      autotvm::MakeRecord(task.target, task.workload, index, config, m.result, options.tvm_version);
  record.gpu = m.gpu;
  record.device = m.device;
  if (!options.log_path.empty()) {
    TUNEJIT_RETURN_IF_ERROR(autotvm::AppendRecordToLog(options.log_path, record));
  }
  ++r.trials;
  if (m.result.error_no != autotvm::kNoError) {
    ++r.errors;
  } else if (const double cost = m.result.MeanCost(); cost < r.best_cost) {
    r.best_cost = cost;
    r.best_index = index;
    r.best_config = config;
    r.best_gflops = cost > 0 ? task.flops / cost / 1e9 : 0;
  }
  if (options.on_record) options.on_record(record, m);
  TUNEJIT_RETURN_IF_ERROR(measurer.Health());
  return m.result;
}

}  // namespace

std::vector<std::shared_future<void>> QueueCompiles(const Task& task, Measurer& measurer,
                                                    CompilePool& pool,
                                                    const std::vector<int64_t>& indices) {
  std::vector<std::shared_future<void>> out(indices.size());
  const std::string workload = task.workload.Key();
  for (size_t i = 0; i < indices.size(); ++i) {
    // A bad index is reported when it is measured.
    absl::StatusOr<autotvm::ConfigEntity> config = task.space.Get(indices[i]);
    if (!config.ok()) continue;
    std::function<void()> job = measurer.CompileJob(*config);
    if (job) out[i] = pool.Submit(absl::StrCat(workload, "#", indices[i]), std::move(job));
  }
  return out;
}

absl::StatusOr<TuneResult> TuneTask(const Task& task, SearchStrategy& strategy, Measurer& measurer,
                                    const TuneOptions& options) {
  TuneResult r;
  const auto start = std::chrono::steady_clock::now();
  const int batch_size = std::max(1, options.batch_size);
  const int min_trials = options.min_trials < 0 ? batch_size : options.min_trials;
  std::optional<CompilePool> own_pool;
  CompilePool* pool = nullptr;
  if (options.pipeline_compile) {
    pool = options.compile_pool;
    if (pool == nullptr) pool = &own_pool.emplace(0);
  }
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto out_of_time = [&] {
    return options.max_seconds > 0 && r.trials >= min_trials && elapsed() >= options.max_seconds;
  };
  // A batch compiled ahead that the time left cannot measure would only take compile threads
  // from the tasks after this one: judged by the last batch's duration.
  double last_batch_seconds = 0;
  auto worth_pipelining = [&] {
    return options.pipeline_compile && !(options.max_seconds > 0 && last_batch_seconds > 0 &&
                                         elapsed() + last_batch_seconds >= options.max_seconds);
  };
  // The next batch, at most `budget` candidates, with its compiles queued.
  auto next_batch = [&](int budget) {
    std::vector<int64_t> indices;
    if (budget > 0 && strategy.HasNext()) {
      indices = strategy.NextBatch(std::min(batch_size, budget));
    }
    return Queue(task, measurer, pool, indices);
  };
  // The results of the last batch, not yet reported to the strategy.
  std::vector<int64_t> measured;
  std::vector<autotvm::MeasureResult> results;
  auto report = [&] {
    if (!measured.empty()) strategy.Update(measured, results);
    measured.clear();
    results.clear();
  };
  std::vector<Candidate> batch = next_batch(options.n_trials);
  // Pipelined, the strategy's work (reporting batch k-1 and drawing batch k+1, where a cost
  // model refits and anneals: up to a second) runs on a second thread while batch k is measured.
  // Declared after everything the job refers to: an early return waits for it.
  std::future<std::vector<Candidate>> drawing;
  while (!batch.empty()) {
    const double batch_start = elapsed();
    const bool pipelined = worth_pipelining();
    if (pipelined) {
      const int budget = options.n_trials - r.trials - static_cast<int>(batch.size());
      drawing = std::async(std::launch::async,
                           [&, budget, done = std::move(measured), got = std::move(results)] {
                             if (!done.empty()) strategy.Update(done, got);
                             return next_batch(budget);
                           });
      measured.clear();
      results.clear();
    }
    auto next_ready = [&] {
      return drawing.valid() &&
             drawing.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
    };
    std::vector<Candidate> next;
    while (!batch.empty() && !out_of_time()) {
      auto ready =
          std::find_if(batch.begin(), batch.end(), [](const Candidate& c) { return c.Ready(); });
      if (ready == batch.end()) {
        if (next.empty() && next_ready()) next = drawing.get();
        if (AnyReady(next)) break;  // the stragglers go on with the next batch
        batch.front().compiled.wait_for(std::chrono::milliseconds(5));
        continue;
      }
      TUNEJIT_ASSIGN_OR_RETURN(autotvm::MeasureResult result,
                               MeasureOne(task, measurer, ready->index, options, r));
      measured.push_back(ready->index);
      results.push_back(std::move(result));
      batch.erase(ready);
    }
    if (drawing.valid()) next = drawing.get();
    if (!measured.empty()) PrintProgress(task, r, options.progress);
    if (out_of_time()) break;
    last_batch_seconds = elapsed() - batch_start;
    if (!pipelined) {
      report();
      next = next_batch(options.n_trials - r.trials - static_cast<int>(batch.size()));
    }
    batch.insert(batch.end(), next.begin(), next.end());
  }
  if (drawing.valid()) drawing.wait();
  report();  // the strategy sees every measurement (a later slice of the task continues from it)
  return r;
}

}  // namespace tunejit
