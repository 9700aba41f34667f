// File: tests/testing/offers.h
// The implementations the op templates offer for a conv or dense at a numeric mode (OffersFor),
// for tests that need a real workload of a task name. Header-only: include it where ops/ links.
#ifndef TUNEJIT_TESTS_TESTING_OFFERS_H_
#define TUNEJIT_TESTS_TESTING_OFFERS_H_

#include <vector>

#include "autotvm/dispatch.h"
#include "autotvm/workload.h"
#include "ops/op_template.h"

namespace tunejit::testing {

inline std::vector<autotvm::Implementation> Implementations(const OpRequest& request) {
  std::vector<autotvm::Implementation> out;
  for (const OpOffer& offer : OffersFor(request)) out.push_back(offer.implementation);
  return out;
}

// `conv` is the geometry (its dtypes are ignored: the mode sets them); `half_output` asks for a
// float16 output in the tensor-core modes.
inline std::vector<autotvm::Implementation> OfferedConv(const autotvm::Conv2dParams& conv,
                                                        NumericMode mode, bool half_output) {
  OpRequest r;
  r.op = OpRequest::Op::kConv2d;
  r.mode = mode;
  r.conv = conv;
  r.half_output = half_output;
  return Implementations(r);
}

inline std::vector<autotvm::Implementation> OfferedDense(const autotvm::DenseParams& dense,
                                                         NumericMode mode, bool half_output) {
  OpRequest r;
  r.op = OpRequest::Op::kDense;
  r.mode = mode;
  r.dense = dense;
  r.half_output = half_output;
  return Implementations(r);
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_TESTING_OFFERS_H_
