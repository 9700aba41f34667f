// File: common/elementwise_fn.h
// The element-wise functions of the graph's unary and binary ops (graph/graph.h; defined in
// kernel_sources/elementwise_fn.cuh, which the kernels include too) and their names, shared by
// the IR, the CPU reference (ops/tensor_ops_reference.h) and the kernels' host side
// (ops/tensor_ops.h).
#ifndef TUNEJIT_COMMON_ELEMENTWISE_FN_H_
#define TUNEJIT_COMMON_ELEMENTWISE_FN_H_

#include <string_view>

#include "kernel_sources/elementwise_fn.cuh"

namespace tunejit {
// "sigmoid", "tanh", ...
constexpr std::string_view UnaryFnName(UnaryFn fn) {
  constexpr std::string_view kNames[] = {
      "sigmoid", "tanh", "erf",        "gelu", "hard_sigmoid", "hard_swish", "silu",
      "sqrt",    "exp",  "reciprocal", "neg",  "replace_nan",  "gelu_tanh"};
  return kNames[static_cast<int>(fn)];
}
// "add", "sub", ...
constexpr std::string_view BinaryFnName(BinaryFn fn) {
  constexpr std::string_view kNames[] = {"add", "sub", "mul", "div", "pow", "max", "min"};
  return kNames[static_cast<int>(fn)];
}

}  // namespace tunejit

#endif  // TUNEJIT_COMMON_ELEMENTWISE_FN_H_
