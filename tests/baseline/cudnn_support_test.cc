// CPU tests of the cuDNN baseline: what the build says about itself and the graph checks Create
// runs before touching a GPU (CheckCudnnSupport).
#include <string>

#include "absl/status/status.h"
#include "baseline/cudnn_network.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/vgg16.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

TEST(CudnnSupportTest, AvailabilityMatchesBuild) {
#ifdef TUNEJIT_HAVE_CUDNN
  EXPECT_TRUE(CudnnBaselineAvailable());
#else
  EXPECT_FALSE(CudnnBaselineAvailable());
#endif
}

TEST(CudnnSupportTest, AcceptsVgg16WithAndWithoutSoftmax) {
  for (bool softmax : {false, true}) {
    absl::StatusOr<Graph> g = BuildVgg16({.batch = 2, .with_softmax = softmax});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(CheckCudnnSupport(*g).ok()) << CheckCudnnSupport(*g);
  }
}

// [1, 4, 8, 8] -> conv 3x3 (attrs as given) with 4 output channels, named "conv".
absl::StatusOr<Graph> ConvGraph(const NodeAttrs& attrs, DType dtype = DType::kF32) {
  Graph g;
  const int x = g.AddTensor({"x", {1, 4, 8, 8}, dtype, TensorKind::kInput});
  const int w = g.AddTensor({"w", {4, 4 / attrs.groups, 3, 3}, dtype, TensorKind::kWeight});
  absl::StatusOr<int> y =
      g.AddNode("conv", OpKind::kConv2d, {x, w}, attrs, "y", TensorKind::kOutput);
  if (!y.ok()) return y.status();
  return g;
}

TEST(CudnnSupportTest, AcceptsGroupedStridedDilatedConv) {
  NodeAttrs a;
  a.groups = 2;
  a.stride_h = a.stride_w = 2;
  a.dilation_h = a.dilation_w = 2;
  a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = 2;
  absl::StatusOr<Graph> g = ConvGraph(a);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(CheckCudnnSupport(*g).ok()) << CheckCudnnSupport(*g);
}

TEST(CudnnSupportTest, RejectsUnsupportedOpNamingTheNode) {
  Graph g;
  const int x = g.AddTensor({"x", {2, 5}, DType::kF32, TensorKind::kInput});
  NodeAttrs a;
  a.scale = 0.5f;
  ASSERT_TRUE(g.AddNode("to_int8", OpKind::kQuantize, {x}, a, "q", TensorKind::kOutput).ok());
  const absl::Status s = CheckCudnnSupport(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'to_int8'"));
  EXPECT_THAT(s.message(), HasSubstr("quantize"));
}

TEST(CudnnSupportTest, RejectsNonFloatTensorsNamingNodeAndTensor) {
  Graph g;
  const int x = g.AddTensor({"x8", {2, 5}, DType::kI8, TensorKind::kInput});
  ASSERT_TRUE(g.AddNode("act", OpKind::kRelu, {x}, {}, "y", TensorKind::kOutput).ok());
  const absl::Status s = CheckCudnnSupport(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'act'"));
  EXPECT_THAT(s.message(), HasSubstr("'x8' is I8"));
}

TEST(CudnnSupportTest, RejectsInt8ConvNamingTheNode) {
  absl::StatusOr<Graph> g = ConvGraph(NodeAttrs{}, DType::kI8);
  ASSERT_TRUE(g.ok()) << g.status();
  const absl::Status s = CheckCudnnSupport(*g);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'conv' (conv2d)"));
}

TEST(CudnnSupportTest, RejectsAsymmetricPadding) {
  NodeAttrs a;
  a.pad_top = 1;
  a.pad_bottom = 0;
  absl::StatusOr<Graph> g = ConvGraph(a);
  ASSERT_TRUE(g.ok()) << g.status();
  const absl::Status s = CheckCudnnSupport(*g);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'conv'"));
  EXPECT_THAT(s.message(), HasSubstr("asymmetric padding"));
}

// ResNet's ops: residual add, padded max pool, average pools, ReLU6-style clip.
TEST(CudnnSupportTest, AcceptsResidualOps) {
  Graph g;
  const int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  NodeAttrs pool{.stride_h = 2,
                 .stride_w = 2,
                 .pad_top = 1,
                 .pad_left = 1,
                 .pad_bottom = 1,
                 .pad_right = 1,
                 .pool_h = 3,
                 .pool_w = 3};
  const int p = *g.AddNode("maxpool", OpKind::kMaxPool2d, {x}, pool, "p");
  const int a = *g.AddNode("avgpool", OpKind::kAvgPool2d, {x}, pool, "a");
  const int s = *g.AddNode("add", OpKind::kAdd, {p, a}, {}, "s");
  const int c = *g.AddNode("relu6", OpKind::kClip, {s}, {.clip_min = 0, .clip_max = 6}, "c");
  ASSERT_TRUE(g.AddNode("gap", OpKind::kGlobalAvgPool2d, {c}, {}, "y", TensorKind::kOutput).ok());
  EXPECT_TRUE(CheckCudnnSupport(g).ok()) << CheckCudnnSupport(g);
}

TEST(CudnnSupportTest, RejectsClipThatIsNoActivationAndAsymmetricAvgPool) {
  Graph g;
  const int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  ASSERT_TRUE(g.AddNode("clamp", OpKind::kClip, {x}, {.clip_min = -1, .clip_max = 1}, "y",
                        TensorKind::kOutput)
                  .ok());
  absl::Status s = CheckCudnnSupport(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'clamp' (clip): clip [-1, 1] is not a cuDNN activation"));

  Graph pool;
  const int px = pool.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  ASSERT_TRUE(
      pool.AddNode("avg", OpKind::kAvgPool2d, {px}, {.pad_bottom = 1}, "y", TensorKind::kOutput)
          .ok());
  s = CheckCudnnSupport(pool);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented) << s;
  EXPECT_THAT(s.message(), HasSubstr("'avg' (avg_pool2d): asymmetric padding"));
}

TEST(CudnnSupportTest, RejectsInvalidGraphs) {
  Graph g;
  const int x = g.AddTensor({"x", {2, 5}, DType::kF32, TensorKind::kInput});
  const int y = g.AddTensor({"y", {2, 6}, DType::kF32, TensorKind::kOutput});  // wrong shape
  g.AddNodeUnchecked(Node{"act", OpKind::kRelu, {x}, y, {}});
  const absl::Status s = CheckCudnnSupport(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("'act'"));
}

}  // namespace
}  // namespace tunejit
