#include "tuner/tune_task.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <vector>

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

// Compiles `batch` on another thread (an invalid future when there is nothing to do).
std::future<void> StartPrecompile(const Task& task, Measurer& measurer,
                                  const std::vector<int64_t>& batch, bool enabled) {
  if (!enabled || batch.empty()) return {};
  std::vector<autotvm::ConfigEntity> configs;
  for (int64_t index : batch) {
    // A bad index is reported when the batch is measured.
    if (absl::StatusOr<autotvm::ConfigEntity> c = task.space.Get(index); c.ok()) {
      configs.push_back(*std::move(c));
    }
  }
  return std::async(std::launch::async,
                    [&measurer, configs = std::move(configs)] { measurer.Precompile(configs); });
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

absl::StatusOr<TuneResult> TuneTask(const Task& task, SearchStrategy& strategy, Measurer& measurer,
                                    const TuneOptions& options) {
  TuneResult r;
  const auto start = std::chrono::steady_clock::now();
  const int batch_size = std::max(1, options.batch_size);
  const int min_trials = options.min_trials < 0 ? batch_size : options.min_trials;
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto out_of_time = [&] {
    return options.max_seconds > 0 && r.trials >= min_trials && elapsed() >= options.max_seconds;
  };
  // A batch compiled ahead that the time left cannot measure would only delay the end (its
  // compile is waited for): judged by the last batch's duration.
  double last_batch_seconds = 0;
  auto worth_pipelining = [&] {
    return options.pipeline_compile && !(options.max_seconds > 0 && last_batch_seconds > 0 &&
                                         elapsed() + last_batch_seconds >= options.max_seconds);
  };
  // Indices of the next batch, at most `budget` of them.
  auto next_batch = [&](int budget) {
    return budget > 0 && strategy.HasNext() ? strategy.NextBatch(std::min(batch_size, budget))
                                            : std::vector<int64_t>();
  };
  std::vector<int64_t> batch = next_batch(options.n_trials);
  std::future<void> compiling = StartPrecompile(task, measurer, batch, options.pipeline_compile);
  while (!batch.empty()) {
    const double batch_start = elapsed();
    if (compiling.valid()) compiling.wait();
    std::vector<int64_t> next;
    std::future<void> next_compiling;
    const bool pipelined = worth_pipelining();
    if (pipelined) {
      next = next_batch(options.n_trials - r.trials - static_cast<int>(batch.size()));
      next_compiling = StartPrecompile(task, measurer, next, true);
    }
    std::vector<autotvm::MeasureResult> results;
    for (int64_t index : batch) {
      if (out_of_time()) break;
      TUNEJIT_ASSIGN_OR_RETURN(autotvm::MeasureResult result,
                               MeasureOne(task, measurer, index, options, r));
      results.push_back(std::move(result));
    }
    strategy.Update(absl::MakeConstSpan(batch).first(results.size()), results);
    PrintProgress(task, r, options.progress);
    if (out_of_time()) {
      if (next_compiling.valid()) next_compiling.wait();  // it reads `measurer`
      break;
    }
    last_batch_seconds = elapsed() - batch_start;
    if (!pipelined) {
      next = next_batch(options.n_trials - r.trials);
      next_compiling = StartPrecompile(task, measurer, next, options.pipeline_compile);
    }
    batch = std::move(next);
    compiling = std::move(next_compiling);
  }
  return r;
}

}  // namespace tunejit
