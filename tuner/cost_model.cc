#include "tuner/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// A cost at or above this (or infinite) is a failed measurement (TVM writes [1e9]).
constexpr double kFailedCost = 1e9;

absl::Status XgbStatus(int rc, const char* what) {
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("xgboost ", what, ": ", XGBGetLastError()));
}

// XGBoost logs warnings to stdout, which would interleave with the tuner's progress lines.
void SilenceXgboost() {
  static std::once_flag once;
  std::call_once(once, [] { XGBSetGlobalConfig(R"({"verbosity": 0})"); });
}

// One RAII owner of a DMatrixHandle, built from dense rows.
class DMatrix {
 public:
  static absl::StatusOr<DMatrix> FromRows(const std::vector<FeatureVector>& rows) {
    size_t cols = rows.front().size();
    std::vector<float> flat;
    flat.reserve(rows.size() * cols);
    for (const FeatureVector& r : rows) flat.insert(flat.end(), r.begin(), r.end());
    DMatrix m;
    TUNEJIT_RETURN_IF_ERROR(
        XgbStatus(XGDMatrixCreateFromMat(flat.data(), rows.size(), cols, std::nanf(""), &m.handle_),
                  "XGDMatrixCreateFromMat"));
    return m;
  }
  DMatrix(DMatrix&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  DMatrix& operator=(DMatrix&&) = delete;
  ~DMatrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrix() = default;
  DMatrixHandle handle_ = nullptr;
};

// InvalidArgument unless `rows` is non-empty and rectangular with at least one column.
absl::Status CheckRows(const std::vector<FeatureVector>& rows, size_t expected_cols) {
  if (rows.empty()) return absl::InvalidArgumentError("no feature rows");
  size_t cols = expected_cols > 0 ? expected_cols : rows.front().size();
  if (cols == 0) return absl::InvalidArgumentError("feature rows are empty");
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != cols) {
      return absl::InvalidArgumentError(
          absl::StrCat("feature row ", i, " has ", rows[i].size(), " values, expected ", cols));
    }
  }
  return absl::OkStatus();
}

// Throughput-like labels: min_cost / cost, so the best config is 1 and failures are 0.
absl::StatusOr<std::vector<float>> Labels(const std::vector<double>& costs) {
  double min_cost = kFailedCost;
  for (size_t i = 0; i < costs.size(); ++i) {
    if (std::isnan(costs[i]) || costs[i] <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("cost ", i, " is ", costs[i]));
    }
    min_cost = std::min(min_cost, costs[i]);
  }
  std::vector<float> labels;
  labels.reserve(costs.size());
  for (double c : costs)
    labels.push_back(c >= kFailedCost ? 0.0f : static_cast<float>(min_cost / c));
  return labels;
}

}  // namespace

struct XgbCostModel::Booster {
  BoosterHandle handle = nullptr;
  size_t num_features = 0;
  ~Booster() {
    if (handle != nullptr) XGBoosterFree(handle);
  }
};

XgbCostModel::XgbCostModel(CostModelOptions options) : options_(options) { SilenceXgboost(); }
XgbCostModel::~XgbCostModel() = default;
XgbCostModel::XgbCostModel(XgbCostModel&&) noexcept = default;
XgbCostModel& XgbCostModel::operator=(XgbCostModel&&) noexcept = default;

bool XgbCostModel::trained() const { return booster_ != nullptr; }

absl::Status XgbCostModel::Fit(const std::vector<FeatureVector>& features,
                               const std::vector<double>& costs) {
  TUNEJIT_RETURN_IF_ERROR(CheckRows(features, 0));
  if (costs.size() != features.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(features.size(), " feature rows but ", costs.size(), " costs"));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> labels, Labels(costs));
  TUNEJIT_ASSIGN_OR_RETURN(DMatrix train, DMatrix::FromRows(features));
  TUNEJIT_RETURN_IF_ERROR(
      XgbStatus(XGDMatrixSetFloatInfo(train.get(), "label", labels.data(), labels.size()),
                "XGDMatrixSetFloatInfo"));
  auto booster = std::make_unique<Booster>();
  booster->num_features = features.front().size();
  DMatrixHandle cache[] = {train.get()};
  TUNEJIT_RETURN_IF_ERROR(
      XgbStatus(XGBoosterCreate(cache, 1, &booster->handle), "XGBoosterCreate"));
  // AutoTVM's XGBTuner parameters, made deterministic: exact trees and no row/column sampling,
  // so a seed (and the thread count) fixes the model.
  std::vector<std::pair<std::string, std::string>> params = {
      {"objective", "rank:pairwise"},
      {"verbosity", "0"},
      {"tree_method", "exact"},
      {"max_depth", std::to_string(options_.max_depth)},
      {"eta", std::to_string(options_.eta)},
      {"gamma", "0.0001"},
      {"min_child_weight", "1"},
      {"subsample", "1"},
      {"colsample_bytree", "1"},
      {"lambda", "1"},
      {"alpha", "0"},
      {"seed", std::to_string(options_.seed % 2147483647u)}};
  if (options_.threads > 0) params.emplace_back("nthread", std::to_string(options_.threads));
  for (const auto& [key, value] : params) {
    TUNEJIT_RETURN_IF_ERROR(XgbStatus(
        XGBoosterSetParam(booster->handle, key.c_str(), value.c_str()), "XGBoosterSetParam"));
  }
  for (int round = 0; round < options_.num_boost_rounds; ++round) {
    TUNEJIT_RETURN_IF_ERROR(XgbStatus(XGBoosterUpdateOneIter(booster->handle, round, train.get()),
                                      "XGBoosterUpdateOneIter"));
  }
  booster_ = std::move(booster);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> XgbCostModel::Predict(
    const std::vector<FeatureVector>& features) const {
  if (booster_ == nullptr) return absl::FailedPreconditionError("cost model is not trained");
  if (features.empty()) return std::vector<float>();
  TUNEJIT_RETURN_IF_ERROR(CheckRows(features, booster_->num_features));
  TUNEJIT_ASSIGN_OR_RETURN(DMatrix data, DMatrix::FromRows(features));
  bst_ulong length = 0;
  const float* scores = nullptr;
  TUNEJIT_RETURN_IF_ERROR(
      XgbStatus(XGBoosterPredict(booster_->handle, data.get(), /*option_mask=*/0, /*ntree_limit=*/0,
                                 /*training=*/0, &length, &scores),
                "XGBoosterPredict"));
  if (length != features.size()) {
    return absl::InternalError(
        absl::StrCat("xgboost returned ", length, " scores for ", features.size(), " rows"));
  }
  return std::vector<float>(scores, scores + length);
}

}  // namespace tunejit
