#include "examples/fashion_mnist/fashion_net.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// train.py's nn.Sequential `features`: output channels, 0 = 2x2 max pool.
constexpr int kFeatures[] = {32, 32, 0, 64, 64, 0, 128, 0};
constexpr int64_t kHidden = 256;

// module(x) + bias + relu (when `relu`), with PyTorch's parameter names.
absl::StatusOr<int> Layer(Graph* g, const std::string& module, OpKind op, int x,
                          std::vector<int64_t> weight_shape, const NodeAttrs& attrs, bool relu,
                          const std::string& relu_name, bool output = false) {
  const int64_t out = weight_shape[0];
  const int w =
      g->AddTensor({module + ".weight", std::move(weight_shape), DType::kF32, TensorKind::kWeight});
  const int b = g->AddTensor({module + ".bias", {out}, DType::kF32, TensorKind::kWeight});
  TUNEJIT_ASSIGN_OR_RETURN(int y, g->AddNode(module, op, {x, w}, attrs, module + ".out"));
  if (!relu) {
    return g->AddNode(module + ".bias_add", OpKind::kBiasAdd, {y, b}, {}, "logits",
                      output ? TensorKind::kOutput : TensorKind::kActivation);
  }
  TUNEJIT_ASSIGN_OR_RETURN(
      y, g->AddNode(module + ".bias_add", OpKind::kBiasAdd, {y, b}, {}, module + ".bias_add.out"));
  return g->AddNode(relu_name, OpKind::kRelu, {y}, {}, relu_name + ".out");
}

// A conv with its bias (train.py's nn.Conv2d named `module`): k x k, padding k / 2, `stride`.
// Its output is "<module>.bias_add.out", followed by "<module>.relu.out" when `relu`.
absl::StatusOr<int> ConvBias(Graph* g, const std::string& module, int x, int64_t in, int64_t out,
                             int k, int stride, bool relu) {
  const int pad = k / 2;
  const NodeAttrs conv{.stride_h = stride,
                       .stride_w = stride,
                       .pad_top = pad,
                       .pad_left = pad,
                       .pad_bottom = pad,
                       .pad_right = pad};
  const int w =
      g->AddTensor({module + ".weight", {out, in, k, k}, DType::kF32, TensorKind::kWeight});
  const int b = g->AddTensor({module + ".bias", {out}, DType::kF32, TensorKind::kWeight});
  TUNEJIT_ASSIGN_OR_RETURN(int y,
                           g->AddNode(module, OpKind::kConv2d, {x, w}, conv, module + ".out"));
  TUNEJIT_ASSIGN_OR_RETURN(
      y, g->AddNode(module + ".bias_add", OpKind::kBiasAdd, {y, b}, {}, module + ".bias_add.out"));
  if (!relu) return y;
  return g->AddNode(module + ".relu", OpKind::kRelu, {y}, {}, module + ".relu.out");
}

// train.py's BasicBlock `module`: relu(conv2(relu(conv1(x))) + skip), where the skip is x, or
// its 1x1 conv `downsample` when the block strides or widens. The downsample is added after
// conv2, so on the tensor cores the skip add fuses into its epilogue (executor.md).
absl::StatusOr<int> BasicBlock(Graph* g, const std::string& module, int x, int64_t in, int64_t out,
                               int stride) {
  TUNEJIT_ASSIGN_OR_RETURN(int y, ConvBias(g, module + ".conv1", x, in, out, 3, stride, true));
  TUNEJIT_ASSIGN_OR_RETURN(y, ConvBias(g, module + ".conv2", y, out, out, 3, 1, false));
  int skip = x;
  if (stride != 1 || in != out) {
    TUNEJIT_ASSIGN_OR_RETURN(skip,
                             ConvBias(g, module + ".downsample", x, in, out, 1, stride, false));
  }
  TUNEJIT_ASSIGN_OR_RETURN(
      y, g->AddNode(module + ".add", OpKind::kAdd, {y, skip}, {}, module + ".add.out"));
  return g->AddNode(module + ".relu", OpKind::kRelu, {y}, {}, module + ".relu.out");
}

// train.py's FashionResNet stages: output channels and stride.
struct Stage {
  int64_t channels;
  int stride;
};
constexpr Stage kResNetStages[] = {{32, 1}, {64, 2}, {128, 2}};
constexpr int64_t kResNetStem = 32;

}  // namespace

absl::StatusOr<Graph> BuildFashionNet(int64_t batch) {
  if (batch < 1) return absl::InvalidArgumentError(absl::StrCat("fashion net: batch ", batch));
  Graph g;
  int x = g.AddTensor(
      {"input", {batch, 1, kFashionSide, kFashionSide}, DType::kF32, TensorKind::kInput});
  int64_t channels = 1, side = kFashionSide;
  int index = 0;  // nn.Sequential index
  for (int c : kFeatures) {
    const std::string module = absl::StrCat("features.", index);
    if (c == 0) {
      NodeAttrs pool{.stride_h = 2, .stride_w = 2, .pool_h = 2, .pool_w = 2};
      TUNEJIT_ASSIGN_OR_RETURN(x,
                               g.AddNode(module, OpKind::kMaxPool2d, {x}, pool, module + ".out"));
      side /= 2;
      index += 1;
      continue;
    }
    NodeAttrs conv{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
    TUNEJIT_ASSIGN_OR_RETURN(x, Layer(&g, module, OpKind::kConv2d, x, {c, channels, 3, 3}, conv,
                                      true, absl::StrCat("features.", index + 1)));
    channels = c;
    index += 2;
  }
  TUNEJIT_ASSIGN_OR_RETURN(x, g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out"));
  TUNEJIT_ASSIGN_OR_RETURN(x, Layer(&g, "classifier.0", OpKind::kDense, x,
                                    {kHidden, channels * side * side}, {}, true, "classifier.1"));
  TUNEJIT_ASSIGN_OR_RETURN(x, Layer(&g, "classifier.3", OpKind::kDense, x,
                                    {kFashionClasses, kHidden}, {}, false, "", /*output=*/true));
  TUNEJIT_RETURN_IF_ERROR(g.Validate());
  return g;
}

absl::StatusOr<Graph> BuildFashionResNet(int64_t batch) {
  if (batch < 1) return absl::InvalidArgumentError(absl::StrCat("fashion resnet: batch ", batch));
  Graph g;
  int x = g.AddTensor(
      {"input", {batch, 1, kFashionSide, kFashionSide}, DType::kF32, TensorKind::kInput});
  TUNEJIT_ASSIGN_OR_RETURN(x, ConvBias(&g, "stem", x, 1, kResNetStem, 3, 1, true));
  int64_t channels = kResNetStem;
  int layer = 1;
  for (const Stage& s : kResNetStages) {
    TUNEJIT_ASSIGN_OR_RETURN(
        x, BasicBlock(&g, absl::StrCat("layer", layer++), x, channels, s.channels, s.stride));
    channels = s.channels;
  }
  TUNEJIT_ASSIGN_OR_RETURN(x,
                           g.AddNode("avgpool", OpKind::kGlobalAvgPool2d, {x}, {}, "avgpool.out"));
  TUNEJIT_ASSIGN_OR_RETURN(x, g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out"));
  TUNEJIT_ASSIGN_OR_RETURN(x, Layer(&g, "fc", OpKind::kDense, x, {kFashionClasses, channels}, {},
                                    false, "", /*output=*/true));
  TUNEJIT_RETURN_IF_ERROR(g.Validate());
  return g;
}

absl::StatusOr<Graph> BuildFashionGraph(std::string_view net, int64_t batch) {
  if (net == "vgg") return BuildFashionNet(batch);
  if (net == "resnet") return BuildFashionResNet(batch);
  return absl::InvalidArgumentError(
      absl::StrCat("fashion net: '", std::string(net), "' is neither vgg nor resnet"));
}

std::vector<float> NormalizePixels(absl::Span<const uint8_t> pixels) {
  std::vector<float> out(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    out[i] = (static_cast<float>(pixels[i]) / 255.0f - kFashionMean) / kFashionStd;
  }
  return out;
}

}  // namespace tunejit
