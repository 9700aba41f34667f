// File: common/parallel_for.h
// A loop over [0, n) split into chunks of `grain` items, run on several threads: the calling
// thread works too, and the others are started for this one loop and joined before it returns
// (no pool, no global state). Chunks are handed out in increasing order from a shared counter, so
// uneven chunks balance themselves and chunk k starts no later than chunk k + 1. A loop of one
// chunk, or with one thread, runs on the calling thread alone: tiny work starts no thread.
//
//   ParallelFor(rows, /*grain=*/16, /*threads=*/0, [&](int64_t begin, int64_t end) {
//     for (int64_t r = begin; r < end; ++r) PrepareRow(r);
//   });
#ifndef TUNEJIT_COMMON_PARALLEL_FOR_H_
#define TUNEJIT_COMMON_PARALLEL_FOR_H_

#include <cstdint>

#include "absl/functional/function_ref.h"

namespace tunejit {

// `threads`, or one per core when it is 0 or less; at least 1.
int ResolveThreads(int threads);

// Calls fn(begin, end) once for each chunk [begin, end) of [0, n), chunks of `grain` items (the
// last may be shorter; grain < 1 counts as 1), on min(ResolveThreads(threads), chunks) threads.
// fn runs concurrently with itself and must not throw.
void ParallelFor(int64_t n, int64_t grain, int threads,
                 absl::FunctionRef<void(int64_t begin, int64_t end)> fn);

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_PARALLEL_FOR_H_
