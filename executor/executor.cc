#include "executor/executor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "executor/executor_internal.h"
#include "executor/row_transposes.h"
#include "graph/quantize.h"

namespace tunejit {
namespace {

using Clock = std::chrono::steady_clock;

// The kPrepare kernels (weight transforms), then the device memory in use.
absl::Status PrepareAndMeasure(Executor::State& s) {
  for (size_t i = 0; i < s.steps.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(s.LaunchStep(static_cast<int>(i), PlannedKernel::Phase::kPrepare));
  }
  TUNEJIT_RETURN_IF_ERROR(s.stream->Synchronize());
  TUNEJIT_ASSIGN_OR_RETURN(s.stats.peak_device_bytes, s.device->MemoryInUse());
  return absl::OkStatus();
}

// Everything but calibration: plans, compilation (+ verification), memory, weights, kPrepare.
absl::Status BuildSteps(Executor::State& s, const KernelCompiler& compiler,
                        const WeightSet& weights) {
  const auto lower_start = Clock::now();
  TUNEJIT_RETURN_IF_ERROR(PlanSteps(s));
  s.stats.lower_seconds += SecondsSince(lower_start);
  TUNEJIT_RETURN_IF_ERROR(CompileSteps(s, compiler, VerificationPlans(s)));
  TUNEJIT_ASSIGN_OR_RETURN(bool changed, VerifyRecords(s, compiler));
  if (changed) TUNEJIT_RETURN_IF_ERROR(CompileSteps(s, compiler, {}));
  TUNEJIT_RETURN_IF_ERROR(UploadWeights(s, weights));
  TUNEJIT_RETURN_IF_ERROR(AllocateAndBind(s));
  return PrepareAndMeasure(s);
}

absl::StatusOr<std::unique_ptr<Executor::State>> NewState(const Device& device, const Graph& graph,
                                                          const WeightSet& weights,
                                                          const ExecutorOptions& options) {
  auto s = std::make_unique<Executor::State>();
  s->device = &device;
  s->options = options;
  if (options.target.name.empty()) {
    // A default-constructed Target matches no record: query as plain "cuda" (keys cuda, gpu).
    TUNEJIT_ASSIGN_OR_RETURN(s->options.target, autotvm::ParseTarget("cuda"));
  }
  // At fp16 the graph with its row transposes moved to where attention steps read through them.
  s->graph =
      options.mode == NumericMode::kFp16TensorCores ? SinkRowTransposes(graph, weights) : graph;
  s->limits = DeviceLimits::FromProperties(device.properties());
  TUNEJIT_ASSIGN_OR_RETURN(s->program, LowerToSteps(s->graph, options.mode, &weights));
  TUNEJIT_ASSIGN_OR_RETURN(Stream stream, Stream::Create(device));
  s->stream.emplace(std::move(stream));
  return s;
}

// int8: max |x| of the scale slots `slots` in the float32 network on a calibration batch.
absl::StatusOr<std::vector<float>> CalibrateSlots(Executor::State& s,
                                                  const KernelCompiler& compiler,
                                                  const WeightSet& weights,
                                                  const std::vector<int>& slots) {
  ExecutorOptions fp32_options = s.options;
  fp32_options.mode = NumericMode::kFp32;
  // The templates' fallback configs only: they need no record and no verification (each is
  // tested against the CPU reference), so calibration costs one slow-ish fp32 run, not a second
  // verified build (that took 7 s of a 13 s warm start on VGG-16). Quiet: its fallback warnings
  // are not the network's.
  fp32_options.history = nullptr;
  fp32_options.verify_records = false;
  fp32_options.progress = nullptr;
  TUNEJIT_ASSIGN_OR_RETURN(std::unique_ptr<Executor::State> fp32,
                           NewState(*s.device, s.graph, weights, fp32_options));
  TUNEJIT_RETURN_IF_ERROR(BuildSteps(*fp32, compiler, weights));
  std::vector<int> sources;
  for (int j : slots) sources.push_back(s.program.scale_sources[j]);
  return CalibrateAbsMax(*fp32, compiler, sources);
}

// int8: the scale of every scale slot, given (options.activation_scales) or calibrated; the
// calibration run is skipped when every slot has a given scale.
absl::Status ResolveScales(Executor::State& s, const KernelCompiler& compiler,
                           const WeightSet& weights) {
  const auto start = Clock::now();
  TUNEJIT_ASSIGN_OR_RETURN(GivenScales given,
                           MatchGivenScales(s.graph, s.program, s.options.activation_scales));
  const std::vector<int> missing = SlotsToCalibrate(given);
  std::vector<float> abs_max;
  if (!missing.empty()) {
    TUNEJIT_ASSIGN_OR_RETURN(abs_max, CalibrateSlots(s, compiler, weights, missing));
    s.stats.calibrate_seconds = SecondsSince(start);
  }
  s.scales = ResolveSlotScales(given, abs_max);
  s.stats.scales_calibrated = static_cast<int>(missing.size());
  s.stats.scales_given = static_cast<int>(s.scales.size() - missing.size());
  s.stats.scales_unused = given.unused;
  for (size_t j = 0; j < s.scales.size(); ++j) {
    s.stats.activation_scales[s.graph.tensor(s.program.scale_sources[j]).name] = s.scales[j];
  }
  return absl::OkStatus();
}

// A build from a saved plan (ExecutorOptions::plan): its int8 scales and kernel choices, no
// calibration, no verification. Any error (a FailedPrecondition naming how the plan differs from
// this build, or a failure of the build itself) makes the caller build in full.
absl::StatusOr<std::unique_ptr<Executor::State>> BuildFromPlan(
    const Device& device, const KernelCompiler& compiler, const Graph& graph,
    const WeightSet& weights, const ExecutorOptions& options, const BuildPlanIdentity& identity) {
  const BuildPlan& plan = *options.plan;
  if (std::optional<std::string> why = IdentityMismatch(plan.identity, identity)) {
    return absl::FailedPreconditionError(*why);
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::unique_ptr<Executor::State> s,
                           NewState(device, graph, weights, options));
  TUNEJIT_RETURN_IF_ERROR(CheckPlannedSteps(s->program, plan));
  s->scales = plan.activation_scales;
  s->stats.scales_given = static_cast<int>(s->scales.size());
  for (size_t j = 0; j < s->scales.size(); ++j) {
    s->stats.activation_scales[s->graph.tensor(s->program.scale_sources[j]).name] = s->scales[j];
  }
  const auto lower_start = Clock::now();
  TUNEJIT_RETURN_IF_ERROR(PlanSteps(*s, &plan));
  s->stats.lower_seconds += SecondsSince(lower_start);
  TUNEJIT_RETURN_IF_ERROR(CompileSteps(*s, compiler, {}));
  TUNEJIT_RETURN_IF_ERROR(CheckPlannedKernels(*s, plan));
  TUNEJIT_RETURN_IF_ERROR(UploadWeights(*s, weights));
  TUNEJIT_RETURN_IF_ERROR(AllocateAndBind(*s));
  if (s->memory.arena_bytes != plan.arena_bytes) {
    return absl::FailedPreconditionError(absl::StrCat("its activation arena is ", plan.arena_bytes,
                                                      " bytes; this build's is ",
                                                      s->memory.arena_bytes));
  }
  TUNEJIT_RETURN_IF_ERROR(PrepareAndMeasure(*s));
  s->plan = plan;
  s->stats.plan_used = true;
  return s;
}

absl::Status NotFound(const std::string& what, const std::string& name) {
  return absl::InvalidArgumentError(
      absl::StrCat("executor: no graph ", what, " named '", name, "'"));
}

}  // namespace

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void Executor::State::Warn(const std::string& message) {
  stats.warnings.push_back(message);
  if (options.progress != nullptr) {
    std::fprintf(options.progress, "warning: %s\n", message.c_str());
    std::fflush(options.progress);
  }
}

absl::Status Executor::State::LaunchStep(int step, PlannedKernel::Phase phase) {
  for (BoundLaunch& l : steps[step].launches) {
    if (l.phase == phase) TUNEJIT_RETURN_IF_ERROR(stream->Launch(l.kernel, l.shape, l.args));
  }
  return absl::OkStatus();
}

absl::StatusOr<Executor> Executor::Build(const Device& device, const KernelCompiler& compiler,
                                         const Graph& graph, const WeightSet& weights,
                                         const ExecutorOptions& options) {
  TUNEJIT_RETURN_IF_ERROR(graph.Validate());
  TUNEJIT_RETURN_IF_ERROR(CheckWeights(graph, weights));
  const auto fingerprint_start = Clock::now();
  TUNEJIT_ASSIGN_OR_RETURN(BuildPlanIdentity identity,
                           BuildIdentity(device, graph, weights, options));
  const double fingerprint_seconds = SecondsSince(fingerprint_start);
  std::string refused;
  if (options.plan != nullptr) {
    absl::StatusOr<std::unique_ptr<State>> planned =
        BuildFromPlan(device, compiler, graph, weights, options, identity);
    if (planned.ok()) {
      for (const std::string& w : weights.warnings()) (*planned)->Warn(w);
      (*planned)->stats.fingerprint_seconds = fingerprint_seconds;
      return Executor(*std::move(planned));
    }
    refused = std::string(planned.status().message());
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::unique_ptr<State> s, NewState(device, graph, weights, options));
  s->stats.fingerprint_seconds = fingerprint_seconds;
  s->stats.plan_refused = refused;
  if (!refused.empty())
    s->Warn(absl::StrCat("build plan not used: ", refused, "; building in full"));
  for (const std::string& w : weights.warnings()) s->Warn(w);
  if (IsInt8(options.mode)) {
    TUNEJIT_RETURN_IF_ERROR(ResolveScales(*s, compiler, weights));
  }
  absl::Status built = BuildSteps(*s, compiler, weights);
  if (absl::IsResourceExhausted(built)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the device cannot hold the network: ", built.message()));
  }
  TUNEJIT_RETURN_IF_ERROR(built);
  s->plan = MakeBuildPlan(*s, std::move(identity));
  return Executor(std::move(s));
}

Executor::Executor(std::unique_ptr<State> state) : state_(std::move(state)) {}
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;
Executor::~Executor() = default;

namespace {

// Copies `count` values of `dtype` to graph input `name`, after checking both against it.
absl::Status CopyInput(Executor::State& s, const std::string& name, DType dtype, const void* data,
                       size_t count) {
  std::optional<int> id = s.graph.FindTensor(name);
  if (!id || s.graph.tensor(*id).kind != TensorKind::kInput) return NotFound("input", name);
  const TensorDesc& d = s.graph.tensor(*id);
  if (d.dtype != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("executor: input '", name, "' is ",
                                                   std::string(DTypeName(d.dtype)), ", got ",
                                                   std::string(DTypeName(dtype)), " values"));
  }
  if (static_cast<int64_t>(count) != d.NumElements()) {
    return absl::InvalidArgumentError(absl::StrCat("executor: input '", name, "' has ",
                                                   d.NumElements(), " elements, got ", count));
  }
  const int t = s.program.value_of[*id];
  return s.arena.CopyFromHost(data, count * DTypeSize(dtype), s.memory.offsets[t]);
}

}  // namespace

absl::Status Executor::SetInput(const std::string& name, absl::Span<const float> values) {
  return CopyInput(*state_, name, DType::kF32, values.data(), values.size());
}

absl::Status Executor::SetInput(const std::string& name, absl::Span<const int64_t> values) {
  return CopyInput(*state_, name, DType::kI64, values.data(), values.size());
}

absl::Status Executor::Run() {
  State& s = *state_;
  if (s.captured) {
    TUNEJIT_RETURN_IF_ERROR(s.stream->ReplayGraph());
    return s.stream->Synchronize();
  }
  // First run: launch directly (errors name the kernel), then capture the same launches.
  for (size_t i = 0; i < s.steps.size(); ++i) {
    TUNEJIT_RETURN_IF_ERROR(s.LaunchStep(static_cast<int>(i), PlannedKernel::Phase::kRun));
  }
  TUNEJIT_RETURN_IF_ERROR(s.stream->Synchronize());
  TUNEJIT_RETURN_IF_ERROR(s.stream->BeginCapture());
  for (size_t i = 0; i < s.steps.size(); ++i) {
    absl::Status launched = s.LaunchStep(static_cast<int>(i), PlannedKernel::Phase::kRun);
    if (!launched.ok()) {
      (void)s.stream->EndCaptureAndInstantiate();  // leave capture mode whatever happened
      return launched;
    }
  }
  TUNEJIT_RETURN_IF_ERROR(s.stream->EndCaptureAndInstantiate());
  s.captured = true;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Executor::Output(const std::string& name) const {
  const State& s = *state_;
  std::optional<int> id = s.graph.FindTensor(name);
  // Only outputs: the arena reuses every other tensor's bytes during the run.
  if (!id || s.graph.tensor(*id).kind != TensorKind::kOutput || s.program.value_of[*id] < 0) {
    return NotFound("output", name);
  }
  const StepTensor& t = s.program.tensors[s.program.value_of[*id]];
  const int64_t offset = s.memory.offsets[s.program.value_of[*id]];
  std::vector<float> out(t.NumElements());
  if (t.dtype == DType::kF32) {
    TUNEJIT_RETURN_IF_ERROR(s.arena.CopyToHost(out.data(), out.size() * 4, offset));
    return out;
  }
  std::vector<int8_t> q(out.size());  // an int8 intermediate: dequantize with its scale
  TUNEJIT_RETURN_IF_ERROR(s.arena.CopyToHost(q.data(), q.size(), offset));
  for (size_t i = 0; i < q.size(); ++i) out[i] = q[i] * s.scales[t.scale_slot];
  return out;
}

absl::StatusOr<double> Executor::TimeEndToEnd(int repeats) {
  State& s = *state_;
  if (!s.captured) TUNEJIT_RETURN_IF_ERROR(Run());
  for (int i = 0; i < 3; ++i) TUNEJIT_RETURN_IF_ERROR(Run());  // warm-up
  TUNEJIT_ASSIGN_OR_RETURN(Event start, Event::Create(*s.device));
  TUNEJIT_ASSIGN_OR_RETURN(Event end, Event::Create(*s.device));
  std::vector<double> seconds;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    TUNEJIT_RETURN_IF_ERROR(s.stream->Record(start));
    TUNEJIT_RETURN_IF_ERROR(s.stream->ReplayGraph());
    TUNEJIT_RETURN_IF_ERROR(s.stream->Record(end));
    TUNEJIT_RETURN_IF_ERROR(end.Synchronize());
    TUNEJIT_ASSIGN_OR_RETURN(float ms, Event::ElapsedMs(start, end));
    seconds.push_back(ms * 1e-3);
  }
  std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
  return seconds[seconds.size() / 2];
}

absl::StatusOr<std::vector<double>> Executor::TimeLayers(int repeats) {
  State& s = *state_;
  TUNEJIT_ASSIGN_OR_RETURN(Event start, Event::Create(*s.device));
  TUNEJIT_ASSIGN_OR_RETURN(Event end, Event::Create(*s.device));
  std::vector<double> medians;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const int step = static_cast<int>(i);
    TUNEJIT_RETURN_IF_ERROR(s.LaunchStep(step, PlannedKernel::Phase::kRun));  // warm-up
    std::vector<double> seconds;
    for (int r = 0; r < std::max(repeats, 1); ++r) {
      TUNEJIT_RETURN_IF_ERROR(s.stream->Record(start));
      TUNEJIT_RETURN_IF_ERROR(s.LaunchStep(step, PlannedKernel::Phase::kRun));
      TUNEJIT_RETURN_IF_ERROR(s.stream->Record(end));
      TUNEJIT_RETURN_IF_ERROR(end.Synchronize());
      TUNEJIT_ASSIGN_OR_RETURN(float ms, Event::ElapsedMs(start, end));
      seconds.push_back(ms * 1e-3);
    }
    std::nth_element(seconds.begin(), seconds.begin() + seconds.size() / 2, seconds.end());
    medians.push_back(seconds[seconds.size() / 2]);
  }
  return medians;
}

const std::vector<LayerInfo>& Executor::layers() const { return state_->layers; }
const ExecutorStats& Executor::stats() const { return state_->stats; }
const BuildPlan& Executor::build_plan() const { return state_->plan; }

}  // namespace tunejit
