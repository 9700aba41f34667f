// Two GPU checks of the build phase: each chosen record's kernel against the naive reference kernel
// on the node's real shapes (a wrong kernel is skipped for the next candidate), and the int8
// calibration (max |x| of the tensors entering int8 convs, in the float32 network).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/half.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "ops/cpu_reference.h"
#include "ops/elementwise.h"
#include "ops/plan_runner.h"
#include "ops/reference_kernels.h"

namespace tunejit {
namespace {

// The shapes one verification needs, from the candidate's workload.
// The naive reference runs for one image (conv) / row (dense) only: at batch 128 it took ~30 s for
// VGG-16. Every image gets the first one's inputs, so every image's output is compared with that
// one reference output (a kernel mixing images up would go unseen; none of the templates share
// data across images).
struct VerifyShape {
  int64_t data = 0, weight = 0, out = 0, reduction = 0, channels = 0, inner = 1;
  int64_t batch = 1;  // N (conv) or M (dense); data and out divide by it
  bool int8 = false;
  bool fp16 = false;      // float16 data and weights (the tensor-core templates)
  bool fp16_out = false;  // a float16 output (the reference still writes float32)
};

absl::StatusOr<VerifyShape> ShapeOf(const KernelCandidate& c, bool conv) {
  VerifyShape s;
  if (conv) {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(c.workload));
    s.data = p.n * p.ci * p.h * p.w;
    s.reduction = p.ci / p.groups * p.kh * p.kw;
    s.weight = p.co * s.reduction;
    s.inner = c.task_name == autotvm::kConv2dNhwcWgmmaPool ? (p.OutH() / 2) * (p.OutW() / 2)
                                                           : p.OutH() * p.OutW();
    s.out = p.n * p.co * s.inner;
    s.channels = p.co;
    s.batch = p.n;
    s.int8 = p.data_dtype == "int8";
    s.fp16 = p.data_dtype == "float16";
    s.fp16_out = p.out_dtype == "float16";
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(c.workload));
    s.data = p.m * p.k;
    s.weight = p.n * p.k;
    s.out = p.m * p.n;
    s.reduction = p.k;
    s.channels = p.n;
    s.batch = p.m;
    s.fp16 = p.data_dtype == "float16";
    s.fp16_out = p.out_dtype == "float16";
  }
  return s;
}

// The naive reference for the first image / row of the candidate's workload. A residual is left
// out: the candidate runs with a zero one (VerifyOne), which changes none of its values.
absl::StatusOr<OpPlan> ReferencePlan(const KernelCandidate& c, bool conv, Epilogue e) {
  e.residual = false;
  if (c.task_name == autotvm::kBatchMatmul) {  // the whole batch (VerifyBatchMatmul)
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p,
                             autotvm::ParseBatchMatmulWorkload(c.workload));
    return ReferenceBatchMatmulPlan(p, e);
  }
  if (conv) {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::Conv2dParams p, autotvm::ParseConv2dWorkload(c.workload));
    p.n = 1;
    if (c.task_name == autotvm::kConv2dNhwcWgmmaPool) return ReferenceConv2dPoolPlan(p, e);
    return ReferenceConv2dPlan(p, e);
  }
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams p, autotvm::ParseDenseWorkload(c.workload));
  p.m = 1;
  return ReferenceDensePlan(p, e);
}

// Random operands (the data for one image / row: RunPlan repeats it over the batch): int8 in [-8,
// 8] or float in [-1, 1] (float16 data and weights for the tensor-core templates); scales that keep
// an int8 output mostly in range (rms of the accumulator ~ sqrt(K) * rms_x * rms_w, brought to
// ~30).
std::vector<std::vector<uint8_t>> Operands(const VerifyShape& s, const Epilogue& e) {
  std::mt19937 rng(12345);
  const float a = s.int8 ? 8.0f : 1.0f;
  auto fill = [&](int64_t n, float lo, float hi, bool as_int8, bool as_fp16 = false) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<uint8_t> bytes(n * (as_int8 ? 1 : as_fp16 ? 2 : 4));
    for (int64_t i = 0; i < n; ++i) {
      const float v = d(rng);
      if (as_int8) {
        bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(std::lround(v)));
      } else if (as_fp16) {
        const uint16_t h = FloatToHalf(v);
        std::memcpy(&bytes[i * 2], &h, 2);
      } else {
        std::memcpy(&bytes[i * 4], &v, 4);
      }
    }
    return bytes;
  };
  const bool to_int8 = e.output == Epilogue::Output::kInt8Requantize;
  const float rms = std::sqrt(static_cast<float>(s.reduction)) * a * a / 3.0f;
  const float scale = to_int8 ? 30.0f / rms : 1.0f;
  std::vector<uint8_t> data = fill(s.data / s.batch, -a, a, s.int8, s.fp16);  // one image / row
  std::vector<uint8_t> scales = fill(s.channels, 0.5f * scale, 1.5f * scale, false);
  if (to_int8 && e.residual) {
    // The int8 residual's scales (common.cuh Int8ResidualScales): the value, the (zero)
    // residual and the sum at 1, so the sum is the requantized value itself.
    const float ones[3] = {1.0f, 1.0f, 1.0f};
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(ones);
    scales.insert(scales.end(), bytes, bytes + sizeof(ones));
  }
  return {std::move(data), fill(s.weight, -a, a, s.int8, s.fp16),
          fill(s.channels, to_int8 ? -20.0f : -1.0f, to_int8 ? 20.0f : 1.0f, false),
          std::move(scales)};
}

// Runs `plan` on `operands` with operand 0 (one image) repeated `batch` times on the device, and
// returns the outputs of `images` (each `image_out_bytes`), in that order.
absl::StatusOr<std::vector<uint8_t>> RunPlan(Executor::State& state, const KernelCompiler& compiler,
                                             const OpPlan& plan,
                                             const std::vector<std::vector<uint8_t>>& operands,
                                             int64_t batch, int64_t image_out_bytes,
                                             const std::vector<int64_t>& images) {
  TUNEJIT_ASSIGN_OR_RETURN(PlanRunner runner,
                           PlanRunner::Create(*state.device, compiler, plan, state.limits.arch));
  std::vector<DeviceBuffer> buffers;
  std::vector<DevicePtr> inputs;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::vector<uint8_t>& bytes = operands[i];
    const size_t copies = i == 0 ? static_cast<size_t>(batch) : 1;
    TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b,
                             DeviceBuffer::Allocate(*state.device, bytes.size() * copies));
    TUNEJIT_RETURN_IF_ERROR(b.CopyFromHost(bytes.data(), bytes.size()));
    if (copies > 1) TUNEJIT_RETURN_IF_ERROR(b.RepeatPrefix(bytes.size()));
    inputs.push_back(b.ptr());
    buffers.push_back(std::move(b));
  }
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer out,
                           DeviceBuffer::Allocate(*state.device, image_out_bytes * batch));
  TUNEJIT_RETURN_IF_ERROR(out.Fill(0xFF));  // NaN / -1: an unwritten output shows
  TUNEJIT_RETURN_IF_ERROR(runner.Bind(inputs, {out.ptr()}));
  TUNEJIT_RETURN_IF_ERROR(runner.Prepare(*state.stream));
  TUNEJIT_RETURN_IF_ERROR(runner.Run(*state.stream));
  TUNEJIT_RETURN_IF_ERROR(state.stream->Synchronize());
  std::vector<uint8_t> host(image_out_bytes * images.size());
  for (size_t i = 0; i < images.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(out.CopyToHost(host.data() + i * image_out_bytes, image_out_bytes,
                                           images[i] * image_out_bytes));
  }
  return host;
}

// The images whose outputs are compared: the first, the last and evenly spaced ones between
// (a tile that mishandles the batch edge or an image offset shows in them; comparing all 128
// images' outputs on the CPU took seconds per layer).
std::vector<int64_t> SampledImages(int64_t batch) {
  constexpr int64_t kSamples = 8;
  std::vector<int64_t> images;
  for (int64_t i = 0; i < std::min(batch, kSamples); ++i) {
    images.push_back(batch <= kSamples ? i : i * (batch - 1) / (kSamples - 1));
  }
  return images;
}

// OK when `got` matches `want`: int8 within 1 everywhere and off by one in at most 1% (float
// accumulation order moves values across a rounding boundary), int32 exactly, float with a
// relative error below 1e-2 (winograd's transforms lose a few digits; a wrong kernel is O(1)).
absl::Status Compare(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want,
                     const Epilogue& e, bool int8_op, bool got_fp16) {
  if (e.output == Epilogue::Output::kInt8Requantize) {
    int64_t off_by_one = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      const int d = std::abs(static_cast<int8_t>(got[i]) - static_cast<int8_t>(want[i]));
      if (d > 1) return absl::InternalError(absl::StrCat("int8 output ", i, " differs by ", d));
      off_by_one += d;
    }
    if (off_by_one * 100 > static_cast<int64_t>(got.size())) {
      return absl::InternalError(absl::StrCat(off_by_one, " int8 outputs off by one"));
    }
    return absl::OkStatus();
  }
  if (int8_op && e.output == Epilogue::Output::kAccumulator) {
    if (got != want) return absl::InternalError("int32 output differs");
    return absl::OkStatus();
  }
  std::vector<float> w(want.size() / 4), g(w.size());
  std::memcpy(w.data(), want.data(), want.size());
  if (got_fp16) {  // rounding to float16 costs ~3e-4 relative, far below the bound
    std::vector<uint16_t> h(got.size() / 2);
    std::memcpy(h.data(), got.data(), got.size());
    for (size_t i = 0; i < g.size() && i < h.size(); ++i) g[i] = HalfToFloat(h[i]);
  } else {
    std::memcpy(g.data(), got.data(), std::min(got.size(), g.size() * 4));
  }
  const double err = cpuref::RelativeError(g, w);
  if (!(err < 1e-2)) return absl::InternalError(absl::StrFormat("relative error %.3g", err));
  return absl::OkStatus();
}

std::vector<uint8_t> FloatBytes(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// batch_matmul.cuda on a graph matmul (y read as [YB, K, N] with OperandForms::y_kn): the whole
// batch, since its batches hold different data (attention's heads), against the reference kernel
// (y [YB, N, K]: the same random y transposed), every output compared.
absl::Status VerifyBatchMatmul(Executor::State& state, const KernelCompiler& compiler,
                               const Step& step, const KernelCandidate& c) {
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams p,
                           autotvm::ParseBatchMatmulWorkload(c.workload));
  TUNEJIT_ASSIGN_OR_RETURN(OpPlan ref, ReferencePlan(c, false, step.epilogue));
  std::mt19937 rng(12345);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> x(p.x_batch * p.m * p.k), y_kn(p.y_batch * p.k * p.n), y_nk(y_kn.size());
  for (float& v : x) v = d(rng);
  for (float& v : y_kn) v = d(rng);
  for (int64_t b = 0; b < p.y_batch; ++b) {
    for (int64_t k = 0; k < p.k; ++k) {
      for (int64_t n = 0; n < p.n; ++n) {
        y_nk[(b * p.n + n) * p.k + k] = y_kn[(b * p.k + k) * p.n + n];
      }
    }
  }
  const int64_t out_bytes = p.batch() * p.m * p.n * 4;
  const std::vector<uint8_t> x_bytes = FloatBytes(x);
  TUNEJIT_ASSIGN_OR_RETURN(
      std::vector<uint8_t> want,
      RunPlan(state, compiler, ref, {x_bytes, FloatBytes(y_nk)}, 1, out_bytes, {0}));
  const bool y_kn_form = state.program.tasks[step.task].forms.y_kn;
  const std::vector<uint8_t> y_given = FloatBytes(y_kn_form ? y_kn : y_nk);
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<uint8_t> got,
                           RunPlan(state, compiler, c.plan, {x_bytes, y_given}, 1, out_bytes, {0}));
  return Compare(got, want, step.epilogue, false, false);
}

absl::Status VerifyOne(Executor::State& state, const KernelCompiler& compiler, const Step& step,
                       const KernelCandidate& c) {
  if (c.task_name == autotvm::kBatchMatmul) return VerifyBatchMatmul(state, compiler, step, c);
  const bool conv = step.kind == StepKind::kConv2d;
  TUNEJIT_ASSIGN_OR_RETURN(VerifyShape s, ShapeOf(c, conv));
  TUNEJIT_ASSIGN_OR_RETURN(OpPlan ref, ReferencePlan(c, conv, step.epilogue));
  const Epilogue& e = step.epilogue;
  const int64_t want_bytes =
      s.out / s.batch * (e.output == Epilogue::Output::kInt8Requantize ? 1 : 4);
  // A float16 workload output is written as float16 unless the epilogue requantizes it to int8.
  const bool f16_written = s.fp16_out && e.output != Epilogue::Output::kInt8Requantize;
  const int64_t image_out_bytes = f16_written ? s.out / s.batch * 2 : want_bytes;
  std::vector<std::vector<uint8_t>> operands = Operands(s, e);
  const std::vector<int64_t> images = SampledImages(s.batch);
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<uint8_t> want,
                           RunPlan(state, compiler, ref, operands, 1, want_bytes, {0}));
  if (e.residual) {  // zeros for the whole batch: the epilogue adds 0 before the ReLU
    operands.push_back(std::vector<uint8_t>(image_out_bytes * s.batch, 0));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<uint8_t> got, RunPlan(state, compiler, c.plan, operands,
                                                             s.batch, image_out_bytes, images));
  // Every image has the first one's inputs, so every image's output must be the reference's.
  for (size_t i = 0; i < images.size(); ++i) {
    const std::vector<uint8_t> slice(got.begin() + i * image_out_bytes,
                                     got.begin() + (i + 1) * image_out_bytes);
    absl::Status same = Compare(slice, want, e, s.int8, f16_written);
    if (!same.ok()) {
      return absl::InternalError(absl::StrCat("image ", images[i], ": ", same.message()));
    }
  }
  return absl::OkStatus();
}

bool NeedsVerify(const Executor::State& state, const StepRuntime& rt) {
  return state.options.verify_records && rt.choice.has_value() &&
         !rt.choice->candidates[rt.candidate].fallback;
}

}  // namespace

std::vector<OpPlan> VerificationPlans(const Executor::State& state) {
  std::vector<OpPlan> plans;
  for (size_t i = 0; i < state.steps.size(); ++i) {
    const StepRuntime& rt = state.steps[i];
    if (!NeedsVerify(state, rt)) continue;
    const Step& step = state.program.steps[i];
    absl::StatusOr<OpPlan> ref = ReferencePlan(rt.choice->candidates[rt.candidate],
                                               step.kind == StepKind::kConv2d, step.epilogue);
    if (ref.ok()) plans.push_back(*std::move(ref));  // an error shows again in VerifyRecords
  }
  return plans;
}

absl::StatusOr<bool> VerifyRecords(Executor::State& state, const KernelCompiler& compiler) {
  const auto start = std::chrono::steady_clock::now();
  bool changed = false;
  for (size_t i = 0; i < state.steps.size(); ++i) {
    StepRuntime& rt = state.steps[i];
    const Step& step = state.program.steps[i];
    while (NeedsVerify(state, rt)) {
      const KernelCandidate& c = rt.choice->candidates[rt.candidate];
      absl::Status ok = VerifyOne(state, compiler, step, c);
      if (ok.ok()) {
        state.layers[i].reasons.push_back(
            absl::StrCat(c.record_label, " (", c.task_name, "): verified against the reference"));
        break;
      }
      const std::string why = absl::StrCat(c.record_label, " (", c.task_name,
                                           "): skipped: wrong results: ", ok.message());
      state.layers[i].reasons.push_back(why);
      state.Warn(absl::StrCat(step.name, ": ", why));
      if (rt.candidate + 1 >= static_cast<int>(rt.choice->candidates.size())) {
        return absl::FailedPreconditionError(
            absl::StrCat(step.name, ": no kernel passed verification (last: ", why, ")"));
      }
      ++rt.candidate;  // the list normally ends with the fallback, which is not verified
      UseCandidate(state, static_cast<int>(i));
      if (state.layers[i].fallback) {
        ++state.stats.fallback_layers;
        state.Warn(absl::StrCat(step.name, ": no usable record, fallback config of ",
                                state.layers[i].task_name));
      }
      changed = true;
    }
  }
  state.stats.verify_seconds += SecondsSince(start);
  return changed;
}

absl::StatusOr<std::vector<float>> CalibrateAbsMax(Executor::State& fp32,
                                                   const KernelCompiler& compiler,
                                                   const std::vector<int>& sources) {
  const StepProgram& p = fp32.program;
  const auto& given = fp32.options.calibration_inputs;
  for (const auto& [name, values] : given) {
    std::optional<int> id = fp32.graph.FindTensor(name);
    if (!id || fp32.graph.tensor(*id).kind != TensorKind::kInput) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration: no graph input named '", name, "'"));
    }
    if (static_cast<int64_t>(values.size()) != fp32.graph.tensor(*id).NumElements()) {
      return absl::InvalidArgumentError(absl::StrCat("calibration: input '", name, "' has ",
                                                     values.size(), " values, the graph input ",
                                                     fp32.graph.tensor(*id).NumElements()));
    }
  }
  // Inputs not given: N(0, 1), splitmix64 + Box-Muller (the same stream on every platform).
  SplitMix64 rng(fp32.options.calibration_seed);
  auto uniform = [&] { return (static_cast<double>(rng.Next() >> 11) + 0.5) * 0x1.0p-53; };
  for (int id : fp32.graph.TensorsOfKind(TensorKind::kInput)) {
    if (const TensorDesc& d = fp32.graph.tensor(id); d.dtype != DType::kF32) {
      return absl::UnimplementedError(absl::StrCat(
          "calibration: input '", d.name, "' is ", std::string(DTypeName(d.dtype)),
          "; the int8 calibration draws float32 inputs (run this model at fp32 or fp16)"));
    }
    std::vector<float> x(fp32.graph.tensor(id).NumElements());
    if (auto it = given.find(fp32.graph.tensor(id).name); it != given.end()) {
      x = it->second;
    } else {
      for (float& v : x) {
        v = static_cast<float>(std::sqrt(-2.0 * std::log(uniform())) *
                               std::cos(6.283185307179586 * uniform()));
      }
    }
    TUNEJIT_RETURN_IF_ERROR(fp32.arena.CopyFromHost(x.data(), x.size() * sizeof(float),
                                                    fp32.memory.offsets[p.value_of[id]]));
  }
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel probe, AbsMaxKernel(1));
  TUNEJIT_ASSIGN_OR_RETURN(CompiledKernel compiled, compiler.Compile(probe.spec, fp32.limits.arch));
  TUNEJIT_ASSIGN_OR_RETURN(Module module, Module::Load(*fp32.device, compiled.program.cubin));
  TUNEJIT_ASSIGN_OR_RETURN(Kernel kernel, module.GetKernel(compiled.lowered_name));
  const size_t n = sources.size();
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer maxima,
                           DeviceBuffer::Allocate(*fp32.device, std::max<size_t>(n, 1) * 4));
  TUNEJIT_RETURN_IF_ERROR(maxima.Fill(0));
  // measure_after[s + 1]: the sources produced by step s (0: the graph inputs).
  std::vector<std::vector<int>> measure_after(p.steps.size() + 1);
  for (size_t j = 0; j < n; ++j) {
    const int v = p.value_of[sources[j]];
    if (v < 0) return absl::InternalError("calibration: a scale source has no float value");
    const int root = p.tensors[v].alias_of >= 0 ? p.tensors[v].alias_of : v;
    int producer = -1;
    for (size_t s = 0; s < p.steps.size(); ++s) {
      if (p.steps[s].output == root) producer = static_cast<int>(s);
    }
    measure_after[producer + 1].push_back(static_cast<int>(j));
  }
  auto measure = [&](int slot_list) -> absl::Status {
    for (int j : measure_after[slot_list]) {
      const int v = p.value_of[sources[j]];
      const int64_t total = p.tensors[v].NumElements();
      TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k, AbsMaxKernel(total));
      KernelArgs args;
      args.Add(fp32.TensorPtr(v));
      args.Add(maxima.ptr() + static_cast<DevicePtr>(4 * j));
      args.Add(static_cast<int64_t>(total));
      TUNEJIT_RETURN_IF_ERROR(fp32.stream->Launch(kernel, k.shape, args));
    }
    return absl::OkStatus();
  };
  TUNEJIT_RETURN_IF_ERROR(measure(0));
  for (size_t s = 0; s < p.steps.size(); ++s) {
    TUNEJIT_RETURN_IF_ERROR(fp32.LaunchStep(static_cast<int>(s), PlannedKernel::Phase::kRun));
    TUNEJIT_RETURN_IF_ERROR(measure(static_cast<int>(s) + 1));
  }
  TUNEJIT_RETURN_IF_ERROR(fp32.stream->Synchronize());
  std::vector<float> out(n);
  if (n > 0) TUNEJIT_RETURN_IF_ERROR(maxima.CopyToHost(out.data(), n * 4));
  return out;
}

}  // namespace tunejit
