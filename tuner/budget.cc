#include "tuner/budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace tunejit {
namespace {

// FLOPs usable as weights (bad values -> 0), or all ones when every weight is zero.
std::vector<double> Weights(absl::Span<const double> flops) {
  std::vector<double> w(flops.size());
  double sum = 0;
  for (size_t i = 0; i < flops.size(); ++i) {
    w[i] = std::isfinite(flops[i]) && flops[i] > 0 ? flops[i] : 0.0;
    sum += w[i];
  }
  if (sum <= 0) std::fill(w.begin(), w.end(), 1.0);
  return w;
}

}  // namespace

std::vector<int64_t> SplitBudget(absl::Span<const double> flops, int64_t total,
                                 int64_t min_per_task) {
  const int64_t n = static_cast<int64_t>(flops.size());
  std::vector<int64_t> share(n, 0);
  if (n == 0 || total <= 0) return share;
  min_per_task = std::max<int64_t>(0, min_per_task);
  if (total < min_per_task * n) {
    for (int64_t i = 0; i < n; ++i) share[i] = total / n + (i < total % n ? 1 : 0);
    return share;
  }
  const std::vector<double> w = Weights(flops);
  const double weight_sum = std::accumulate(w.begin(), w.end(), 0.0);
  const int64_t rest = total - min_per_task * n;
  std::vector<double> fraction(n);
  int64_t given = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double exact = rest * (w[i] / weight_sum);
    const int64_t whole = std::min<int64_t>(rest, static_cast<int64_t>(std::floor(exact)));
    share[i] = min_per_task + whole;
    fraction[i] = exact - whole;
    given += whole;
  }
  // Largest remainders get the trials lost to rounding; ties go to the bigger task.
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    if (fraction[a] != fraction[b]) return fraction[a] > fraction[b];
    return w[a] > w[b];
  });
  for (int64_t j = 0; given < rest; j = (j + 1) % n, ++given) ++share[order[j]];
  return share;
}

std::vector<double> GainWeights(absl::Span<const std::string> labels,
                                absl::Span<const double> best_seconds) {
  const size_t n = std::min(labels.size(), best_seconds.size());
  auto valid = [&](size_t i) { return std::isfinite(best_seconds[i]) && best_seconds[i] > 0; };
  absl::flat_hash_map<std::string, double> node_best;
  for (size_t i = 0; i < n; ++i) {
    if (!valid(i)) continue;
    auto [it, inserted] = node_best.try_emplace(labels[i], best_seconds[i]);
    if (!inserted) it->second = std::min(it->second, best_seconds[i]);
  }
  std::vector<double> w(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    if (!valid(i)) continue;
    const double nodes = 1 + std::count(labels[i].begin(), labels[i].end(), ',');
    const double best = node_best[labels[i]];
    if (best_seconds[i] > kMaxBehindBest * best)
      continue;  // far behind: more trials rarely catch up
    w[i] = nodes * best * std::pow(best / best_seconds[i], kBehindExponent);
  }
  return w;
}

double ShareOfRemaining(double remaining_seconds, int slots, double weight, double pending_weight) {
  if (!(remaining_seconds > 0) || !(weight > 0) || !(pending_weight > 0)) return 0;
  const double share = remaining_seconds * std::max(1, slots) * weight / pending_weight;
  return std::min(share, remaining_seconds);
}

}  // namespace tunejit
