#include "tuner/budget.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

std::vector<double> SplitBudgetSeconds(absl::Span<const double> flops, double total_seconds,
                                       double min_seconds_per_task) {
  const size_t n = flops.size();
  std::vector<double> share(n, 0.0);
  if (n == 0 || !(total_seconds > 0)) return share;
  min_seconds_per_task = std::max(0.0, min_seconds_per_task);
  if (total_seconds < min_seconds_per_task * n) {
    std::fill(share.begin(), share.end(), total_seconds / n);
    return share;
  }
  const std::vector<double> w = Weights(flops);
  const double weight_sum = std::accumulate(w.begin(), w.end(), 0.0);
  const double rest = total_seconds - min_seconds_per_task * n;
  for (size_t i = 0; i < n; ++i) share[i] = min_seconds_per_task + rest * (w[i] / weight_sum);
  return share;
}

}  // namespace tunejit
