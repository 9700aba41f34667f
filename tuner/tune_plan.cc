#include "tuner/tune_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tunejit {
namespace {

absl::Status BadDuration(std::string_view text) {
  const std::string shown(text);
  return absl::InvalidArgumentError(
      absl::StrCat("bad duration '", shown, "': use e.g. 90s, 5m, 1h, 1h30m (or plain seconds)"));
}

double UnitSeconds(char unit) {
  switch (unit) {
    case 'h':
      return 3600;
    case 'm':
      return 60;
    case 's':
      return 1;
    default:
      return 0;
  }
}

}  // namespace

absl::StatusOr<double> ParseDuration(std::string_view text) {
  if (text.empty()) return BadDuration(text);
  double plain = 0;
  if (absl::SimpleAtod(absl::string_view(text.data(), text.size()), &plain)) {
    if (!(plain > 0) || !std::isfinite(plain)) return BadDuration(text);
    return plain;
  }
  double total = 0;
  std::string_view rest = text;
  while (!rest.empty()) {
    size_t n = 0;
    while (n < rest.size() &&
           (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.')) {
      ++n;
    }
    double value = 0;
    if (n == 0 || n == rest.size() ||
        !absl::SimpleAtod(absl::string_view(rest.data(), n), &value)) {
      return BadDuration(text);
    }
    const double unit = UnitSeconds(rest[n]);
    if (unit == 0) return BadDuration(text);
    total += value * unit;
    rest.remove_prefix(n + 1);
  }
  if (!(total > 0) || !std::isfinite(total)) return BadDuration(text);
  return total;
}

absl::StatusOr<Shard> ParseShard(std::string_view text) {
  const size_t slash = text.find('/');
  Shard s;
  if (slash == std::string_view::npos ||
      !absl::SimpleAtoi(absl::string_view(text.data(), slash), &s.index) ||
      !absl::SimpleAtoi(absl::string_view(text.data() + slash + 1, text.size() - slash - 1),
                        &s.count) ||
      s.count < 1 || s.index < 0 || s.index >= s.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad shard '", std::string(text), "': use i/n with 0 <= i < n, e.g. 0/4"));
  }
  return s;
}

std::vector<size_t> ShardTasks(absl::Span<const std::string> keys, absl::Span<const double> weights,
                               const Shard& shard) {
  const size_t n = std::min(keys.size(), weights.size());
  auto weight = [&](size_t i) {
    return std::isfinite(weights[i]) && weights[i] > 0 ? weights[i] : 0.0;
  };
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (weight(a) != weight(b)) return weight(a) > weight(b);
    if (keys[a] != keys[b]) return keys[a] < keys[b];
    return a < b;  // equal keys: keep input order (callers pass distinct keys)
  });
  const int count = std::max(1, shard.count);
  std::vector<double> load(count, 0.0);
  std::vector<int> tasks(count, 0);
  std::vector<size_t> mine;
  for (size_t i : order) {
    // Least loaded shard; equal loads go to the one with fewer tasks, then the lowest number, so
    // zero-FLOP tasks are dealt round-robin too.
    int best = 0;
    for (int s = 1; s < count; ++s) {
      if (load[s] < load[best] || (load[s] == load[best] && tasks[s] < tasks[best])) best = s;
    }
    load[best] += weight(i);
    ++tasks[best];
    if (best == shard.index) mine.push_back(i);
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

}  // namespace tunejit
