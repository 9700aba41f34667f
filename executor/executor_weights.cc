// Weights to the device: float32 as given, (int8 steps) quantized per output channel on the
// host, with each conv/dense epilogue's bias and scale vectors (graph/quantize.h formulas), or
// (fp16 tensor-core steps) rounded to float16; tensor-core convs take theirs reordered OIHW ->
// OHWI.
#include <cstring>

#include "common/half.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "graph/quantize.h"

namespace tunejit {
namespace {

std::vector<float> Floats(const WeightSet& weights, int tensor) {
  absl::Span<const uint8_t> bytes = weights.Get(tensor);
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

absl::StatusOr<DevicePtr> Upload(Executor::State& state, const void* data, size_t bytes) {
  if (bytes == 0) return DevicePtr{0};
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(*state.device, bytes));
  TUNEJIT_RETURN_IF_ERROR(b.CopyFromHost(data, bytes));
  state.stats.weight_bytes += static_cast<int64_t>(bytes);
  const DevicePtr ptr = b.ptr();
  state.weight_buffers.push_back(std::move(b));
  return ptr;
}

template <typename T>
absl::StatusOr<DevicePtr> Upload(Executor::State& state, const std::vector<T>& v) {
  return Upload(state, v.data(), v.size() * sizeof(T));
}

// A conv weight from the graph's OIHW into the tensor-core templates' [CO, KH, KW, C] (OHWI).
template <typename T>
std::vector<T> ToOhwi(const std::vector<T>& w, const std::vector<int64_t>& shape) {
  const int64_t co = shape[0], ci = shape[1], taps = shape[2] * shape[3];
  std::vector<T> out(w.size());
  for (int64_t o = 0; o < co; ++o) {
    for (int64_t c = 0; c < ci; ++c) {
      for (int64_t t = 0; t < taps; ++t) out[(o * taps + t) * ci + c] = w[(o * ci + c) * taps + t];
    }
  }
  return out;
}

// The fp16 tensor-core templates' weights in float16 (round to nearest even): OHWI for a conv,
// [N, K] for a dense (as given).
std::vector<uint16_t> Fp16Weights(const std::vector<float>& w, const std::vector<int64_t>& shape) {
  std::vector<uint16_t> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = FloatToHalf(w[i]);
  return shape.size() == 4 ? ToOhwi(out, shape) : out;
}

// A dense weight [N, C * H * W] with its columns reordered from (c, h, w) to (h, w, c): the order
// of an NHWC activation flattened in place (StepTensor::flattened_hwc).
std::vector<float> ColumnsToHwc(const std::vector<float>& w, const std::vector<int64_t>& chw) {
  const int64_t c = chw[0], hw = chw[1] * chw[2], k = c * hw;
  std::vector<float> out(w.size());
  for (size_t row = 0; row < w.size() / k; ++row) {
    const float* from = w.data() + row * k;
    float* to = out.data() + row * k;
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t p = 0; p < hw; ++p) to[p * c + ch] = from[ch * hw + p];
    }
  }
  return out;
}

float ScaleOf(const Executor::State& state, int step_tensor) {
  return state.scales[state.program.tensors[step_tensor].scale_slot];
}

absl::Status UploadMatmul(Executor::State& state, const WeightSet& weights, int i) {
  const Step& step = state.program.steps[i];
  StepRuntime& rt = state.steps[i];
  const std::vector<int64_t>& input_hwc = state.program.tensors[step.input].flattened_hwc;
  const std::vector<float> w = input_hwc.empty()
                                   ? Floats(weights, step.weight)
                                   : ColumnsToHwc(Floats(weights, step.weight), input_hwc);
  const std::vector<float> bias =
      step.bias >= 0 ? Floats(weights, step.bias) : std::vector<float>{};
  const int64_t channels = state.graph.tensor(step.weight).shape[0];
  const bool requantize = step.epilogue.output == Epilogue::Output::kInt8Requantize;
  EpilogueScales e;
  // The stem template converts its float32 weight itself.
  if (const NodeTask& task = state.program.tasks[step.task];
      task.half() && !task.forms.float_nchw_data) {
    TUNEJIT_ASSIGN_OR_RETURN(rt.weight,
                             Upload(state, Fp16Weights(w, state.graph.tensor(step.weight).shape)));
    e = requantize ? FloatToInt8Epilogue(channels, bias, ScaleOf(state, step.output))
                   : EpilogueScales{{}, bias};
  } else if (step.int8) {
    QuantizedWeights q = QuantizeWeights(w, channels);
    if (task.forms.nhwc) q.values = ToOhwi(q.values, state.graph.tensor(step.weight).shape);
    TUNEJIT_ASSIGN_OR_RETURN(rt.weight, Upload(state, q.values));
    const float s_in = ScaleOf(state, step.input);
    e = requantize ? RequantizeEpilogue(s_in, q.scales, bias, ScaleOf(state, step.output))
                   : DequantizeEpilogue(s_in, q.scales, bias);
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(rt.weight, Upload(state, w));
    e = requantize ? FloatToInt8Epilogue(channels, bias, ScaleOf(state, step.output))
                   : EpilogueScales{{}, bias};
  }
  if (step.epilogue.bias) {
    TUNEJIT_ASSIGN_OR_RETURN(rt.bias, Upload(state, e.bias));
  }
  if (step.epilogue.output != Epilogue::Output::kAccumulator) {
    TUNEJIT_ASSIGN_OR_RETURN(rt.scale, Upload(state, e.scale));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status UploadWeights(Executor::State& state, const WeightSet& weights) {
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < state.program.steps.size(); ++i) {
    const Step& step = state.program.steps[i];
    if (step.kind == StepKind::kConv2d || step.kind == StepKind::kDense) {
      TUNEJIT_RETURN_IF_ERROR(UploadMatmul(state, weights, static_cast<int>(i)));
    } else if (step.kind == StepKind::kBiasAdd) {
      TUNEJIT_ASSIGN_OR_RETURN(state.steps[i].bias, Upload(state, Floats(weights, step.bias)));
    }
    std::vector<DevicePtr>& operand_weights = state.steps[i].operand_weights;
    operand_weights.assign(step.operands.size(), 0);
    for (size_t k = 0; k < step.operands.size(); ++k) {
      if (step.operands[k].weight < 0) continue;
      TUNEJIT_ASSIGN_OR_RETURN(operand_weights[k],
                               Upload(state, Floats(weights, step.operands[k].weight)));
    }
  }
  state.stats.upload_seconds += SecondsSince(start);
  return absl::OkStatus();
}

}  // namespace tunejit
