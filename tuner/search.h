// File: tuner/search.h
// Search strategies: which config indices of a task's space to measure next. TuneTask asks for a
// batch, measures it and reports the results back, so model-based strategies (XGBoost, later) can
// learn from them; the two here ignore results.
//   RandomSearch  uniform without repeats (seeded: the same seed gives the same order)
//   GridSearch    index order 0, 1, 2, ...
//
//   RandomSearch search(task.space.size(), /*seed=*/1);
//   std::vector<int64_t> batch = search.NextBatch(8);   // fewer (or none) once exhausted
//   search.Update(batch, results);
#ifndef TUNEJIT_TUNER_SEARCH_H_
#define TUNEJIT_TUNER_SEARCH_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "autotvm/record.h"

namespace tunejit {

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // Up to `n` indices not proposed before; fewer only when the space is exhausted.
  virtual std::vector<int64_t> NextBatch(int n) = 0;
  // The measurements of indices proposed earlier (results[i] belongs to indices[i]).
  virtual void Update(absl::Span<const int64_t> indices,
                      absl::Span<const autotvm::MeasureResult> results) {
    (void)indices;
    (void)results;
  }
  // Whether NextBatch can still return something.
  virtual bool HasNext() const = 0;
  // Measurements of other workloads of the same task name (tasks tuned earlier in the run):
  // training data for a strategy with a cost model. Default: ignored.
  virtual void AddTransfer(absl::Span<const autotvm::Record> records) { (void)records; }
};

class RandomSearch : public SearchStrategy {
 public:
  RandomSearch(int64_t space_size, uint64_t seed);
  std::vector<int64_t> NextBatch(int n) override;
  bool HasNext() const override { return proposed_ < size_; }

 private:
  int64_t Next();
  // Small spaces are shuffled lazily (Fisher-Yates over a materialized permutation); big ones are
  // sampled with rejection against the visited set, which stays cheap while only a tiny fraction
  // of the space is ever visited.
  static constexpr int64_t kShuffleLimit = int64_t{1} << 22;
  int64_t size_;
  int64_t proposed_ = 0;
  std::mt19937_64 rng_;
  std::vector<int64_t> permutation_;
  absl::flat_hash_set<int64_t> visited_;
};

class GridSearch : public SearchStrategy {
 public:
  explicit GridSearch(int64_t space_size) : size_(space_size) {}
  std::vector<int64_t> NextBatch(int n) override;
  bool HasNext() const override { return next_ < size_; }

 private:
  int64_t size_;
  int64_t next_ = 0;
};

}  // namespace tunejit

#endif  // TUNEJIT_TUNER_SEARCH_H_
