#include "ops/broadcast.h"

namespace tunejit {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
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
