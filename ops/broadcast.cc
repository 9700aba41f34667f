#include "ops/broadcast.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tunejit {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

absl::StatusOr<std::vector<int64_t>> BroadcastDims(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat("shapes [", absl::StrJoin(a, ", "), "] and [",
                                                     absl::StrJoin(b, ", "), "] do not broadcast"));
    }
    out[i] = std::max(da, db);
  }
  return out;
}

std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> own = RowMajorStrides(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    const size_t d = shape.size() - 1 - i, o = out.size() - 1 - i;
    strides[o] = shape[d] == out[o] && shape[d] != 1 ? own[d] : 0;
  }
  return strides;
}

}  // namespace tunejit
