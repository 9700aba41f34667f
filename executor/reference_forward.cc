#include "executor/reference_forward.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/node_tasks.h"
#include "graph/shape_inference.h"
#include "ops/cpu_reference.h"
#include "ops/tensor_ops_reference.h"

namespace tunejit {
namespace {

std::vector<float> ToFloat(const std::vector<double>& acc) {
  return std::vector<float>(acc.begin(), acc.end());
}

int64_t Inner(const std::vector<int64_t>& shape) {
  int64_t inner = 1;
  for (size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  return inner;
}

Pool2dParams PoolParams(const TensorDesc& x, const NodeAttrs& a) {
  Pool2dParams p{x.shape[0], x.shape[1], x.shape[2], x.shape[3], a.pool_h,     a.pool_w,
                 a.stride_h, a.stride_w, a.pad_top,  a.pad_left, a.pad_bottom, a.pad_right};
  p.count_include_pad = a.count_include_pad;
  return p;
}

std::vector<float> EvaluateTensorOp(const Graph& g, const Node& node,
                                    const std::vector<std::vector<float>>& v) {
  const std::vector<float>& x = v[node.inputs[0]];
  const std::vector<int64_t>& shape = g.tensor(node.inputs[0]).shape;
  const NodeAttrs& a = node.attrs;
  switch (node.op) {
    case OpKind::kUnary:
      return cpuref::Unary(a.unary, x, a.alpha, a.beta);
    case OpKind::kBinary:
      return cpuref::Binary(a.binary, shape, x, g.tensor(node.inputs[1]).shape, v[node.inputs[1]]);
    case OpKind::kConcat: {
      std::vector<cpuref::Dims> shapes;
      std::vector<absl::Span<const float>> inputs;
      for (int in : node.inputs) {
        shapes.push_back(g.tensor(in).shape);
        inputs.emplace_back(v[in]);
      }
      return cpuref::Concat(a.axis, shapes, inputs);
    }
    case OpKind::kTranspose:
      return cpuref::Transpose(shape, a.perm, x);
    case OpKind::kSlice:
      return cpuref::Slice(shape, a.axis, a.start, a.end, a.step, x);
    case OpKind::kReduceMean:
      return cpuref::ReduceMean(shape, a.axes, x);
    case OpKind::kLayerNorm:
      return cpuref::LayerNorm(shape, a.axis, a.epsilon, x, v[node.inputs[1]], v[node.inputs[2]]);
    case OpKind::kMatMul:
      return cpuref::MatMul(shape, x, g.tensor(node.inputs[1]).shape, v[node.inputs[1]]);
    case OpKind::kGather: {  // the ids arrive as floats (ReferenceForward)
      const std::vector<float>& ids = v[node.inputs[1]];
      return cpuref::Gather(shape, x, std::vector<int64_t>(ids.begin(), ids.end()));
    }
    default:  // reshape (and flatten): the same elements
      return x;
  }
}

absl::StatusOr<std::vector<float>> Evaluate(const Graph& g, int index,
                                            const std::vector<std::vector<float>>& v) {
  const Node& node = g.nodes()[index];
  const std::vector<float>& x = v[node.inputs[0]];
  const TensorDesc& xd = g.tensor(node.inputs[0]);
  switch (node.op) {
    case OpKind::kConv2d:
      return ToFloat(cpuref::Conv2dFloat(ConvGeometry(g, node), x, v[node.inputs[1]]));
    case OpKind::kDense:
      return ToFloat(cpuref::DenseFloat(xd.shape[0], g.tensor(node.inputs[1]).shape[0], xd.shape[1],
                                        x, v[node.inputs[1]]));
    case OpKind::kBiasAdd:
      return cpuref::BiasRelu(x, xd.shape[1], Inner(xd.shape), v[node.inputs[1]], false);
    case OpKind::kRelu: {
      std::vector<float> y = x;
      for (float& e : y) e = std::max(e, 0.0f);
      return y;
    }
    case OpKind::kMaxPool2d:
      return cpuref::MaxPool2d(PoolParams(xd, node.attrs), absl::Span<const float>(x));
    case OpKind::kAvgPool2d:
      return cpuref::AvgPool2d(PoolParams(xd, node.attrs), x);
    case OpKind::kGlobalAvgPool2d:
      return cpuref::GlobalAvgPool(xd.shape[0] * xd.shape[1], Inner(xd.shape), x);
    case OpKind::kAdd:
      return cpuref::AddRelu(x, v[node.inputs[1]], false);
    case OpKind::kClip:
      return cpuref::Clip(x, node.attrs.clip_min, node.attrs.clip_max);
    case OpKind::kFlatten:
      return x;
    case OpKind::kSoftmax:
      return cpuref::SoftmaxAxis(xd.shape, SoftmaxAxis(node.attrs, xd.shape.size()), x);
    default:
      return EvaluateTensorOp(g, node, v);
  }
}

}  // namespace

absl::StatusOr<std::vector<std::vector<float>>> ReferenceForward(
    const Graph& graph, const WeightSet& weights,
    const std::map<std::string, std::vector<float>>& inputs) {
  TUNEJIT_RETURN_IF_ERROR(graph.Validate());
  std::vector<std::vector<float>> v(graph.tensors().size());
  for (int id = 0; id < static_cast<int>(graph.tensors().size()); ++id) {
    const TensorDesc& d = graph.tensor(id);
    if (d.dtype != DType::kF32 && !(d.dtype == DType::kI64 && d.kind == TensorKind::kInput)) {
      return absl::UnimplementedError(absl::StrCat("reference forward: '", d.name, "' not F32"));
    }
    if (d.kind == TensorKind::kWeight) {
      absl::Span<const uint8_t> bytes = weights.Get(id);
      if (static_cast<int64_t>(bytes.size()) != d.Bytes()) {
        return absl::InvalidArgumentError(
            absl::StrCat("reference forward: weight '", d.name, "' missing or mis-sized"));
      }
      v[id].resize(d.NumElements());
      std::memcpy(v[id].data(), bytes.data(), bytes.size());
    } else if (d.kind == TensorKind::kInput) {
      auto it = inputs.find(d.name);
      if (it == inputs.end() || static_cast<int64_t>(it->second.size()) != d.NumElements()) {
        return absl::InvalidArgumentError(
            absl::StrCat("reference forward: input '", d.name, "' missing or mis-sized"));
      }
      v[id] = it->second;
    }
  }
  for (int i = 0; i < static_cast<int>(graph.nodes().size()); ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(v[graph.nodes()[i].output], Evaluate(graph, i, v));
  }
  return v;
}

}  // namespace tunejit
