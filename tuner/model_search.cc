#include "tuner/model_search.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <queue>
#include <utility>

#include "ops/op_template.h"

namespace tunejit {
namespace {

// A cost at or above this is a failed measurement (TVM writes [1e9]).
constexpr double kFailedCost = 1e9;
// Annealing stops after this many steps without a new entry in the top-k (AutoTVM's early_stop).
constexpr int kSaEarlyStop = 50;
// Random draws spent looking for a config the template accepts before taking any.
constexpr int kValidTries = 2000;
// Rejection sampling gives up after this many visited hits and enumerates the unvisited indices.
constexpr int kRejectionTries = 64;
constexpr int64_t kEnumerateLimit = int64_t{1} << 22;

double CostOf(const autotvm::MeasureResult& result) {
  if (result.error_no != autotvm::kNoError || result.costs.empty()) return kFailedCost;
  double cost = result.MeanCost();
  return std::isfinite(cost) && cost > 0 && cost < kFailedCost ? cost : kFailedCost;
}

// Whether `config` carries every knob of `space` with the same type (values are not checked:
// another workload's splits are not candidates of this space).
bool HasKnobsOf(const autotvm::ConfigSpace& space, const autotvm::ConfigEntity& config) {
  for (const autotvm::KnobSpace& knob : space.knobs()) {
    const autotvm::Knob* k = config.Find(knob.name);
    if (k == nullptr || k->type != knob.type) return false;
  }
  return true;
}

int KnobDistance(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  int d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += a[i] != b[i];
  return d;
}

// The `k` best-scored indices seen, excluding visited ones and duplicates.
class TopK {
 public:
  TopK(size_t k, const absl::flat_hash_set<int64_t>& visited,
       const std::function<bool(int64_t)>& valid)
      : k_(k), visited_(visited), valid_(valid) {}
  // True when `index` entered the top-k.
  bool Push(float score, int64_t index) {
    if (k_ == 0 || visited_.contains(index) || members_.contains(index)) return false;
    if (heap_.size() == k_) {
      if (score <= heap_.top().first) return false;
    }
    // Checked last: validity (the template's Specialize) costs more than the score comparison.
    if (valid_ && !valid_(index)) return false;
    if (heap_.size() == k_) {
      members_.erase(heap_.top().second);
      heap_.pop();
    }
    heap_.emplace(score, index);
    members_.insert(index);
    return true;
  }
  std::vector<int64_t> BestFirst() {
    std::vector<int64_t> out;
    for (; !heap_.empty(); heap_.pop()) out.push_back(heap_.top().second);
    std::reverse(out.begin(), out.end());
    return out;
  }

 private:
  using Entry = std::pair<float, int64_t>;
  size_t k_;
  const absl::flat_hash_set<int64_t>& visited_;
  const std::function<bool(int64_t)>& valid_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;  // worst on top
  absl::flat_hash_set<int64_t> members_;
};

}  // namespace

ModelGuidedSearch::ModelGuidedSearch(const autotvm::ConfigSpace& space, ModelSearchOptions options)
    : space_(space), options_(options), rng_(options.seed), model_(options.model) {
  options_.plan_size = std::max(options_.plan_size, 1);
  options_.sa_chains = std::max(options_.sa_chains, 1);
  options_.sa_steps = std::max(options_.sa_steps, 0);
  options_.min_train = std::max(options_.min_train, 1);
}

void ModelGuidedSearch::AddSample(FeatureVector features, double cost, int group, int64_t index) {
  features_.push_back(std::move(features));
  costs_.push_back(cost);
  groups_.push_back(group);
  if (cost >= kFailedCost) return;
  ++measured_;
  if (group == 0 && index >= 0) best_measured_.emplace_back(cost, index);
}

void ModelGuidedSearch::AddTransferHistory(absl::Span<const autotvm::Record> records,
                                           bool same_workload) {
  // Another workload's split factors only make sense against its own axis lengths (the -1 outer
  // factor), so each such workload gets its own space; same task name means same feature layout.
  absl::flat_hash_map<std::string, std::optional<autotvm::ConfigSpace>> spaces;
  const size_t width = ConfigFeaturesOfIndex(space_, 0).size();
  for (const autotvm::Record& r : records) {
    if (!HasKnobsOf(space_, r.config)) continue;
    double cost = CostOf(r.result);
    if (same_workload) {
      absl::StatusOr<int64_t> index = space_.IndexOf(r.config);
      if (index.ok()) visited_.insert(*index);
      AddSample(ConfigFeatures(space_, r.config), cost, 0, index.ok() ? *index : -1);
      continue;
    }
    std::string key = r.workload.Key();
    auto it = spaces.find(key);
    if (it == spaces.end()) {
      absl::StatusOr<autotvm::ConfigSpace> s = BuildConfigSpace(r.workload, r.target);
      it = spaces.emplace(key, s.ok() ? std::optional(*std::move(s)) : std::nullopt).first;
    }
    if (!it->second.has_value()) continue;
    FeatureVector features = ConfigFeatures(*it->second, r.config);
    if (features.size() != width) continue;
    int group = transfer_groups_.try_emplace(key, transfer_groups_.size() + 1).first->second;
    AddSample(std::move(features), cost, group, -1);
  }
  stale_ = true;
}

std::vector<int64_t> ModelGuidedSearch::NextBatch(int n) {
  if (stale_ && measured_ >= options_.min_train) Replan();
  stale_ = false;
  std::vector<int64_t> batch;
  std::vector<std::vector<int64_t>> picked_digits;
  std::bernoulli_distribution explore(std::clamp(options_.epsilon, 0.0, 1.0));
  while (static_cast<int>(batch.size()) < n && HasNext()) {
    int64_t index = -1;
    if (!plan_.empty() && !explore(rng_)) index = TakeFromPlan(picked_digits);
    if (index < 0) index = RandomUnvisited();
    visited_.insert(index);
    batch.push_back(index);
    picked_digits.push_back(space_.DigitsOf(index));
  }
  return batch;
}

int64_t ModelGuidedSearch::TakeFromPlan(const std::vector<std::vector<int64_t>>& picked_digits) {
  // Entries proposed since the plan was made (pipelined batches, random picks) are dropped.
  plan_.erase(
      std::remove_if(plan_.begin(), plan_.end(), [&](int64_t i) { return visited_.contains(i); }),
      plan_.end());
  if (plan_.empty()) return -1;
  size_t chosen = 0;  // the best one when no entry is diverse enough
  for (size_t i = 0; options_.diversity > 0 && i < plan_.size(); ++i) {
    std::vector<int64_t> digits = space_.DigitsOf(plan_[i]);
    bool far = std::all_of(picked_digits.begin(), picked_digits.end(), [&](const auto& p) {
      return KnobDistance(p, digits) >= options_.diversity;
    });
    if (far) {
      chosen = i;
      break;
    }
  }
  int64_t index = plan_[chosen];
  plan_.erase(plan_.begin() + static_cast<std::ptrdiff_t>(chosen));
  return index;
}

int64_t ModelGuidedSearch::RandomUnvisited() {
  const int tries = valid_ ? kValidTries + kRejectionTries : kRejectionTries;
  for (int t = 0; t < tries || space_.size() > kEnumerateLimit; ++t) {
    int64_t index = space_.RandomIndex(rng_);
    if (visited_.contains(index)) continue;
    // Up to kValidTries draws look for a valid config; then any unvisited one will do.
    if (!valid_ || t >= kValidTries || valid_(index)) return index;
  }
  // Most of a small space is visited: pick uniformly among the rest.
  std::vector<int64_t> rest;
  for (int64_t i = 0; i < space_.size(); ++i) {
    if (!visited_.contains(i)) rest.push_back(i);
  }
  std::uniform_int_distribution<size_t> pick(0, rest.size() - 1);
  return rest[pick(rng_)];
}

void ModelGuidedSearch::Update(absl::Span<const int64_t> indices,
                               absl::Span<const autotvm::MeasureResult> results) {
  for (size_t i = 0; i < indices.size() && i < results.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= space_.size()) continue;
    visited_.insert(indices[i]);
    AddSample(ConfigFeaturesOfIndex(space_, indices[i]), CostOf(results[i]), 0, indices[i]);
  }
  stale_ = true;
}

bool ModelGuidedSearch::HasNext() const {
  return static_cast<int64_t>(visited_.size()) < space_.size();
}

std::vector<double> ModelGuidedSearch::NormalizedCosts() const {
  absl::flat_hash_map<int, double> best;  // group -> fastest valid cost
  for (size_t i = 0; i < costs_.size(); ++i) {
    if (costs_[i] >= kFailedCost) continue;
    auto [it, inserted] = best.try_emplace(groups_[i], costs_[i]);
    if (!inserted) it->second = std::min(it->second, costs_[i]);
  }
  std::vector<double> out;
  out.reserve(costs_.size());
  for (size_t i = 0; i < costs_.size(); ++i) {
    out.push_back(costs_[i] >= kFailedCost ? kFailedCost : costs_[i] / best.at(groups_[i]));
  }
  return out;
}

void ModelGuidedSearch::Replan() {
  // SearchStrategy has no error channel: a failed fit leaves no plan, so batches turn random.
  if (!model_.Fit(features_, NormalizedCosts()).ok()) {
    plan_.clear();
    return;
  }
  ++fits_;
  plan_ = Anneal(options_.plan_size);
}

std::vector<float> ModelGuidedSearch::Scores(const std::vector<int64_t>& indices) const {
  std::vector<FeatureVector> features;
  features.reserve(indices.size());
  for (int64_t i : indices) features.push_back(ConfigFeaturesOfIndex(space_, i));
  absl::StatusOr<std::vector<float>> scores = model_.Predict(features);
  return scores.ok() ? *std::move(scores) : std::vector<float>();
}

std::vector<int64_t> ModelGuidedSearch::Anneal(int count) {
  // Chains start at the best measured configs (up to half of them) and random points.
  std::vector<std::pair<double, int64_t>> best = best_measured_;
  size_t seeded = std::min(best.size(), static_cast<size_t>(options_.sa_chains / 2));
  std::partial_sort(best.begin(), best.begin() + static_cast<std::ptrdiff_t>(seeded), best.end());
  std::vector<int64_t> points;
  for (size_t i = 0; i < seeded; ++i) points.push_back(best[i].second);
  while (static_cast<int>(points.size()) < options_.sa_chains) {
    points.push_back(space_.RandomIndex(rng_));
  }
  std::vector<float> scores = Scores(points);
  if (scores.size() != points.size()) return {};
  TopK top(static_cast<size_t>(count), visited_, valid_);
  for (size_t i = 0; i < points.size(); ++i) top.Push(scores[i], points[i]);

  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double cool = options_.sa_start_temperature / std::max(options_.sa_steps, 1);
  double temperature = options_.sa_start_temperature;
  std::vector<int64_t> moved(points.size());
  for (int step = 0, last_gain = 0; step < options_.sa_steps; ++step) {
    for (size_t i = 0; i < points.size(); ++i) moved[i] = space_.RandomNeighbor(points[i], rng_);
    std::vector<float> moved_scores = Scores(moved);
    if (moved_scores.size() != moved.size()) break;
    for (size_t i = 0; i < points.size(); ++i) {
      if (top.Push(moved_scores[i], moved[i])) last_gain = step;
      double gain = static_cast<double>(moved_scores[i]) - scores[i];
      double accept = std::exp(std::min(gain / (temperature + 1e-5), 1.0));
      if (uniform(rng_) < accept) {
        points[i] = moved[i];
        scores[i] = moved_scores[i];
      }
    }
    temperature = std::max(0.0, temperature - cool);
    if (step - last_gain > kSaEarlyStop) break;
  }
  return top.BestFirst();
}

}  // namespace tunejit
