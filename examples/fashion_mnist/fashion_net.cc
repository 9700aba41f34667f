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

std::vector<float> NormalizePixels(absl::Span<const uint8_t> pixels) {
  std::vector<float> out(pixels.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    out[i] = (static_cast<float>(pixels[i]) / 255.0f - kFashionMean) / kFashionStd;
  }
  return out;
}

}  // namespace tunejit
