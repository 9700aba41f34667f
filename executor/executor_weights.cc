// Weights to the device: each conv / dense weight is prepared on the host on all cores, row by row
// (executor/host_weights.h): float32 as given, (int8 steps) quantized per output channel, or (fp16
// tensor-core steps) rounded to float16; tensor-core convs take theirs reordered OIHW -> OHWI,
// dense layers after a flattened NHWC activation their columns CHW -> HWC. The prepared bytes are
// copied into one device allocation as they come (through page-locked staging buffers,
// jit/staged_copy.h), while the rest is prepared; the epilogues' bias and scale vectors
// (graph/quantize.h formulas) follow, all in one copy. Weights used as they are (bias_add biases,
// tensor ops' operands, float32 weights in their given order) go from the weight file's bytes.
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "executor/host_weights.h"
#include "graph/quantize.h"
#include "jit/staged_copy.h"

namespace tunejit {
namespace {

std::vector<float> Floats(const WeightSet& weights, int tensor) {
  absl::Span<const uint8_t> bytes = weights.Get(tensor);
  std::vector<float> v(bytes.size() / sizeof(float));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

template <typename T>
absl::Span<const uint8_t> BytesOf(const std::vector<T>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)};
}

float ScaleOf(const Executor::State& state, int step_tensor) {
  return state.scales[state.program.tensors[step_tensor].scale_slot];
}

bool IsMatmul(const Step& step) {
  return step.kind == StepKind::kConv2d || step.kind == StepKind::kDense;
}

// The stem and patchify templates read the float32 weight as the graph has it (the patchify
// template rounds it to float16 in a kernel of its own).
WeightElement ElementOf(const Executor::State& state, const Step& step) {
  const NodeTask& task = state.program.tasks[step.task];
  if (task.half() && !task.forms.float_nchw_data) return WeightElement::kFloat16;
  return step.int8 ? WeightElement::kInt8 : WeightElement::kFloat32;
}

// A conv / dense weight as its kernels read it: the element type and the reorder within each
// output channel's row.
WeightRows MatmulRows(const Executor::State& state, const WeightSet& weights, const Step& step) {
  const std::vector<int64_t>& shape = state.graph.tensor(step.weight).shape;
  const std::vector<int64_t>& input_hwc = state.program.tensors[step.input].flattened_hwc;
  WeightRows w{.source = weights.Get(step.weight), .rows = shape[0]};
  w.element = ElementOf(state, step);
  w.a = w.rows > 0 ? static_cast<int64_t>(w.source.size() / sizeof(float)) / w.rows : 0;
  const bool ohwi =
      shape.size() == 4 &&
      (w.element == WeightElement::kFloat16 ||
       (w.element == WeightElement::kInt8 && state.program.tasks[step.task].forms.nhwc));
  if (!input_hwc.empty()) {  // a dense layer reading a flattened NHWC activation
    w.a = input_hwc[0];
    w.b = input_hwc[1] * input_hwc[2];
  } else if (ohwi) {
    w.a = shape[1];
    w.b = shape[2] * shape[3];
  }
  return w;
}

// The epilogue vectors of a conv / dense step; `s_w`: its int8 weight's scales.
EpilogueScales MatmulEpilogue(const Executor::State& state, const WeightSet& weights,
                              const Step& step, absl::Span<const float> s_w) {
  const std::vector<float> bias =
      step.bias >= 0 ? Floats(weights, step.bias) : std::vector<float>{};
  const bool requantize = step.epilogue.output == Epilogue::Output::kInt8Requantize;
  if (ElementOf(state, step) == WeightElement::kInt8) {
    const float s_in = ScaleOf(state, step.input);
    if (requantize && step.epilogue.residual) {
      // The conv's value requantized to its own scale, then the int8 add's three scales after
      // the channels' (kernel_sources/common.cuh Int8ResidualScales).
      const float s_value = state.scales[step.pre_residual_slot];
      EpilogueScales e = RequantizeEpilogue(s_in, s_w, bias, s_value);
      e.scale.insert(e.scale.end(),
                     {s_value, ScaleOf(state, step.residual), ScaleOf(state, step.output)});
      return e;
    }
    return requantize ? RequantizeEpilogue(s_in, s_w, bias, ScaleOf(state, step.output))
                      : DequantizeEpilogue(s_in, s_w, bias);
  }
  const int64_t channels = state.graph.tensor(step.weight).shape[0];
  return requantize ? FloatToInt8Epilogue(channels, bias, ScaleOf(state, step.output))
                    : EpilogueScales{{}, bias};
}

// Device buffers are carved out of one allocation at this alignment (TMA and 16-byte vector
// loads need 16; 256 keeps every tensor on its own cache-line group).
constexpr size_t kArenaAlignment = 256;

size_t AlignUp(size_t n) { return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

// A weight used as it is, in a device buffer of its own (a large one: an embedding table).
absl::StatusOr<DevicePtr> UploadAlone(Executor::State& state, absl::Span<const uint8_t> bytes) {
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(*state.device, bytes.size()));
  TUNEJIT_RETURN_IF_ERROR(b.CopyFromHost(bytes.data(), bytes.size()));
  state.stats.weight_bytes += static_cast<int64_t>(bytes.size());
  const DevicePtr ptr = b.ptr();
  state.weight_buffers.push_back(std::move(b));
  return ptr;
}

// Small vectors (biases, epilogue scales, tensor ops' small operand weights) packed into one host
// buffer and sent in one copy: a device allocation and a synchronous copy each cost tens of
// microseconds, and ResNet-50 has over a hundred of them. Large ones go on their own.
class VectorBatch {
 public:
  static constexpr size_t kMaxBatched = size_t{1} << 20;

  // `bytes` will land at *target (0 when empty).
  absl::Status Add(Executor::State& state, absl::Span<const uint8_t> bytes, DevicePtr* target) {
    *target = 0;
    if (bytes.empty()) return absl::OkStatus();
    if (bytes.size() > kMaxBatched) {
      TUNEJIT_ASSIGN_OR_RETURN(*target, UploadAlone(state, bytes));
      return absl::OkStatus();
    }
    const size_t offset = AlignUp(host_.size());
    host_.resize(offset + bytes.size());
    std::memcpy(host_.data() + offset, bytes.data(), bytes.size());
    pending_.push_back({offset, target});
    return absl::OkStatus();
  }
  absl::Status Upload(Executor::State& state) {
    if (host_.empty()) return absl::OkStatus();
    TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::Allocate(*state.device, host_.size()));
    TUNEJIT_RETURN_IF_ERROR(b.CopyFromHost(host_.data(), host_.size()));
    for (const auto& [offset, target] : pending_) *target = b.ptr() + offset;
    state.stats.weight_bytes += static_cast<int64_t>(host_.size());
    state.weight_buffers.push_back(std::move(b));
    return absl::OkStatus();
  }

 private:
  std::vector<uint8_t> host_;
  std::vector<std::pair<size_t, DevicePtr*>> pending_;
};

// Every conv / dense weight, prepared and copied into one device allocation made up front (the
// copies start while later rows are prepared); their pointers go to `state.steps`. Returns the
// int8 weights' scales (for the epilogues), by step; the host buffers are freed.
absl::StatusOr<std::vector<std::vector<float>>> UploadMatmulWeights(Executor::State& state,
                                                                    const WeightSet& weights) {
  std::vector<int> step_of;
  std::vector<WeightRows> rows;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (size_t i = 0; i < state.program.steps.size(); ++i) {
    const Step& step = state.program.steps[i];
    if (!IsMatmul(step)) continue;
    step_of.push_back(static_cast<int>(i));
    rows.push_back(MatmulRows(state, weights, step));
    offsets.push_back(total);
    total += AlignUp(rows.back().Bytes());
  }
  DeviceBuffer arena;
  if (total > 0) {
    TUNEJIT_ASSIGN_OR_RETURN(arena, DeviceBuffer::Allocate(*state.device, total));
  }
  absl::StatusOr<StagedCopier> staged = StagedCopier::Create(*state.device);
  if (!staged.ok()) {
    state.Warn(absl::StrCat("weights copied without page-locked staging (",
                            staged.status().message(), ")"));
  }
  double copy_seconds = 0;
  auto copy = [&](int t, size_t offset, absl::Span<const uint8_t> bytes) {
    const auto start = std::chrono::steady_clock::now();
    const size_t at = offsets[t] + offset;
    absl::Status copied = staged.ok() ? staged->Copy(bytes, arena, at)
                                      : arena.CopyFromHost(bytes.data(), bytes.size(), at);
    copy_seconds += SecondsSince(start);
    return copied;
  };
  TUNEJIT_ASSIGN_OR_RETURN(PreparedWeightSet set,
                           PrepareWeights(rows, {.threads = state.options.compile_threads}, copy));
  if (staged.ok()) {
    const auto start = std::chrono::steady_clock::now();
    TUNEJIT_RETURN_IF_ERROR(staged->Finish());
    copy_seconds += SecondsSince(start);
  }
  state.stats.weight_prepare_seconds += set.prepare_seconds;
  state.stats.weight_copy_seconds += copy_seconds;
  std::vector<std::vector<float>> scales(state.program.steps.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    state.steps[step_of[t]].weight = rows[t].Bytes() > 0 ? arena.ptr() + offsets[t] : 0;
    state.stats.weight_bytes += static_cast<int64_t>(rows[t].Bytes());
    scales[step_of[t]] = std::move(set.tensors[t].scales);
  }
  if (total > 0) state.weight_buffers.push_back(std::move(arena));
  return scales;
}

// A step's other device tensors: its epilogue's vectors, a bias_add's bias, its operands' weights,
// into `batch`.
absl::Status AddStepVectors(Executor::State& state, const WeightSet& weights, int i,
                            absl::Span<const float> s_w, VectorBatch& batch) {
  const Step& step = state.program.steps[i];
  StepRuntime& rt = state.steps[i];
  if (IsMatmul(step)) {
    const EpilogueScales e = MatmulEpilogue(state, weights, step, s_w);
    if (step.epilogue.bias) TUNEJIT_RETURN_IF_ERROR(batch.Add(state, BytesOf(e.bias), &rt.bias));
    if (step.epilogue.output != Epilogue::Output::kAccumulator) {
      TUNEJIT_RETURN_IF_ERROR(batch.Add(state, BytesOf(e.scale), &rt.scale));
    }
  } else if (step.kind == StepKind::kBiasAdd) {
    TUNEJIT_RETURN_IF_ERROR(batch.Add(state, weights.Get(step.bias), &rt.bias));
  }
  rt.operand_weights.assign(step.operands.size(), 0);
  for (size_t k = 0; k < step.operands.size(); ++k) {
    if (step.operands[k].weight >= 0) {
      TUNEJIT_RETURN_IF_ERROR(
          batch.Add(state, weights.Get(step.operands[k].weight), &rt.operand_weights[k]));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status UploadWeights(Executor::State& state, const WeightSet& weights) {
  const auto start = std::chrono::steady_clock::now();
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<std::vector<float>> scales,
                           UploadMatmulWeights(state, weights));
  VectorBatch batch;
  for (size_t i = 0; i < state.program.steps.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(AddStepVectors(state, weights, static_cast<int>(i), scales[i], batch));
  }
  TUNEJIT_RETURN_IF_ERROR(batch.Upload(state));
  state.stats.upload_seconds += SecondsSince(start);
  return absl::OkStatus();
}

}  // namespace tunejit
