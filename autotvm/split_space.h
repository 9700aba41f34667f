// File: autotvm/split_space.h
// Candidate lists of one `define_split(..., policy="factors", num_outputs=n)` knob, in TVM's exact
// order (docs/tvm-templates.md section 1.6): depth-first over the ascending divisors of L, the
// outermost loop choosing the LAST size, the innermost s1, keeping tuples whose product divides L,
// each stored as [-1, s1, ..., s(n-1)]. Equivalently: sorted by (s(n-1), ..., s1), s1 fastest.
//
//   SplitFactorCandidates(8, 4)  // [-1,1,1,1] [-1,2,1,1] [-1,4,1,1] [-1,8,1,1] [-1,1,2,1] ... (20)
//   CountSplitCandidates(4096, 4) == 455
#ifndef TUNEJIT_AUTOTVM_SPLIT_SPACE_H_
#define TUNEJIT_AUTOTVM_SPLIT_SPACE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace tunejit::autotvm {

// All divisors of n >= 1, ascending.
std::vector<int64_t> Divisors(int64_t n);

// prod over primes p^e of L of C(e + n - 1, n - 1), computed without enumerating.
int64_t CountSplitCandidates(int64_t length, int num_outputs);

// The candidates in TVM order. InvalidArgument if length < 1, num_outputs < 1, or the list would
// exceed `max_candidates` entries (guards hostile shapes; real lists have at most a few thousand).
absl::StatusOr<std::vector<std::vector<int64_t>>> SplitFactorCandidates(
    int64_t length, int num_outputs, int64_t max_candidates = 1 << 17);

}  // namespace tunejit::autotvm

#endif  // TUNEJIT_AUTOTVM_SPLIT_SPACE_H_
