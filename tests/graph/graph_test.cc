#include "graph/graph.h"

#include "gmock/gmock.h"
#include "graph/shape_inference.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// data [2, 3, 8, 8] -> conv 3x3 pad 1 (4 ch) -> bias_add -> relu -> max_pool 2x2 -> flatten ->
// dense.
struct Small {
  Graph g;
  int x, w, b, y, fc;
};

Small BuildSmall() {
  Small s;
  s.x = s.g.AddTensor({"x", {2, 3, 8, 8}, DType::kF32, TensorKind::kInput});
  s.w = s.g.AddTensor({"w", {4, 3, 3, 3}, DType::kF32, TensorKind::kWeight});
  s.b = s.g.AddTensor({"b", {4}, DType::kF32, TensorKind::kWeight});
  s.fc = s.g.AddTensor({"fc", {10, 64}, DType::kF32, TensorKind::kWeight});
  NodeAttrs conv{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  int c = *s.g.AddNode("conv", OpKind::kConv2d, {s.x, s.w}, conv, "conv.out");
  int ba = *s.g.AddNode("bias", OpKind::kBiasAdd, {c, s.b}, {}, "bias.out");
  int r = *s.g.AddNode("relu", OpKind::kRelu, {ba}, {}, "relu.out");
  NodeAttrs pool{.stride_h = 2, .stride_w = 2};
  int p = *s.g.AddNode("pool", OpKind::kMaxPool2d, {r}, pool, "pool.out");
  int f = *s.g.AddNode("flatten", OpKind::kFlatten, {p}, {}, "flat");
  s.y = *s.g.AddNode("fc", OpKind::kDense, {f, s.fc}, {}, "y", TensorKind::kOutput);
  return s;
}

TEST(GraphTest, InfersShapesAndValidates) {
  Small s = BuildSmall();
  EXPECT_TRUE(s.g.Validate().ok()) << s.g.Validate();
  EXPECT_THAT(s.g.tensor(*s.g.FindTensor("conv.out")).shape, ElementsAre(2, 4, 8, 8));
  EXPECT_THAT(s.g.tensor(*s.g.FindTensor("pool.out")).shape, ElementsAre(2, 4, 4, 4));
  EXPECT_THAT(s.g.tensor(*s.g.FindTensor("flat")).shape, ElementsAre(2, 64));
  EXPECT_THAT(s.g.tensor(s.y).shape, ElementsAre(2, 10));
  // conv: 2*4*8*8 outputs x 27; dense: 2*10 outputs x 64.
  EXPECT_EQ(GraphMacs(s.g), 2 * 4 * 64 * 27 + 2 * 10 * 64);
}

TEST(GraphTest, ConvStrideDilationGroupsAndInt8) {
  TensorDesc x{"x", {1, 8, 15, 15}, DType::kI8, TensorKind::kInput};
  TensorDesc w{"w", {6, 4, 3, 3}, DType::kI8, TensorKind::kWeight};
  NodeAttrs a{.stride_h = 2,
              .stride_w = 1,
              .pad_top = 1,
              .pad_bottom = 0,
              .dilation_h = 2,
              .dilation_w = 1,
              .groups = 2};
  const TensorDesc* in[] = {&x, &w};
  absl::StatusOr<InferredOutput> out = InferOutput(OpKind::kConv2d, a, in);
  ASSERT_TRUE(out.ok()) << out.status();
  // H: (15 + 1 - 5) / 2 + 1 = 6; W: (15 - 3) / 1 + 1 = 13.
  EXPECT_THAT(out->shape, ElementsAre(1, 6, 6, 13));
  EXPECT_EQ(out->dtype, DType::kI32);
}

TEST(GraphTest, InferenceErrorsNameTheField) {
  TensorDesc x{"x", {1, 3, 4, 4}, DType::kF32, TensorKind::kInput};
  TensorDesc w{"w", {8, 4, 5, 5}, DType::kF32, TensorKind::kWeight};
  const TensorDesc* in[] = {&x, &w};
  absl::Status s = InferOutput(OpKind::kConv2d, {}, in).status();
  EXPECT_THAT(s.message(), HasSubstr("input 1 'w' F32 [8, 4, 5, 5]: expected [CO, 3, KH, KW]"));
  w.shape = {8, 3, 5, 5};
  s = InferOutput(OpKind::kConv2d, {}, in).status();
  EXPECT_THAT(s.message(), HasSubstr("window 5 is larger than padded H 4"));
  s = InferOutput(OpKind::kConv2d, {.stride_h = 0}, in).status();
  EXPECT_THAT(s.message(), HasSubstr("must be >= 1"));
  TensorDesc q{"q", {1, 3, 4, 4}, DType::kI8, TensorKind::kInput};
  const TensorDesc* mixed[] = {&q, &w};
  s = InferOutput(OpKind::kConv2d, {}, mixed).status();
  EXPECT_THAT(s.message(), HasSubstr("input 1 'w' F32 [8, 3, 5, 5]: dtype must equal"));
  TensorDesc scale{"s", {2}, DType::kF32, TensorKind::kWeight};
  TensorDesc acc{"acc", {1, 3, 4, 4}, DType::kI32, TensorKind::kActivation};
  const TensorDesc* rq[] = {&acc, &scale};
  s = InferOutput(OpKind::kRequantize, {}, rq).status();
  EXPECT_THAT(s.message(), HasSubstr("expected [3] (channels of input 0) or [1]"));
  scale.shape = {1};
  ASSERT_TRUE(InferOutput(OpKind::kRequantize, {}, rq).ok());
  EXPECT_EQ(InferOutput(OpKind::kRequantize, {}, rq)->dtype, DType::kI8);
  const TensorDesc* sm[] = {&x};
  NodeAttrs axis4;
  axis4.axis = 4;
  EXPECT_THAT(InferOutput(OpKind::kSoftmax, axis4, sm).status().message(),
              HasSubstr("axis 4 is not a dim of a rank-4 tensor"));
  EXPECT_THAT(InferOutput(OpKind::kRelu, {}, in).status().message(),
              HasSubstr("expected 1 inputs, got 2"));
}

// quantize -> int8 conv (int32 accumulators) -> requantize -> max pool -> dequantize.
TEST(GraphTest, Int8ChainValidates) {
  Graph g;
  int x = g.AddTensor({"x", {1, 4, 8, 8}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {8, 4, 3, 3}, DType::kI8, TensorKind::kWeight});
  int rs = g.AddTensor({"rs", {8}, DType::kF32, TensorKind::kWeight});
  int ds = g.AddTensor({"ds", {1}, DType::kF32, TensorKind::kWeight});
  int q = *g.AddNode("q", OpKind::kQuantize, {x}, {.scale = 0.05f}, "q.out");
  EXPECT_EQ(g.tensor(q).dtype, DType::kI8);
  int c = *g.AddNode("conv", OpKind::kConv2d, {q, w}, {}, "acc");
  EXPECT_EQ(g.tensor(c).dtype, DType::kI32);
  int r = *g.AddNode("rq", OpKind::kRequantize, {c, rs}, {}, "rq.out");
  int p = *g.AddNode("pool", OpKind::kMaxPool2d, {r}, {.stride_h = 2, .stride_w = 2}, "pool.out");
  EXPECT_EQ(g.tensor(p).dtype, DType::kI8);
  int y = *g.AddNode("dq", OpKind::kDequantize, {p, ds}, {}, "y", TensorKind::kOutput);
  EXPECT_EQ(g.tensor(y).dtype, DType::kF32);
  EXPECT_THAT(g.tensor(y).shape, ElementsAre(1, 8, 3, 3));
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  EXPECT_THAT(g.AddNode("q2", OpKind::kQuantize, {x}, {.scale = 0.f}, "q2.out").status().message(),
              HasSubstr("node 5 'q2' (quantize): attrs: scale 0 must be positive"));
  EXPECT_THAT(g.AddNode("rq2", OpKind::kRequantize, {q, rs}, {}, "z").status().message(),
              HasSubstr("input 0 'q.out' I8 [1, 4, 8, 8]: dtype must be I32"));
}

TEST(GraphTest, AddNodeReportsTheNode) {
  Graph g;
  int x = g.AddTensor({"x", {1, 3, 4, 4}, DType::kF32, TensorKind::kInput});
  int w = g.AddTensor({"w", {8, 2, 1, 1}, DType::kF32, TensorKind::kWeight});
  absl::StatusOr<int> y = g.AddNode("features.0", OpKind::kConv2d, {x, w}, {}, "y");
  EXPECT_THAT(y.status().message(), HasSubstr("node 0 'features.0' (conv2d): input 1 'w'"));
}

TEST(GraphTest, ValidateCatchesStructuralErrors) {
  {  // declared output shape disagrees with inference
    Small s = BuildSmall();
    Node bad{"relu2", OpKind::kRelu, {s.y}, -1, {}};
    bad.output = s.g.AddTensor({"z", {2, 11}, DType::kF32, TensorKind::kOutput});
    s.g.AddNodeUnchecked(bad);
    EXPECT_THAT(
        s.g.Validate().message(),
        HasSubstr("node 6 'relu2' (relu): output 'z' is F32 [2, 11], expected F32 [2, 10]"));
  }
  {  // use before definition
    Graph g;
    int a = g.AddTensor({"a", {4}, DType::kF32, TensorKind::kActivation});
    int o = g.AddTensor({"o", {4}, DType::kF32, TensorKind::kOutput});
    g.AddNodeUnchecked({"r", OpKind::kRelu, {a}, o, {}});
    EXPECT_THAT(g.Validate().message(), HasSubstr("input 0 'a' is used before a node produces it"));
  }
  {  // a conv whose weight is an activation
    Graph g;
    int x = g.AddTensor({"x", {1, 1, 2, 2}, DType::kF32, TensorKind::kInput});
    int w = g.AddTensor({"w", {1, 1, 1, 1}, DType::kF32, TensorKind::kInput});
    (void)g.AddNode("c", OpKind::kConv2d, {x, w}, {}, "y", TensorKind::kOutput);
    EXPECT_THAT(g.Validate().message(), HasSubstr("input 1 'w' has kind input; expected a weight"));
  }
  {  // duplicate names, unproduced activation, produced twice, writes to an input
    Small s = BuildSmall();
    s.g.AddTensor({"x", {1}, DType::kF32, TensorKind::kWeight});
    EXPECT_THAT(s.g.Validate().message(), HasSubstr("tensor 'x': name is empty or used twice"));
    Small t = BuildSmall();
    t.g.AddTensor({"dangling", {1}, DType::kF32, TensorKind::kActivation});
    EXPECT_THAT(t.g.Validate().message(), HasSubstr("'dangling' (activation): no node produces"));
    Small u = BuildSmall();
    u.g.AddNodeUnchecked({"again", OpKind::kRelu, {u.y}, u.y, {}});
    EXPECT_THAT(u.g.Validate().message(), HasSubstr("output 'y' is already produced by node 5"));
    Small v = BuildSmall();
    v.g.AddNodeUnchecked({"into_input", OpKind::kRelu, {v.y}, v.x, {}});
    EXPECT_THAT(v.g.Validate().message(), HasSubstr("output 'x' is a graph input"));
  }
}

// The general tensor ops' shape rules and the errors that name what does not fit.
TEST(GraphTest, TensorOpShapesAndErrors) {
  TensorDesc a{"a", {2, 3, 4}, DType::kF32, TensorKind::kActivation};
  TensorDesc b{"b", {3, 1}, DType::kF32, TensorKind::kWeight};
  TensorDesc c{"c", {2, 5, 4}, DType::kF32, TensorKind::kActivation};
  const TensorDesc* ab[] = {&a, &b};
  NodeAttrs mul;
  mul.binary = BinaryFn::kMul;
  EXPECT_EQ(InferOutput(OpKind::kBinary, mul, ab)->shape, (std::vector<int64_t>{2, 3, 4}));
  b.shape = {2, 4};
  EXPECT_THAT(InferOutput(OpKind::kBinary, mul, ab).status().message(),
              HasSubstr("do not broadcast (dim 1: 3 vs 2)"));
  NodeAttrs axis1;
  axis1.axis = 1;
  const TensorDesc* ac[] = {&a, &c};
  EXPECT_EQ(InferOutput(OpKind::kConcat, axis1, ac)->shape, (std::vector<int64_t>{2, 8, 4}));
  NodeAttrs axis2;
  axis2.axis = 2;
  EXPECT_THAT(InferOutput(OpKind::kConcat, axis2, ac).status().message(), HasSubstr("input 1 'c'"));
  const TensorDesc* x[] = {&a};
  NodeAttrs perm;
  perm.perm = {2, 0, 1};
  EXPECT_EQ(InferOutput(OpKind::kTranspose, perm, x)->shape, (std::vector<int64_t>{4, 2, 3}));
  perm.perm = {0, 0, 1};
  EXPECT_THAT(InferOutput(OpKind::kTranspose, perm, x).status().message(),
              HasSubstr("not a permutation"));
  NodeAttrs reshape;
  reshape.shape = {6, 5};
  EXPECT_THAT(InferOutput(OpKind::kReshape, reshape, x).status().message(),
              HasSubstr("same element count"));
  NodeAttrs slice;
  slice.axis = 2;
  slice.start = 1;
  slice.end = 4;
  slice.step = 2;
  EXPECT_EQ(InferOutput(OpKind::kSlice, slice, x)->shape, (std::vector<int64_t>{2, 3, 2}));
  slice.end = 5;
  EXPECT_THAT(InferOutput(OpKind::kSlice, slice, x).status().message(),
              HasSubstr("expected 0 <= start < end <= dim"));
  NodeAttrs mean;
  mean.axes = {1, 2};
  mean.keepdims = false;
  EXPECT_EQ(InferOutput(OpKind::kReduceMean, mean, x)->shape, (std::vector<int64_t>{2}));
  mean.axes = {2, 1};
  EXPECT_THAT(InferOutput(OpKind::kReduceMean, mean, x).status().message(),
              HasSubstr("sorted and unique"));
  TensorDesc k{"k", {2, 4, 7}, DType::kF32, TensorKind::kActivation};
  const TensorDesc* ak[] = {&a, &k};
  EXPECT_EQ(InferOutput(OpKind::kMatMul, {}, ak)->shape, (std::vector<int64_t>{2, 3, 7}));
  const TensorDesc* aa[] = {&a, &a};
  EXPECT_THAT(InferOutput(OpKind::kMatMul, {}, aa).status().message(),
              HasSubstr("expected [..., 4, N]"));
  TensorDesc scale{"scale", {4}, DType::kF32, TensorKind::kWeight};
  TensorDesc wrong{"bias", {3}, DType::kF32, TensorKind::kWeight};
  const TensorDesc* ln[] = {&a, &scale, &wrong};
  NodeAttrs last;
  last.axis = 2;
  EXPECT_THAT(InferOutput(OpKind::kLayerNorm, last, ln).status().message(),
              HasSubstr("input 2 'bias' F32 [3]: expected [4]"));
  const TensorDesc* none[] = {&a};
  EXPECT_THAT(InferOutput(OpKind::kLayerNorm, last, none).status().message(),
              HasSubstr("expected 3 inputs"));
  EXPECT_EQ(ExpectedInputKind(OpKind::kConcat, 0), InputKind::kEither);
  EXPECT_EQ(ExpectedInputKind(OpKind::kLayerNorm, 2), InputKind::kWeight);
}

// gather: rows of a float32 weight table by int64 ids of any shape; the ids must be int64 and
// not a weight, the table a weight of rank >= 1.
TEST(GraphTest, GatherShapesAndErrors) {
  TensorDesc table{"table", {10, 4}, DType::kF32, TensorKind::kWeight};
  TensorDesc ids{"ids", {2, 3}, DType::kI64, TensorKind::kInput};
  const TensorDesc* ok[] = {&table, &ids};
  absl::StatusOr<InferredOutput> out = InferOutput(OpKind::kGather, {}, ok);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape, (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(out->dtype, DType::kF32);
  TensorDesc float_ids{"fids", {2, 3}, DType::kF32, TensorKind::kInput};
  const TensorDesc* bad_ids[] = {&table, &float_ids};
  EXPECT_THAT(InferOutput(OpKind::kGather, {}, bad_ids).status().message(),
              HasSubstr("input 1 'fids'"));
  TensorDesc scalar{"s", {}, DType::kF32, TensorKind::kWeight};
  const TensorDesc* bad_table[] = {&scalar, &ids};
  EXPECT_THAT(InferOutput(OpKind::kGather, {}, bad_table).status().message(),
              HasSubstr("expected rank >= 1"));
  EXPECT_EQ(ExpectedInputKind(OpKind::kGather, 0), InputKind::kWeight);
  EXPECT_EQ(ExpectedInputKind(OpKind::kGather, 1), InputKind::kActivation);

  Graph g;
  const int t = g.AddTensor(table);
  const int x = g.AddTensor(ids);
  absl::StatusOr<int> y = g.AddNode("embed", OpKind::kGather, {t, x}, {}, "y", TensorKind::kOutput);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_TRUE(g.Validate().ok()) << g.Validate();
  EXPECT_EQ(OpKindName(OpKind::kGather), "gather");
  Graph swapped;  // the ids as the table: a weight where an activation belongs
  const int t2 = swapped.AddTensor(table);
  const int x2 = swapped.AddTensor(ids);
  swapped.AddNodeUnchecked({"embed",
                            OpKind::kGather,
                            {x2, t2},
                            swapped.AddTensor({"y", {2, 3, 4}, DType::kF32, TensorKind::kOutput}),
                            {}});
  EXPECT_THAT(swapped.Validate().message(), HasSubstr("expected a weight"));
}

}  // namespace
}  // namespace tunejit
