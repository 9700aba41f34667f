// File: examples/fashion_mnist/fashion_net.h
// The two networks examples/fashion_mnist/train.py trains on Fashion-MNIST, as tunejit Graphs
// whose tensor names follow the PyTorch modules' state dicts, so the safetensors file train.py
// writes binds by name (graph/weights.h).
//
// BuildFashionNet, the small VGG-style one (train.py --net vgg, the default):
//   features.{0,2,5,7,10}.{weight,bias}   3x3 convs, padding 1: 1->32->32, pool, ->64->64, pool,
//                                          ->128, pool (28 -> 14 -> 7 -> 3)
//   classifier.{0,3}.{weight,bias}        dense 1152 -> 256 -> 10 (dropout between: identity)
//
// BuildFashionResNet, a small ResNet (train.py --net resnet): residual adds, two stride-2 stages
// and their 1x1 stride-2 downsample convs. Convs carry a bias and there is no BatchNorm, so the
// exported state dict is the graph's weights one to one (nothing folded):
//   stem.{weight,bias}                     3x3 conv 1 -> 32, padding 1, relu      [N, 32, 28, 28]
//   layer1.conv{1,2}.{weight,bias}         basic block 32 -> 32, identity skip    [N, 32, 28, 28]
//   layer2.conv{1,2}, layer2.downsample    basic block 32 -> 64, stride 2         [N, 64, 14, 14]
//   layer3.conv{1,2}, layer3.downsample    basic block 64 -> 128, stride 2        [N, 128, 7, 7]
//   fc.{weight,bias}                       global average pool, dense 128 -> 10
// A basic block: relu(conv1) (3x3, the block's stride) -> conv2 (3x3), plus the skip (the block's
// input, or its 1x1 strided downsample conv), then relu.
//
// Input "input" [batch, 1, 28, 28] float32, normalized as NormalizePixels does; output "logits".
//
//   TUNEJIT_ASSIGN_OR_RETURN(Graph g, BuildFashionNet(1000));
#ifndef TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_
#define TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_

#include <cstdint>
#include <string_view>
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
absl::StatusOr<Graph> BuildFashionResNet(int64_t batch);

// The network train.py's --net names: "vgg" (BuildFashionNet) or "resnet" (BuildFashionResNet);
// InvalidArgument for another name or batch < 1.
absl::StatusOr<Graph> BuildFashionGraph(std::string_view net, int64_t batch);

// (pixel / 255 - kFashionMean) / kFashionStd for each byte.
std::vector<float> NormalizePixels(absl::Span<const uint8_t> pixels);

}  // namespace tunejit

#endif  // TUNEJIT_EXAMPLES_FASHION_MNIST_FASHION_NET_H_
