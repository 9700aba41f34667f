// GPU tests of the cuDNN/cuBLAS baseline (label gpu): a small conv/pool/dense/softmax network
// against the CPU reference (ops/cpu_reference.h), a residual network with every ResNet op against
// the CPU reference forward (both also in float16 NHWC), a grouped strided conv, the error paths
// that need a network, and a VGG-16 batch-1 smoke test of Run and TimeLayers (float16 against
// float32 there).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "autotvm/workload.h"
#include "baseline/cudnn_network.h"
#include "common/status_macros.h"
#include "executor/reference_forward.h"
#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/vgg16.h"
#include "graph/weights.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "ops/cpu_reference.h"
#include "ops/elementwise.h"
#include "ops/op_template.h"
#include "tests/executor/executor_test_util.h"
#include "tests/testing/gpu_test.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

#define REQUIRE_GPU_AND_CUDNN() \
  TUNEJIT_REQUIRE_GPU();        \
  if (!CudnnBaselineAvailable()) GTEST_SKIP() << "built without cuDNN"

std::vector<float> Floats(const WeightSet& w, const Graph& g, const std::string& name) {
  absl::Span<const uint8_t> bytes = w.Get(*g.FindTensor(name));
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), bytes.size());
  return v;
}

std::vector<float> TestInput(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.37 * i) + 0.25f * std::cos(0.011 * i);
  return v;
}

int Add(Graph& g, const std::string& name, OpKind op, std::vector<int> in, const NodeAttrs& a,
        const std::string& out, TensorKind kind = TensorKind::kActivation) {
  absl::StatusOr<int> id = g.AddNode(name, op, std::move(in), a, out, kind);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.value_or(-1);
}

// [2,3,16,16] -> conv 3x3 pad 1 (8) + bias + relu -> max pool 2x2/2 -> flatten -> dense 10 + bias
// ("logits", an output) -> softmax ("probs").
Graph SmallNet() {
  Graph g;
  const int x = g.AddTensor({"input", {2, 3, 16, 16}, DType::kF32, TensorKind::kInput});
  const int cw = g.AddTensor({"conv.weight", {8, 3, 3, 3}, DType::kF32, TensorKind::kWeight});
  const int cb = g.AddTensor({"conv.bias", {8}, DType::kF32, TensorKind::kWeight});
  const int fw = g.AddTensor({"fc.weight", {10, 512}, DType::kF32, TensorKind::kWeight});
  const int fb = g.AddTensor({"fc.bias", {10}, DType::kF32, TensorKind::kWeight});
  NodeAttrs conv;
  conv.pad_top = conv.pad_bottom = conv.pad_left = conv.pad_right = 1;
  NodeAttrs pool;
  pool.stride_h = pool.stride_w = 2;
  int t = Add(g, "conv", OpKind::kConv2d, {x, cw}, conv, "conv_out");
  t = Add(g, "conv.bias_add", OpKind::kBiasAdd, {t, cb}, {}, "conv_bias");
  t = Add(g, "relu", OpKind::kRelu, {t}, {}, "relu_out");
  t = Add(g, "pool", OpKind::kMaxPool2d, {t}, pool, "pool_out");
  t = Add(g, "flatten", OpKind::kFlatten, {t}, {}, "flat");
  t = Add(g, "fc", OpKind::kDense, {t, fw}, {}, "fc_out");
  t = Add(g, "fc.bias_add", OpKind::kBiasAdd, {t, fb}, {}, "logits", TensorKind::kOutput);
  Add(g, "softmax", OpKind::kSoftmax, {t}, {}, "probs", TensorKind::kOutput);
  return g;
}

// The CPU reference of SmallNet: pool_out, logits and probs.
std::map<std::string, std::vector<float>> SmallNetReference(const Graph& g, const WeightSet& w,
                                                            const std::vector<float>& input) {
  autotvm::Conv2dParams p;
  p.n = 2, p.ci = 3, p.h = 16, p.w = 16, p.co = 8, p.kh = 3, p.kw = 3;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
  const std::vector<double> conv = cpuref::Conv2dFloat(p, input, Floats(w, g, "conv.weight"));
  const std::vector<float> act = cpuref::EpilogueFloat(
      conv, 8, 16 * 16, Epilogue{.bias = true, .relu = true}, Floats(w, g, "conv.bias"), {});
  Pool2dParams pp;
  pp.n = 2, pp.c = 8, pp.h = 16, pp.w = 16;
  std::map<std::string, std::vector<float>> out;
  out["pool_out"] = cpuref::MaxPool2d(pp, act);
  const std::vector<double> fc =
      cpuref::DenseFloat(2, 10, 512, out["pool_out"], Floats(w, g, "fc.weight"));
  out["logits"] =
      cpuref::EpilogueFloat(fc, 10, 1, Epilogue{.bias = true}, Floats(w, g, "fc.bias"), {});
  out["probs"] = cpuref::Softmax(2, 10, out["logits"]);
  return out;
}

TEST(CudnnNetworkGpuTest, SmallNetMatchesCpuReference) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const Graph g = SmallNet();
  ASSERT_TRUE(g.Validate().ok()) << g.Validate();
  const WeightSet w = RandomWeights(g, 7);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net = CudnnNetwork::Create(*dev, g, w);
  ASSERT_TRUE(net.ok()) << net.status();
  const std::vector<float> input = TestInput(2 * 3 * 16 * 16);
  ASSERT_TRUE((*net)->SetInput("input", input).ok());
  ASSERT_TRUE((*net)->Run().ok());
  const auto reference = SmallNetReference(g, w, input);
  for (const auto& [name, expected] : reference) {
    absl::StatusOr<std::vector<float>> got = (*net)->Output(name);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_LT(cpuref::RelativeError(*got, expected), 1e-5) << name;
  }
  // The test is not degenerate: the reference probabilities of a row are far from uniform.
  const std::vector<float>& probs = reference.at("probs");
  const auto [lo, hi] = std::minmax_element(probs.begin(), probs.begin() + 10);
  EXPECT_GT(*hi - *lo, 1e-3);
  // fc_out was overwritten by fc.bias_add in place; the baseline says so instead of returning it.
  EXPECT_EQ((*net)->Output("fc_out").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string((*net)->Output("fc_out").status().message()), HasSubstr("fc.bias_add"));
  EXPECT_THAT((*net)->Version(), HasSubstr("cuDNN 9."));
  EXPECT_THAT((*net)->Version(), HasSubstr("cuBLAS "));
}

// Float16 NHWC: the same outputs within float16 rounding (the pool's 4-D output converted back to
// NCHW, the dense reading the channels-last flatten with its permuted weight), on tensor cores.
TEST(CudnnNetworkGpuTest, SmallNetFp16MatchesCpuReference) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const Graph g = SmallNet();
  const WeightSet w = RandomWeights(g, 7);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net =
      CudnnNetwork::Create(*dev, g, w, BaselinePrecision::kFp16);
  ASSERT_TRUE(net.ok()) << net.status();
  const std::vector<float> input = TestInput(2 * 3 * 16 * 16);
  ASSERT_TRUE((*net)->SetInput("input", input).ok());
  ASSERT_TRUE((*net)->Run().ok());
  for (const auto& [name, expected] : SmallNetReference(g, w, input)) {
    absl::StatusOr<std::vector<float>> got = (*net)->Output(name);
    ASSERT_TRUE(got.ok()) << got.status();
    const double error = cpuref::RelativeError(*got, expected);
    EXPECT_LT(error, 5e-3) << name;
    EXPECT_GT(error, 0) << name << ": bit-exact float32 cannot come from float16 tensors";
  }
  absl::StatusOr<std::vector<BaselineLayer>> layers = (*net)->TimeLayers(3);
  ASSERT_TRUE(layers.ok()) << layers.status();
  ASSERT_EQ(layers->size(), 4u);
  EXPECT_EQ((*layers)[2].algorithm, "cublasGemmEx");
  EXPECT_THAT((*layers)[0].algorithm, HasSubstr(" + bias + relu"));  // one fused call
  EXPECT_EQ(BaselinePrecisionName(BaselinePrecision::kFp16), "fp16");
}

TEST(CudnnNetworkGpuTest, SmallNetTimingsAndUnchangedOutputs) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const Graph g = SmallNet();
  const WeightSet w = RandomWeights(g, 3);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net = CudnnNetwork::Create(*dev, g, w);
  ASSERT_TRUE(net.ok()) << net.status();
  const std::vector<float> input = TestInput(2 * 3 * 16 * 16);
  ASSERT_TRUE((*net)->SetInput("input", input).ok());
  absl::StatusOr<std::vector<BaselineLayer>> layers = (*net)->TimeLayers(5);
  ASSERT_TRUE(layers.ok()) << layers.status();
  ASSERT_EQ(layers->size(), 4u);
  const char* names[] = {"conv", "pool", "fc", "softmax"};
  const char* ops[] = {"conv2d", "max_pool2d", "dense", "softmax"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*layers)[i].name, names[i]);
    EXPECT_EQ((*layers)[i].op, ops[i]);
    EXPECT_FALSE((*layers)[i].algorithm.empty());
    EXPECT_GT((*layers)[i].seconds, 0);
    EXPECT_GT((*layers)[i].with_epilogue_seconds, 0);
  }
  // The conv's epilogue then its pool: each a kernel more than the time before.
  EXPECT_GT((*layers)[0].with_epilogue_seconds, (*layers)[0].seconds);
  EXPECT_GT((*layers)[0].with_pool_seconds, (*layers)[0].with_epilogue_seconds);
  EXPECT_EQ((*layers)[2].with_pool_seconds, (*layers)[2].with_epilogue_seconds);  // a dense
  EXPECT_EQ((*layers)[2].algorithm, "cublasSgemm");
  absl::StatusOr<double> total = (*net)->TimeEndToEnd(5);
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_GT(*total, 0);
  EXPECT_LT(*total, 1.0);
  // Timing reruns the layers (with in-place epilogues); outputs must still be the reference's.
  const auto reference = SmallNetReference(g, w, input);
  absl::StatusOr<std::vector<float>> probs = (*net)->Output("probs");
  ASSERT_TRUE(probs.ok()) << probs.status();
  EXPECT_LT(cpuref::RelativeError(*probs, reference.at("probs")), 1e-5);
  EXPECT_EQ((*net)->TimeEndToEnd(0).status().code(), absl::StatusCode::kInvalidArgument);
}

// The residual network of the executor tests (every ResNet op: padded max pool, residual add
// run in place, avg and global avg pooling, clip as clipped ReLU) through the baseline at
// `precision`, run once, and its CPU reference forward's logits.
struct ResidualRun {
  std::unique_ptr<CudnnNetwork> net;
  std::vector<float> want;
};
absl::StatusOr<ResidualRun> RunResidualNet(const Device& dev, BaselinePrecision precision) {
  const Graph g = testing::ResidualNet();
  const WeightSet w = RandomWeights(g, 11);
  ResidualRun run;
  TUNEJIT_ASSIGN_OR_RETURN(run.net, CudnnNetwork::Create(dev, g, w, precision));
  const std::vector<float> input = testing::NormalFloats(2 * 4 * 16 * 16, 21);
  TUNEJIT_RETURN_IF_ERROR(run.net->SetInput("input", input));
  TUNEJIT_RETURN_IF_ERROR(run.net->Run());
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<std::vector<float>> want,
                           ReferenceForward(g, w, {{"input", input}}));
  run.want = std::move(want[*g.FindTensor("logits")]);
  return run;
}

// cuDNN's algorithms sum in other orders than the double reference, hence 1e-4.
TEST(CudnnNetworkGpuTest, ResidualNetMatchesReferenceForward) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  absl::StatusOr<ResidualRun> run = RunResidualNet(*dev, BaselinePrecision::kFp32);
  ASSERT_TRUE(run.ok()) << run.status();
  std::unique_ptr<CudnnNetwork>& net = run->net;
  absl::StatusOr<std::vector<float>> got = net->Output("logits");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LT(cpuref::RelativeError(*got, run->want), 1e-4);
  // Per-layer timing covers the nodes tunejit runs as steps, the adds with their relu.
  absl::StatusOr<std::vector<BaselineLayer>> layers = net->TimeLayers(3);
  ASSERT_TRUE(layers.ok()) << layers.status();
  std::vector<std::string> ops;
  for (const BaselineLayer& l : *layers) ops.push_back(l.op);
  EXPECT_THAT(ops, ::testing::ElementsAre("conv2d", "max_pool2d", "conv2d", "conv2d", "add",
                                          "conv2d", "conv2d", "conv2d", "add", "avg_pool2d",
                                          "global_avg_pool2d", "clip", "dense"));
  // Timing reran the in-place adds; the final Run restores the network's outputs.
  got = net->Output("logits");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LT(cpuref::RelativeError(*got, run->want), 1e-4);
}

// Adds, average pools and clip on float16 NHWC tensors too (conv + bias + relu folded).
TEST(CudnnNetworkGpuTest, ResidualNetFp16MatchesReferenceForward) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  absl::StatusOr<ResidualRun> run = RunResidualNet(*dev, BaselinePrecision::kFp16);
  ASSERT_TRUE(run.ok()) << run.status();
  absl::StatusOr<std::vector<float>> got = run->net->Output("logits");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LT(cpuref::RelativeError(*got, run->want), 1e-2);
}

TEST(CudnnNetworkGpuTest, GroupedStridedConvMatchesCpuReference) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  Graph g;
  const int x = g.AddTensor({"x", {2, 4, 9, 9}, DType::kF32, TensorKind::kInput});
  const int w = g.AddTensor({"w", {6, 2, 3, 3}, DType::kF32, TensorKind::kWeight});
  NodeAttrs a;
  a.groups = 2;
  a.stride_h = a.stride_w = 2;
  a.pad_top = a.pad_bottom = a.pad_left = a.pad_right = 1;
  Add(g, "gconv", OpKind::kConv2d, {x, w}, a, "y", TensorKind::kOutput);
  const WeightSet weights = RandomWeights(g, 11);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net = CudnnNetwork::Create(*dev, g, weights);
  ASSERT_TRUE(net.ok()) << net.status();
  const std::vector<float> input = TestInput(2 * 4 * 9 * 9);
  ASSERT_TRUE((*net)->SetInput("x", input).ok());
  ASSERT_TRUE((*net)->Run().ok());
  autotvm::Conv2dParams p;
  p.n = 2, p.ci = 4, p.h = 9, p.w = 9, p.co = 6, p.kh = 3, p.kw = 3, p.groups = 2;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = 1;
  const std::vector<double> acc = cpuref::Conv2dFloat(p, input, Floats(weights, g, "w"));
  const std::vector<float> expected =
      cpuref::EpilogueFloat(acc, 6, p.OutH() * p.OutW(), Epilogue{}, {}, {});
  absl::StatusOr<std::vector<float>> got = (*net)->Output("y");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 2u * 6 * 5 * 5);
  EXPECT_LT(cpuref::RelativeError(*got, expected), 1e-5);
}

TEST(CudnnNetworkGpuTest, CreateAndSetInputErrors) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  Graph q;
  const int x = q.AddTensor({"x", {2, 5}, DType::kF32, TensorKind::kInput});
  NodeAttrs a;
  a.scale = 0.5f;
  Add(q, "to_int8", OpKind::kQuantize, {x}, a, "q", TensorKind::kOutput);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> bad =
      CudnnNetwork::Create(*dev, q, RandomWeights(q, 1));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'to_int8'"));

  const Graph g = SmallNet();
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net =
      CudnnNetwork::Create(*dev, g, RandomWeights(g, 1));
  ASSERT_TRUE(net.ok()) << net.status();
  EXPECT_EQ((*net)->SetInput("input", TestInput(5)).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*net)->SetInput("conv.weight", TestInput(216)).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*net)->Output("nope").status().code(), absl::StatusCode::kNotFound);
}

TEST(CudnnNetworkGpuTest, Vgg16Batch1RunsAndTimesEveryLayer) {
  REQUIRE_GPU_AND_CUDNN();
  absl::StatusOr<Device> dev = Device::Open(0);
  ASSERT_TRUE(dev.ok()) << dev.status();
  absl::StatusOr<Graph> g = BuildVgg16({.batch = 1});
  ASSERT_TRUE(g.ok()) << g.status();
  const WeightSet w = RandomWeights(*g, 1);
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net = CudnnNetwork::Create(*dev, *g, w);
  ASSERT_TRUE(net.ok()) << net.status();
  ASSERT_TRUE((*net)->SetInput("input", TestInput(3 * 224 * 224)).ok());
  ASSERT_TRUE((*net)->Run().ok());
  absl::StatusOr<std::vector<float>> logits = (*net)->Output("logits");
  ASSERT_TRUE(logits.ok()) << logits.status();
  ASSERT_EQ(logits->size(), 1000u);
  int nonzero = 0;
  for (float v : *logits) {
    ASSERT_TRUE(std::isfinite(v));
    nonzero += v != 0;
  }
  EXPECT_GT(nonzero, 900);
  absl::StatusOr<std::vector<BaselineLayer>> layers = (*net)->TimeLayers(3);
  ASSERT_TRUE(layers.ok()) << layers.status();
  std::map<std::string, int> count;
  for (const BaselineLayer& l : *layers) {
    ++count[l.op];
    EXPECT_GT(l.seconds, 0) << l.name;
    EXPECT_GT(l.with_epilogue_seconds, 0) << l.name;
    EXPECT_FALSE(l.algorithm.empty()) << l.name;
  }
  EXPECT_EQ(count["conv2d"], 13);
  EXPECT_EQ(count["dense"], 3);
  EXPECT_EQ(count["max_pool2d"], 5);
  EXPECT_EQ(layers->size(), 21u);
  EXPECT_EQ(layers->front().name, "features.0");
  EXPECT_EQ(layers->back().name, "classifier.6");
  // Float16 NHWC: the logits of the float32 network within float16 rounding (the first dense
  // reads the 7x7x512 channels-last flatten), each pooled conv timed with its pool.
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> half =
      CudnnNetwork::Create(*dev, *g, w, BaselinePrecision::kFp16);
  ASSERT_TRUE(half.ok()) << half.status();
  ASSERT_TRUE((*half)->SetInput("input", TestInput(3 * 224 * 224)).ok());
  ASSERT_TRUE((*half)->Run().ok());
  absl::StatusOr<std::vector<float>> half_logits = (*half)->Output("logits");
  ASSERT_TRUE(half_logits.ok()) << half_logits.status();
  EXPECT_LT(cpuref::RelativeError(*half_logits, *logits), 2e-2);
  absl::StatusOr<std::vector<BaselineLayer>> half_layers = (*half)->TimeLayers(3);
  ASSERT_TRUE(half_layers.ok()) << half_layers.status();
  int pooled = 0;
  for (const BaselineLayer& l : *half_layers) {
    pooled += l.op == "conv2d" && l.with_pool_seconds != l.with_epilogue_seconds;
  }
  EXPECT_EQ(pooled, 5);  // features.2, 7, 14, 21, 28
}

}  // namespace
}  // namespace tunejit
