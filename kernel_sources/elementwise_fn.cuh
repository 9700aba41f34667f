// File: kernel_sources/elementwise_fn.cuh
// The element-wise functions of the graph's unary and binary ops: one definition for the host
// (common/elementwise_fn.h, which adds their names) and the kernels (tensor_ops.cu, which take
// them as int template arguments). Plain C++, no CUDA.
//   gelu = x * (1 + erf(x / sqrt 2)) / 2 (exact, not the tanh form); hard_sigmoid = clamp(alpha *
//   x + beta, 0, 1); hard_swish = x * clamp(x / 6 + 1 / 2, 0, 1); silu = x * sigmoid(x);
//   replace_nan = alpha where x is NaN, else x (the guard torch.onnx exports after a softmax);
//   gelu_tanh = x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2 (GPT-2's gelu_new, ONNX
//   Gelu's approximate = "tanh").
#ifndef TUNEJIT_KERNEL_SOURCES_ELEMENTWISE_FN_CUH_
#define TUNEJIT_KERNEL_SOURCES_ELEMENTWISE_FN_CUH_

namespace tunejit {

enum class UnaryFn {
  kSigmoid,
  kTanh,
  kErf,
  kGelu,
  kHardSigmoid,
  kHardSwish,
  kSilu,
  kSqrt,
  kExp,
  kReciprocal,
  kNeg,
  kReplaceNan,
  kGeluTanh
};
enum class BinaryFn { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin };

}  // namespace tunejit

#endif  // TUNEJIT_KERNEL_SOURCES_ELEMENTWISE_FN_CUH_
