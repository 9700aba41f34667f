// File: tuner/model_search.h
// Model-guided search, as AutoTVM's XGBTuner + SimulatedAnnealingOptimizer: until enough
// measurements exist it proposes random configs; then, at the first NextBatch after new data
// (Update, transfer history), it retrains the cost model (tuner/cost_model.h) on all
// measurements so far (plus any transfer history), runs
// simulated annealing over the space (parallel chains of random-neighbour moves, accepting worse
// points with a temperature that falls to 0) keeping the top `plan_size` predicted configs not yet
// measured, and serves batches from that plan. Each batch keeps a fraction of random configs
// (epsilon-greedy) and spreads its picks (no two in one batch closer than `diversity` knobs), as
// AutoTVM's diversity-aware selection does.
//
//   ModelGuidedSearch search(task.space, {.seed = 1});
//   search.AddTransferHistory(old_records_of_same_task_name);   // optional warm start
//   TuneTask(task, search, measurer, options);                  // NextBatch / Update loop
#ifndef TUNEJIT_TUNER_MODEL_SEARCH_H_
#define TUNEJIT_TUNER_MODEL_SEARCH_H_

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "autotvm/config_space.h"
#include "autotvm/record.h"
#include "tuner/cost_model.h"
#include "tuner/search.h"

namespace tunejit {

struct ModelSearchOptions {
  uint64_t seed = 1;
  int plan_size = 64;   // configs kept from each annealing run
  int min_train = 16;   // measurements before the model is trusted
  int sa_chains = 128;  // parallel annealing points
  int sa_steps = 300;   // moves per chain
  double sa_start_temperature = 1.0;
  double epsilon = 0.05;  // fraction of each batch drawn at random
  // Min knob differences between picks of one batch (0 and 1: off; 2: no two neighbours).
  int diversity = 1;
  CostModelOptions model;
};

class ModelGuidedSearch : public SearchStrategy {
 public:
  ModelGuidedSearch(const autotvm::ConfigSpace& space, ModelSearchOptions options);
  // Measurements of other workloads of the same task name (or of this one from an earlier run):
  // training data from the start. Configs must have this space's knobs (others are skipped).
  // Indices measured before (same workload) are also marked visited, so they are not re-proposed.
  // Other workloads' records are featurized against their own space (BuildConfigSpace of the
  // record's workload and target; records whose space cannot be built are skipped) and their costs
  // are normalized per workload, so only relative speed transfers. Valid records count towards
  // min_train: with enough history the model is fitted here, before the first batch.
  void AddTransferHistory(absl::Span<const autotvm::Record> records, bool same_workload);
  void AddTransfer(absl::Span<const autotvm::Record> records) override {
    AddTransferHistory(records, false);
  }
  // Configs the template would reject (autotvm: INSTANTIATION_ERROR) never enter the plan: in the
  // big spaces of the int8 templates only 1-3% of configs are valid, and measuring the others
  // teaches the model nothing about speed. Random picks skip them too (within a bounded number of
  // draws). Unset: every config is a candidate.
  void SetValidity(std::function<bool(int64_t)> valid) { valid_ = std::move(valid); }

  std::vector<int64_t> NextBatch(int n) override;
  void Update(absl::Span<const int64_t> indices,
              absl::Span<const autotvm::MeasureResult> results) override;
  bool HasNext() const override;

  int model_fits() const { return fits_; }  // for tests and progress lines

 private:
  void Replan();
  std::vector<int64_t> Anneal(int count);
  // Appends one training row; group 0 is this workload, others are transfer workloads (their
  // costs are normalized per group before a fit, so only relative speed carries over).
  void AddSample(FeatureVector features, double cost, int group, int64_t index);
  std::vector<double> NormalizedCosts() const;
  std::vector<float> Scores(const std::vector<int64_t>& indices) const;  // empty on model error
  int64_t RandomUnvisited();
  int64_t TakeFromPlan(const std::vector<std::vector<int64_t>>& picked_digits);

  const autotvm::ConfigSpace& space_;
  ModelSearchOptions options_;
  std::mt19937_64 rng_;
  XgbCostModel model_;
  std::function<bool(int64_t)> valid_;
  std::vector<FeatureVector> features_;  // training data: measured + transfer
  std::vector<double> costs_;
  std::vector<int> groups_;                                // per training row
  absl::flat_hash_map<std::string, int> transfer_groups_;  // workload key -> group
  std::vector<std::pair<double, int64_t>> best_measured_;  // (cost, index) of this workload
  absl::flat_hash_set<int64_t> visited_;                   // proposed (measured or in flight)
  std::vector<int64_t> plan_;                              // best predicted, not yet proposed
  int measured_ = 0;
  int fits_ = 0;
  // New data since the last plan. Refitting waits for the next NextBatch, so Update stays cheap:
  // TuneTask reports a task's last batch as its time runs out, and nothing may need the plan.
  bool stale_ = false;
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_MODEL_SEARCH_H_
