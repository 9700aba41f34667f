#include "tuner/search.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace tunejit {

RandomSearch::RandomSearch(int64_t space_size, uint64_t seed)
    : size_(std::max<int64_t>(0, space_size)), rng_(seed) {
  if (size_ <= kShuffleLimit) {
    permutation_.resize(size_);
    std::iota(permutation_.begin(), permutation_.end(), 0);
  }
}

int64_t RandomSearch::Next() {
  if (size_ <= kShuffleLimit) {
    // One Fisher-Yates step: pick from the not-yet-proposed tail.
    std::uniform_int_distribution<int64_t> pick(proposed_, size_ - 1);
    std::swap(permutation_[proposed_], permutation_[pick(rng_)]);
    return permutation_[proposed_++];
  }
  std::uniform_int_distribution<int64_t> pick(0, size_ - 1);
  while (true) {
    int64_t index = pick(rng_);
    if (visited_.insert(index).second) {
      ++proposed_;
      return index;
    }
  }
}

std::vector<int64_t> RandomSearch::NextBatch(int n) {
  std::vector<int64_t> batch;
  while (static_cast<int>(batch.size()) < n && HasNext()) batch.push_back(Next());
  return batch;
}

std::vector<int64_t> GridSearch::NextBatch(int n) {
  std::vector<int64_t> batch;
  while (static_cast<int>(batch.size()) < n && next_ < size_) batch.push_back(next_++);
  return batch;
}

}  // namespace tunejit
