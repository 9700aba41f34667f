// File: tests/graph/executor_test_util.h
// The small network of the executor tests (CPU lowering tests and GPU runs share it):
//   input [2, 4, 16, 16] -> conv3x3 8ch (pad 1) + bias + relu -> max pool 2x2
//   -> conv3x3 8ch (pad 1) + bias + relu -> flatten -> dense 10 + bias -> "logits"
// Both convs have channel counts divisible by 4, so at int8 both run int8 (the first one behind a
// quantize step of the float input).
#ifndef TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_
#define TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "gtest/gtest.h"

namespace tunejit::testing {

inline Graph SmallNet(int64_t batch = 2, int64_t ci = 4) {
  Graph g;
  int x = g.AddTensor({"input", {batch, ci, 16, 16}, DType::kF32, TensorKind::kInput});
  NodeAttrs conv{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  NodeAttrs pool{.stride_h = 2, .stride_w = 2, .pool_h = 2, .pool_w = 2};
  int64_t channels = ci;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string n = "conv" + std::to_string(layer);
    int w = g.AddTensor({n + ".weight", {8, channels, 3, 3}, DType::kF32, TensorKind::kWeight});
    int b = g.AddTensor({n + ".bias", {8}, DType::kF32, TensorKind::kWeight});
    x = *g.AddNode(n, OpKind::kConv2d, {x, w}, conv, n + ".out");
    x = *g.AddNode(n + ".bias_add", OpKind::kBiasAdd, {x, b}, {}, n + ".bias_out");
    x = *g.AddNode(n + ".relu", OpKind::kRelu, {x}, {}, n + ".relu_out");
    if (layer == 0) x = *g.AddNode("pool0", OpKind::kMaxPool2d, {x}, pool, "pool0.out");
    channels = 8;
  }
  x = *g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out");
  int w = g.AddTensor({"fc.weight", {10, 8 * 8 * 8}, DType::kF32, TensorKind::kWeight});
  int b = g.AddTensor({"fc.bias", {10}, DType::kF32, TensorKind::kWeight});
  x = *g.AddNode("fc", OpKind::kDense, {x, w}, {}, "fc.out");
  x = *g.AddNode("fc.bias_add", OpKind::kBiasAdd, {x, b}, {}, "logits", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  return g;
}

// N(0, 1) values (std::normal_distribution: tests only need them random, not portable).
inline std::vector<float> NormalFloats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace tunejit::testing

#endif  // TUNEJIT_TESTS_GRAPH_EXECUTOR_TEST_UTIL_H_
