// File: ops/broadcast.h
// Row-major strides and the strides of a broadcast operand, shared by the tensor ops' plans
// (ops/tensor_ops.h) and their CPU reference (ops/tensor_ops_reference.h); the broadcast shape
// itself is common/broadcast.h's.
//
//   TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> out, BroadcastShape({2, 1}, {3}));  // [2, 3]
//   BroadcastStrides({2, 1}, out);  // [1, 0]: the column repeats along dim 1
#ifndef TUNEJIT_OPS_BROADCAST_H_
#define TUNEJIT_OPS_BROADCAST_H_

#include <cstdint>
#include <vector>

#include "common/broadcast.h"

namespace tunejit {

// Element strides of a row-major tensor of `shape`.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape);

// The strides of `shape` read at the broadcast shape `out` (right-aligned; 0 along the dims it
// repeats, and along dims of 1).
std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

}  // namespace tunejit

#endif  // TUNEJIT_OPS_BROADCAST_H_
