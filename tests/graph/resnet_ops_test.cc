// Shape inference and validation of the ops ResNet-50 adds to VGG-16's (graph/graph.h): the
// residual add, average and global average pooling, clip, and max pooling with padding. Good
// inputs give the torchvision/ONNX shapes; bad ones (shapes, dtypes, kinds, attrs) are
// InvalidArgument naming the input and the rule.
#include <cmath>
#include <limits>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

absl::StatusOr<InferredOutput> Infer(OpKind op, const NodeAttrs& a,
                                     std::initializer_list<const TensorDesc*> in) {
  return InferOutput(op, a, std::vector<const TensorDesc*>(in));
}

TensorDesc F32(std::vector<int64_t> shape, TensorKind kind = TensorKind::kActivation) {
  return {"t", std::move(shape), DType::kF32, kind};
}

NodeAttrs Pool(int k, int stride, int pad) {
  return NodeAttrs{.stride_h = stride,
                   .stride_w = stride,
                   .pad_top = pad,
                   .pad_left = pad,
                   .pad_bottom = pad,
                   .pad_right = pad,
                   .pool_h = k,
                   .pool_w = k};
}

TEST(ResnetOpsTest, NamesOfTheNewOps) {
  EXPECT_EQ(OpKindName(OpKind::kAdd), "add");
  EXPECT_EQ(OpKindName(OpKind::kAvgPool2d), "avg_pool2d");
  EXPECT_EQ(OpKindName(OpKind::kGlobalAvgPool2d), "global_avg_pool2d");
  EXPECT_EQ(OpKindName(OpKind::kClip), "clip");
  EXPECT_EQ(ExpectedInputKind(OpKind::kAdd, 1), InputKind::kActivation);  // the residual
}

TEST(ResnetOpsTest, AddNeedsTwoFloatOperandsOfOneShape) {
  TensorDesc x = F32({2, 256, 56, 56}), y = F32({2, 256, 56, 56});
  absl::StatusOr<InferredOutput> out = Infer(OpKind::kAdd, {}, {&x, &y});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape, ElementsAre(2, 256, 56, 56));
  EXPECT_EQ(out->dtype, DType::kF32);

  TensorDesc other = F32({2, 256, 28, 28});
  absl::Status s = Infer(OpKind::kAdd, {}, {&x, &other}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input 1"));
  EXPECT_THAT(s.message(), HasSubstr("expected the shape of input 0 [2, 256, 56, 56]"));
  TensorDesc i8 = y;
  i8.dtype = DType::kI8;
  EXPECT_THAT(Infer(OpKind::kAdd, {}, {&x, &i8}).status().message(),
              HasSubstr("dtype must be F32"));
  EXPECT_THAT(Infer(OpKind::kAdd, {}, {&x}).status().message(),
              HasSubstr("expected 2 inputs, got 1"));
}

TEST(ResnetOpsTest, AddOfAWeightFailsValidation) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4, 2, 2}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {1, 4, 2, 2}, DType::kF32, TensorKind::kWeight});
  ASSERT_TRUE(g.AddNode("add", OpKind::kAdd, {x, w}, {}, "y", TensorKind::kOutput).ok());
  absl::Status s = g.Validate();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("node 0 'add' (add): input 1 'w' has kind weight"));
}

TEST(ResnetOpsTest, ResidualGraphValidatesAndKeepsBothOperands) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {4, 4, 1, 1}, DType::kF32, TensorKind::kWeight});
  int c = *g.AddNode("conv", OpKind::kConv2d, {x, w}, {}, "c");
  int a = *g.AddNode("add", OpKind::kAdd, {c, x}, {}, "a");
  int r = *g.AddNode("relu", OpKind::kRelu, {a}, {}, "r");
  int p = *g.AddNode("gap", OpKind::kGlobalAvgPool2d, {r}, {}, "p");
  int f = *g.AddNode("flatten", OpKind::kFlatten, {p}, {}, "f", TensorKind::kOutput);
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  EXPECT_THAT(g.tensor(p).shape, ElementsAre(1, 4, 1, 1));
  EXPECT_THAT(g.tensor(f).shape, ElementsAre(1, 4));

  // A declared output that disagrees with inference names both.
  Graph bad = g;
  bad.mutable_tensor(p).shape = {1, 4, 8, 8};
  EXPECT_THAT(bad.Validate().message(),
              HasSubstr("node 3 'gap' (global_avg_pool2d): output 'p' is F32 [1, 4, 8, 8], "
                        "expected F32 [1, 4, 1, 1]"));
}

TEST(ResnetOpsTest, MaxPoolWithPaddingAsResnetStem) {
  TensorDesc x = F32({2, 64, 112, 112});
  absl::StatusOr<InferredOutput> out = Infer(OpKind::kMaxPool2d, Pool(3, 2, 1), {&x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape, ElementsAre(2, 64, 56, 56));
  // Odd sizes floor: (7 + 2 - 3) / 2 + 1 = 4.
  TensorDesc odd = F32({1, 1, 7, 7});
  EXPECT_THAT(Infer(OpKind::kMaxPool2d, Pool(3, 2, 1), {&odd})->shape, ElementsAre(1, 1, 4, 4));
  // Padding as large as the window would make windows of padding only.
  absl::Status s = Infer(OpKind::kMaxPool2d, Pool(3, 2, 3), {&x}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("must be smaller than the pool window (3, 3)"));
}

TEST(ResnetOpsTest, AvgPoolShapesAndErrors) {
  TensorDesc x = F32({2, 8, 14, 14});
  NodeAttrs a = Pool(3, 2, 1);
  a.count_include_pad = true;  // does not change the shape
  absl::StatusOr<InferredOutput> out = Infer(OpKind::kAvgPool2d, a, {&x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape, ElementsAre(2, 8, 7, 7));
  NodeAttrs asym = Pool(2, 1, 0);
  asym.pad_bottom = 1;
  EXPECT_THAT(Infer(OpKind::kAvgPool2d, asym, {&x})->shape, ElementsAre(2, 8, 14, 13));

  TensorDesc i8 = x;
  i8.dtype = DType::kI8;
  EXPECT_THAT(Infer(OpKind::kAvgPool2d, a, {&i8}).status().message(),
              HasSubstr("dtype must be F32"));
  TensorDesc rank3 = F32({8, 14, 14});
  EXPECT_THAT(Infer(OpKind::kAvgPool2d, a, {&rank3}).status().message(),
              HasSubstr("expected rank 4"));
  TensorDesc tiny = F32({1, 1, 2, 2});
  EXPECT_THAT(Infer(OpKind::kAvgPool2d, Pool(5, 1, 1), {&tiny}).status().message(),
              HasSubstr("window 5 is larger than padded H 4"));
  EXPECT_THAT(Infer(OpKind::kAvgPool2d, Pool(3, 0, 1), {&x}).status().message(),
              HasSubstr("must be >= 1"));
}

TEST(ResnetOpsTest, GlobalAvgPoolShapesAndErrors) {
  TensorDesc x = F32({4, 2048, 7, 7});
  absl::StatusOr<InferredOutput> out = Infer(OpKind::kGlobalAvgPool2d, {}, {&x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape, ElementsAre(4, 2048, 1, 1));
  TensorDesc flat = F32({4, 2048});
  EXPECT_THAT(Infer(OpKind::kGlobalAvgPool2d, {}, {&flat}).status().message(),
              HasSubstr("expected rank 4"));
  TensorDesc i32 = x;
  i32.dtype = DType::kI32;
  EXPECT_THAT(Infer(OpKind::kGlobalAvgPool2d, {}, {&i32}).status().message(),
              HasSubstr("dtype must be F32"));
}

TEST(ResnetOpsTest, ClipRangeAndDtype) {
  TensorDesc x = F32({3, 5});
  NodeAttrs relu6{.clip_min = 0.f, .clip_max = 6.f};
  absl::StatusOr<InferredOutput> out = Infer(OpKind::kClip, relu6, {&x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape, ElementsAre(3, 5));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(Infer(OpKind::kClip, {.clip_min = -inf, .clip_max = inf}, {&x}).ok());
  EXPECT_TRUE(Infer(OpKind::kClip, {.clip_min = 2.f, .clip_max = 2.f}, {&x}).ok());

  absl::Status s = Infer(OpKind::kClip, {.clip_min = 1.f, .clip_max = 0.f}, {&x}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("clip range [1, 0]"));
  EXPECT_FALSE(Infer(OpKind::kClip, {.clip_min = std::nanf(""), .clip_max = 1.f}, {&x}).ok());
  TensorDesc i8 = x;
  i8.dtype = DType::kI8;
  EXPECT_THAT(Infer(OpKind::kClip, relu6, {&i8}).status().message(),
              HasSubstr("dtype must be F32"));
}

TEST(ResnetOpsTest, BadNodeThroughAddNodeNamesTheNode) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  int y = g.AddTensor({"y", {1, 4, 4, 4}, DType::kF32, TensorKind::kInput});
  absl::StatusOr<int> add = g.AddNode("layer1.0.add", OpKind::kAdd, {x, y}, {}, "z");
  ASSERT_FALSE(add.ok());
  EXPECT_THAT(add.status().message(),
              HasSubstr("node 0 'layer1.0.add' (add): input 1 'y' F32 [1, 4, 4, 4]"));
}

}  // namespace
}  // namespace tunejit
