#include "autotvm/split_space.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tunejit::autotvm {
namespace {

// Axis lengths beyond this are rejected: factoring stays O(sqrt(L)) = 2^20 steps at most.
constexpr int64_t kMaxSplitLength = int64_t{1} << 40;

// Fills positions pos, pos-1, ..., 1 of *current (position n-1 is chosen first, outermost).
void Enumerate(const std::vector<int64_t>& factors, int pos, int64_t remaining,
               std::vector<int64_t>* current, std::vector<std::vector<int64_t>>* out) {
  if (pos == 0) {
    out->push_back(*current);
    return;
  }
  for (int64_t f : factors) {
    if (f > remaining) break;
    if (remaining % f != 0) continue;  // no product through f can divide L
    (*current)[pos] = f;
    Enumerate(factors, pos - 1, remaining / f, current, out);
  }
}

}  // namespace

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    small.push_back(d);
    if (d != n / d) large.push_back(n / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

int64_t CountSplitCandidates(int64_t length, int num_outputs) {
  if (length < 1 || length > kMaxSplitLength || num_outputs < 1) return 0;
  int64_t count = 1;
  int64_t rest = length;
  for (int64_t p = 2; p * p <= rest || rest > 1; ++p) {
    if (p * p > rest) p = rest;  // the remaining factor is prime
    int e = 0;
    while (rest % p == 0) {
      rest /= p;
      ++e;
    }
    // C(e + k, k) with k = num_outputs - 1 slots after the outer one.
    int64_t c = 1;
    for (int i = 1; i <= num_outputs - 1; ++i) c = c * (e + i) / i;
    count *= c;
  }
  return count;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> SplitFactorCandidates(int64_t length,
                                                                        int num_outputs,
                                                                        int64_t max_candidates) {
  if (length < 1 || length > kMaxSplitLength || num_outputs < 1 || num_outputs > 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad split: length ", length, ", ", num_outputs, " outputs"));
  }
  int64_t count = CountSplitCandidates(length, num_outputs);
  if (count > max_candidates) {
    return absl::InvalidArgumentError(
        absl::StrCat("split of ", length, " into ", num_outputs, " has ", count, " candidates"));
  }
  std::vector<std::vector<int64_t>> out;
  out.reserve(count);
  std::vector<int64_t> current(num_outputs, -1);
  Enumerate(Divisors(length), num_outputs - 1, length, &current, &out);
  return out;
}

}  // namespace tunejit::autotvm
