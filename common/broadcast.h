// File: common/broadcast.h
// numpy broadcasting of two shapes, for the graph's shape rules, the importer's constant folding
// and the tensor ops' plans and CPU reference alike. Header-only.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> out, BroadcastShape({2, 1}, {3}));  // [2, 3]
#ifndef TUNEJIT_COMMON_BROADCAST_H_
#define TUNEJIT_COMMON_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunejit {

// The broadcast shape of `a` and `b` (right-aligned; a dim of 1 stretches); InvalidArgument naming
// the first dim that does not broadcast.
inline absl::StatusOr<std::vector<int64_t>> BroadcastShape(const std::vector<int64_t>& a,
                                                           const std::vector<int64_t>& b) {
  const size_t rank = a.size() > b.size() ? a.size() : b.size();
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("shapes [", absl::StrJoin(a, ", "), "] and [", absl::StrJoin(b, ", "),
                       "] do not broadcast (dim ", i, ": ", da, " vs ", db, ")"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_BROADCAST_H_
