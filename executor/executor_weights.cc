// Weights to the device, prepared on the host on all cores, then copied: float32 as given, (int8
// steps) quantized per output channel on the host, with each conv/dense epilogue's bias and scale
// vectors (graph/quantize.h formulas), or (fp16 tensor-core steps) rounded to float16; tensor-core
// convs take theirs reordered OIHW -> OHWI.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>
#include <thread>

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

// One device tensor's bytes, prepared on the host (converted, reordered, quantized).
struct HostTensor {
  std::vector<uint8_t> bytes;
  // A graph weight as the file holds it (float32): one copy of its bytes.
  static HostTensor Of(absl::Span<const uint8_t> bytes) {
    return HostTensor{std::vector<uint8_t>(bytes.begin(), bytes.end())};
  }
  template <typename T>
  static HostTensor Of(const std::vector<T>& v) {
    HostTensor t;
    t.bytes.resize(v.size() * sizeof(T));
    if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
    return t;
  }
};

// A step's weights as its kernels read them; each is uploaded into the matching DevicePtr of the
// step (`weight`, `bias`, `scale`, per operand) when present.
struct HostStepWeights {
  std::optional<HostTensor> weight, bias, scale;
  std::vector<std::optional<HostTensor>> operands;
};

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

HostStepWeights PrepareMatmul(const Executor::State& state, const WeightSet& weights, int i) {
  const Step& step = state.program.steps[i];
  const std::vector<int64_t>& input_hwc = state.program.tensors[step.input].flattened_hwc;
  const std::vector<float> w = input_hwc.empty()
                                   ? Floats(weights, step.weight)
                                   : ColumnsToHwc(Floats(weights, step.weight), input_hwc);
  const std::vector<float> bias =
      step.bias >= 0 ? Floats(weights, step.bias) : std::vector<float>{};
  const int64_t channels = state.graph.tensor(step.weight).shape[0];
  const bool requantize = step.epilogue.output == Epilogue::Output::kInt8Requantize;
  HostStepWeights out;
  EpilogueScales e;
  // The stem template converts its float32 weight itself.
  if (const NodeTask& task = state.program.tasks[step.task];
      task.half() && !task.forms.float_nchw_data) {
    out.weight = HostTensor::Of(Fp16Weights(w, state.graph.tensor(step.weight).shape));
    e = requantize ? FloatToInt8Epilogue(channels, bias, ScaleOf(state, step.output))
                   : EpilogueScales{{}, bias};
  } else if (step.int8) {
    QuantizedWeights q = QuantizeWeights(w, channels);
    if (task.forms.nhwc) q.values = ToOhwi(q.values, state.graph.tensor(step.weight).shape);
    out.weight = HostTensor::Of(q.values);
    const float s_in = ScaleOf(state, step.input);
    e = requantize ? RequantizeEpilogue(s_in, q.scales, bias, ScaleOf(state, step.output))
                   : DequantizeEpilogue(s_in, q.scales, bias);
  } else {
    out.weight = HostTensor::Of(w);
    e = requantize ? FloatToInt8Epilogue(channels, bias, ScaleOf(state, step.output))
                   : EpilogueScales{{}, bias};
  }
  if (step.epilogue.bias) out.bias = HostTensor::Of(e.bias);
  if (step.epilogue.output != Epilogue::Output::kAccumulator) out.scale = HostTensor::Of(e.scale);
  return out;
}

HostStepWeights PrepareStep(const Executor::State& state, const WeightSet& weights, int i) {
  const Step& step = state.program.steps[i];
  HostStepWeights out;
  if (step.kind == StepKind::kConv2d || step.kind == StepKind::kDense) {
    out = PrepareMatmul(state, weights, i);
  } else if (step.kind == StepKind::kBiasAdd) {
    out.bias = HostTensor::Of(weights.Get(step.bias));
  }
  out.operands.resize(step.operands.size());
  for (size_t k = 0; k < step.operands.size(); ++k) {
    if (step.operands[k].weight >= 0) {
      out.operands[k] = HostTensor::Of(weights.Get(step.operands[k].weight));
    }
  }
  return out;
}

// Every step's host preparation, on `threads` threads: the conversions and reorders are the
// costly part of an upload (a single thread managed about 1 GB/s of VGG-16's weights).
std::vector<HostStepWeights> PrepareAll(const Executor::State& state, const WeightSet& weights,
                                        int threads) {
  std::vector<HostStepWeights> prepared(state.program.steps.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < prepared.size(); i = next++) {
      prepared[i] = PrepareStep(state, weights, static_cast<int>(i));
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, static_cast<int>(prepared.size())); ++t) {
    pool.emplace_back(work);
  }
  work();
  for (std::thread& t : pool) t.join();
  return prepared;
}

absl::StatusOr<DevicePtr> Upload(Executor::State& state, const std::optional<HostTensor>& t) {
  if (!t.has_value() || t->bytes.empty()) return DevicePtr{0};
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(*state.device, t->bytes.size()));
  TUNEJIT_RETURN_IF_ERROR(b.CopyFromHost(t->bytes.data(), t->bytes.size()));
  state.stats.weight_bytes += static_cast<int64_t>(t->bytes.size());
  const DevicePtr ptr = b.ptr();
  state.weight_buffers.push_back(std::move(b));
  return ptr;
}

}  // namespace

absl::Status UploadWeights(Executor::State& state, const WeightSet& weights) {
  const auto start = std::chrono::steady_clock::now();
  const int threads = state.options.compile_threads > 0
                          ? state.options.compile_threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const std::vector<HostStepWeights> prepared = PrepareAll(state, weights, threads);
  for (size_t i = 0; i < prepared.size(); ++i) {
    StepRuntime& rt = state.steps[i];
    const HostStepWeights& h = prepared[i];
    TUNEJIT_ASSIGN_OR_RETURN(rt.weight, Upload(state, h.weight));
    TUNEJIT_ASSIGN_OR_RETURN(rt.bias, Upload(state, h.bias));
    TUNEJIT_ASSIGN_OR_RETURN(rt.scale, Upload(state, h.scale));
    rt.operand_weights.assign(h.operands.size(), 0);
    for (size_t k = 0; k < h.operands.size(); ++k) {
      TUNEJIT_ASSIGN_OR_RETURN(rt.operand_weights[k], Upload(state, h.operands[k]));
    }
  }
  state.stats.upload_seconds += SecondsSince(start);
  return absl::OkStatus();
}

}  // namespace tunejit
