#include "graph/vgg16.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

// torchvision cfgs["D"]: output channels, 0 = max pool.
constexpr int kConfigD[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                            0,  512, 512, 512, 0,   512, 512, 512, 0};

// module(x) + bias, with the bias weight named "<module>.bias"; returns the bias_add output.
absl::StatusOr<int> WithBias(Graph* g, const std::string& module, OpKind op, int x, int64_t out,
                             std::vector<int64_t> weight_shape, const NodeAttrs& attrs) {
  const int w =
      g->AddTensor({module + ".weight", std::move(weight_shape), DType::kF32, TensorKind::kWeight});
  const int b = g->AddTensor({module + ".bias", {out}, DType::kF32, TensorKind::kWeight});
  TUNEJIT_ASSIGN_OR_RETURN(int y, g->AddNode(module, op, {x, w}, attrs, module + ".out"));
  return g->AddNode(module + ".bias_add", OpKind::kBiasAdd, {y, b}, {}, module + ".bias_add.out");
}

absl::StatusOr<int> Features(Graph* g, int x) {
  int64_t channels = 3;
  int index = 0;  // torchvision's nn.Sequential index
  for (int c : kConfigD) {
    const std::string module = absl::StrCat("features.", index);
    if (c == 0) {
      NodeAttrs pool{.stride_h = 2, .stride_w = 2, .pool_h = 2, .pool_w = 2};
      TUNEJIT_ASSIGN_OR_RETURN(x,
                               g->AddNode(module, OpKind::kMaxPool2d, {x}, pool, module + ".out"));
      index += 1;
      continue;
    }
    NodeAttrs conv{.pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
    TUNEJIT_ASSIGN_OR_RETURN(x,
                             WithBias(g, module, OpKind::kConv2d, x, c, {c, channels, 3, 3}, conv));
    const std::string relu = absl::StrCat("features.", index + 1);
    TUNEJIT_ASSIGN_OR_RETURN(x, g->AddNode(relu, OpKind::kRelu, {x}, {}, relu + ".out"));
    channels = c;
    index += 2;
  }
  return x;
}

}  // namespace

absl::StatusOr<Graph> BuildVgg16(const Vgg16Options& options) {
  if (options.batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat("vgg16: batch ", options.batch, " < 1"));
  }
  Graph g;
  int x = g.AddTensor({"input", {options.batch, 3, 224, 224}, DType::kF32, TensorKind::kInput});
  TUNEJIT_ASSIGN_OR_RETURN(x, Features(&g, x));
  // avgpool (7x7 -> 7x7) is identity; torch.flatten(x, 1) gives [batch, 512 * 7 * 7].
  TUNEJIT_ASSIGN_OR_RETURN(x, g.AddNode("flatten", OpKind::kFlatten, {x}, {}, "flatten.out"));
  const int64_t widths[] = {25088, 4096, 4096, 1000};
  for (int layer = 0; layer < 3; ++layer) {
    const std::string module = absl::StrCat("classifier.", 3 * layer);
    TUNEJIT_ASSIGN_OR_RETURN(x, WithBias(&g, module, OpKind::kDense, x, widths[layer + 1],
                                         {widths[layer + 1], widths[layer]}, {}));
    if (layer < 2) {  // ReLU at classifier.1 / .4; Dropout (.2 / .5) is identity
      const std::string relu = absl::StrCat("classifier.", 3 * layer + 1);
      TUNEJIT_ASSIGN_OR_RETURN(x, g.AddNode(relu, OpKind::kRelu, {x}, {}, relu + ".out"));
    }
  }
  // The last bias_add's output is the model's output (or softmax's input).
  g.mutable_tensor(x).name = "logits";
  if (!options.with_softmax) {
    g.mutable_tensor(x).kind = TensorKind::kOutput;
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(
        x, g.AddNode("softmax", OpKind::kSoftmax, {x}, {}, "probs", TensorKind::kOutput));
  }
  TUNEJIT_RETURN_IF_ERROR(g.Validate());
  return g;
}

}  // namespace tunejit
