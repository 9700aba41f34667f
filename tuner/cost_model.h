// File: tuner/cost_model.h
// AutoTVM's XGBTuner cost model, on Debian's libxgboost (C API): a gradient-boosted ranking model
// (objective rank:pairwise) that scores configs of one task from their features, so simulated
// annealing (tuner/model_search.h) can pick promising configs without measuring them.
//
// Features are AutoTVM's "knob" features, extended: per knob, the log2 of every split factor
// (reorder / other knobs: their value), plus derived launch features the templates imply
// (threads per block, work items per thread, reduction chunk), all log2-scaled. The same task name
// gives the same feature layout for every workload, so records of other workloads of the task
// (another layer, an older log) warm-start the model (AutoTVM's transfer learning). The exact
// layout is documented at the top of tuner/features.cc.
//
//   XgbCostModel model({.seed = 1});
//   TUNEJIT_RETURN_IF_ERROR(model.Fit(features, costs));      // costs: seconds, failures 1e9
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> scores, model.Predict(candidates));  //
//   higher=better
#ifndef TUNEJIT_TUNER_COST_MODEL_H_
#define TUNEJIT_TUNER_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "autotvm/config_entity.h"
#include "autotvm/config_space.h"

namespace tunejit {

using FeatureVector = std::vector<float>;

// The features of one config of `space` (fixed length for a given task name).
FeatureVector ConfigFeatures(const autotvm::ConfigSpace& space,
                             const autotvm::ConfigEntity& config);
FeatureVector ConfigFeaturesOfIndex(const autotvm::ConfigSpace& space, int64_t index);

struct CostModelOptions {
  uint64_t seed = 1;
  int num_boost_rounds = 60;  // rounds per Fit (AutoTVM: 8000 with early stopping; small data here)
  int max_depth = 6;
  double eta = 0.3;
  int threads = 0;  // xgboost nthread (0: all cores)
};

class XgbCostModel {
 public:
  explicit XgbCostModel(CostModelOptions options);
  ~XgbCostModel();
  XgbCostModel(XgbCostModel&&) noexcept;
  XgbCostModel& operator=(XgbCostModel&&) noexcept;

  // Trains a fresh model. Labels are throughput-like (min_cost / cost, failures 0) so that a
  // ranking objective learns "faster is better". InvalidArgument for ragged or empty input;
  // Internal with xgboost's message when the library fails.
  absl::Status Fit(const std::vector<FeatureVector>& features, const std::vector<double>& costs);
  // Scores (higher = predicted faster). FailedPrecondition before the first successful Fit,
  // InvalidArgument for rows of another width than the training rows. Not for concurrent calls on
  // one model: xgboost keeps the prediction buffer in the booster.
  absl::StatusOr<std::vector<float>> Predict(const std::vector<FeatureVector>& features) const;
  bool trained() const;

 private:
  struct Booster;
  CostModelOptions options_;
  std::unique_ptr<Booster> booster_;  // one RAII owner of the BoosterHandle
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_COST_MODEL_H_
