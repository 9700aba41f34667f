// File: examples/fashion_mnist/fashion_net.h
// The small VGG-style network examples/fashion_mnist/train.py trains on Fashion-MNIST, as a
// tunejit Graph whose tensor names follow the PyTorch module's state dict, so the safetensors file
// train.py writes binds by name (graph/weights.h):
//   features.{0,2,5,7,10}.{weight,bias}   3x3 convs, padding 1: 1->32->32, pool, ->64->64, pool,
//                                          ->128, pool (28 -> 14 -> 7 -> 3)
//   classifier.{0,3}.{weight,bias}        dense 1152 -> 256 -> 10 (dropout between: identity)
// Input "input" [batch, 1, 28, 28] float32, normalized as NormalizePixels does; output "logits".
//
//   TUNEJIT_ASSIGN_OR_RETURN(Graph g, BuildFashionNet(1000));
#ifndef TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_
#define TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"

namespace tunejit {

// The training set's pixel mean and standard deviation (of pixel / 255); train.py uses the same.
inline constexpr float kFashionMean = 0.2860f;
inline constexpr float kFashionStd = 0.3530f;
inline constexpr int64_t kFashionSide = 28;
inline constexpr int64_t kFashionClasses = 10;

// InvalidArgument for batch < 1.
absl::StatusOr<Graph> BuildFashionNet(int64_t batch);

// (pixel / 255 - kFashionMean) / kFashionStd for each byte.
std::vector<float> NormalizePixels(absl::Span<const uint8_t> pixels);

}  // namespace tunejit

#endif  // TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_
