#include "tuner/measure.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/half.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "ops/attention.h"
#include "ops/elementwise.h"
#include "ops/plan_runner.h"
#include "ops/reference_kernels.h"

namespace tunejit {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

size_t DtypeBytes(const std::string& dtype) {
  return dtype == "int8" ? 1 : (dtype == "float16" ? 2 : 4);
}

// The task's tensors and its reference plan (default epilogue: accumulator output, so int8 ops
// write int32 and float ops float32). The candidate's output is the workload's out_dtype: the
// accumulator's, or float16 (the tensor-core templates' fp16 activations), which the compare
// kernel reads against the reference's float32.
struct TaskTensors {
  size_t data_bytes = 0, weight_bytes = 0;
  int64_t out_elements = 0;
  std::string data_dtype;   // "float32", "float16" (the tensor-core templates) or "int8"
  std::string out_dtype;    // "float32", "int32", "float16" or "int8" (requantized)
  bool float_stem = false;  // conv2d_nchw_stem_mma.cuda: float32 data, float16 products
  int64_t channels = 0;     // output channels: the epilogue's bias and scale lengths
  int64_t reduction = 0;    // products per output (the requantize scale follows its root)
  Epilogue epilogue;        // MeasureEpilogue
  OpPlan reference;
  // Inputs after the epilogue's (attention_mma.cuda's V and mask): bytes and dtype of each.
  std::vector<std::pair<size_t, std::string>> more_inputs;
  bool attention = false;
  bool int8() const { return data_dtype == "int8"; }
  size_t out_bytes() const { return out_elements * DtypeBytes(out_dtype); }
  // The reference writes float32, int32, or the same int8 (an exact integer epilogue).
  size_t reference_bytes() const { return out_elements * (out_dtype == "int8" ? 1 : 4); }
};

// attention_mma.cuda: data Q, weight K, then V and the mask; float16 out, a float32 reference.
absl::StatusOr<TaskTensors> AttentionTensorsOf(const autotvm::Workload& w) {
  TUNEJIT_ASSIGN_OR_RETURN(AttentionParams p, ParseAttentionWorkload(w));
  TaskTensors t;
  t.attention = true;
  t.data_dtype = t.out_dtype = "float16";
  t.data_bytes = p.batch * p.heads * p.seq_q * p.head_dim * 2;
  t.weight_bytes = p.batch * p.heads * p.seq_kv * p.head_dim * 2;
  t.out_elements = p.batch * p.heads * p.seq_q * p.head_dim;
  t.more_inputs.push_back({t.weight_bytes, "float16"});
  if (ReadsMaskTensor(p.mask)) {
    const bool f32 = p.mask == AttentionMask::kF32;
    t.more_inputs.push_back({p.batch * p.seq_kv * (f32 ? 4 : 2), f32 ? "float32" : "float16"});
  }
  TUNEJIT_ASSIGN_OR_RETURN(t.reference, ReferenceAttentionPlan(p));
  return t;
}

absl::StatusOr<TaskTensors> TensorsOf(const autotvm::Workload& w) {
  if (w.task_name == kAttentionMma) return AttentionTensorsOf(w);
  TaskTensors t;
  t.epilogue = MeasureEpilogue(w);
  if (absl::StatusOr<autotvm::Conv2dParams> c = autotvm::ParseConv2dWorkload(w); c.ok()) {
    t.float_stem = c->nhwc_out;
    t.data_dtype = c->data_dtype;
    t.out_dtype = t.epilogue.output == Epilogue::Output::kInt8Requantize ? "int8" : c->out_dtype;
    t.data_bytes = c->n * c->ci * c->h * c->w * DtypeBytes(c->data_dtype);
    t.weight_bytes = c->co * (c->ci / c->groups) * c->kh * c->kw * DtypeBytes(c->kernel_dtype);
    t.out_elements = c->n * c->co * c->OutH() * c->OutW();
    t.channels = c->co;
    t.reduction = c->ci / c->groups * c->kh * c->kw;
    if (w.task_name == autotvm::kConv2dNhwcWgmmaPool) {  // the pooled output, 2x2 windows
      t.out_elements = c->n * c->co * (c->OutH() / 2) * (c->OutW() / 2);
      TUNEJIT_ASSIGN_OR_RETURN(t.reference, ReferenceConv2dPoolPlan(*c, t.epilogue));
    } else {
      TUNEJIT_ASSIGN_OR_RETURN(t.reference, ReferenceConv2dPlan(*c, t.epilogue));
    }
  } else if (w.task_name == autotvm::kBatchMatmul) {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::BatchMatmulParams b, autotvm::ParseBatchMatmulWorkload(w));
    t.data_dtype = t.out_dtype = b.dtype;
    t.data_bytes = b.x_batch * b.m * b.k * DtypeBytes(b.dtype);
    t.weight_bytes = b.y_batch * b.n * b.k * DtypeBytes(b.dtype);
    t.out_elements = b.batch() * b.m * b.n;
    t.channels = b.n;
    t.reduction = b.k;
    TUNEJIT_ASSIGN_OR_RETURN(t.reference, ReferenceBatchMatmulPlan(b, Epilogue{}));
  } else {
    TUNEJIT_ASSIGN_OR_RETURN(autotvm::DenseParams d, autotvm::ParseDenseWorkload(w));
    t.data_dtype = d.data_dtype;
    t.out_dtype = d.out_dtype;
    t.data_bytes = d.m * d.k * DtypeBytes(d.data_dtype);
    t.weight_bytes = d.n * d.k * DtypeBytes(d.data_dtype);
    t.out_elements = d.m * d.n;
    TUNEJIT_ASSIGN_OR_RETURN(t.reference, ReferenceDensePlan(d, Epilogue{}));
  }
  if (t.out_dtype == "float16" && t.data_dtype != "float16" && !t.float_stem) {
    return absl::UnimplementedError(absl::StrCat(
        w.task_name, ": a float16 output needs float16 data (the tensor-core templates)"));
  }
  return t;
}

// int8 in [-127, 127]; float32 uniform in [-1, 1) (24-bit grid); float16 uniform in [-1, 1) on
// the 2^-10 grid (every such value is a half). splitmix64, 8 int8, 2 floats or 4 halves per
// draw: VGG-16's first int8 input is 411 MB, which std::uniform_int_distribution took seconds
// over.
std::vector<uint8_t> RandomBytes(size_t bytes, const std::string& dtype, SplitMix64& rng) {
  std::vector<uint8_t> host(bytes);
  if (dtype == "int8") {
    for (size_t i = 0; i < bytes; i += 8) {
      uint64_t r = rng.Next();
      for (size_t j = i; j < std::min(bytes, i + 8); ++j, r >>= 8) {
        host[j] = static_cast<uint8_t>(static_cast<int8_t>(static_cast<int>(r & 0xFF) % 255 - 127));
      }
    }
    return host;
  }
  if (dtype == "float16") {
    for (size_t i = 0; i + 2 <= bytes; i += 8) {
      uint64_t r = rng.Next();
      for (size_t j = i; j + 2 <= std::min(bytes, i + 8); j += 2, r >>= 16) {
        const uint16_t h = FloatToHalf(static_cast<float>(r & 0x7FF) * 0x1.0p-10f - 1.0f);
        std::memcpy(&host[j], &h, 2);
      }
    }
    return host;
  }
  for (size_t i = 0; i + 4 <= bytes; i += 8) {
    const uint64_t r = rng.Next();
    for (size_t j = 0; j < 2 && i + 4 * j + 4 <= bytes; ++j) {
      // 24 random bits -> [0, 1) exactly representable, then to [-1, 1).
      const float v = static_cast<float>((r >> (32 * j)) & 0xFFFFFF) * 0x1.0p-23f - 1.0f;
      std::memcpy(&host[i + 4 * j], &v, 4);
    }
  }
  return host;
}

// The epilogue's per-channel bias and scale, as bytes of float32 (empty when it has none). A
// requantize scale of ~30 / the accumulators' rms keeps most int8 outputs off the saturation
// bounds, as calibrated networks do (uniform int8 operands: rms 127 / sqrt(3) each).
std::vector<std::vector<uint8_t>> EpilogueOperands(const TaskTensors& t, SplitMix64& rng) {
  if (!t.epilogue.bias && t.epilogue.output == Epilogue::Output::kAccumulator) return {};
  const double acc_rms =
      std::sqrt(static_cast<double>(std::max<int64_t>(t.reduction, 1))) * (127.0 * 127.0 / 3.0);
  std::vector<float> bias(t.channels), scale(t.channels);
  for (int64_t c = 0; c < t.channels; ++c) {
    bias[c] = static_cast<float>(40.0 * rng.Uniform() - 20.0);
    scale[c] = static_cast<float>((0.5 + rng.Uniform()) * 30.0 / acc_rms);
  }
  std::vector<uint8_t> b(bias.size() * 4), s(scale.size() * 4);
  std::memcpy(b.data(), bias.data(), b.size());
  std::memcpy(s.data(), scale.data(), s.size());
  return {std::move(b), std::move(s)};
}

absl::StatusOr<DeviceBuffer> Upload(const Device& dev, const std::vector<uint8_t>& host) {
  TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer buf, DeviceBuffer::Allocate(dev, host.size()));
  TUNEJIT_RETURN_IF_ERROR(buf.CopyFromHost(host.data(), host.size()));
  return buf;
}

double Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (double{v[n / 2 - 1]} + v[n / 2]);
}

}  // namespace

Epilogue MeasureEpilogue(const autotvm::Workload& workload) {
  if (workload.task_name != autotvm::kConv2dNhwcWgmma &&
      workload.task_name != autotvm::kConv2dNhwcWgmmaPool) {
    return {};
  }
  absl::StatusOr<autotvm::Conv2dParams> p = autotvm::ParseConv2dWorkload(workload);
  if (!p.ok() || p->data_dtype != "int8") return {};
  return {.bias = true, .relu = true, .output = Epilogue::Output::kInt8Requantize};
}

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Measurement FailedMeasurement(int error_no, std::string message, double all_cost) {
  Measurement m;
  m.result.costs = {kFailedCost};
  m.result.error_no = error_no;
  m.result.all_cost = all_cost;
  m.result.timestamp = UnixNow();
  m.message = std::move(message);
  return m;
}

struct GpuMeasurer::State {
  const Device* device = nullptr;
  const KernelCompiler* compiler = nullptr;
  const OpTemplate* op = nullptr;
  autotvm::Workload workload;
  MeasureOptions options;
  DeviceLimits limits;
  GpuArch arch;
  double tolerance = 0;
  bool int_output = false;
  std::optional<Stream> stream;  // Stream has no empty state
  DeviceBuffer data, weight, out, flush;
  Epilogue epilogue;                       // MeasureEpilogue
  std::vector<DeviceBuffer> epilogue_ins;  // its bias and scale (none for Epilogue{})
  // The candidates' and the reference's inputs: data, weight, then the epilogue's.
  std::vector<DevicePtr> Inputs() const {
    std::vector<DevicePtr> in = {data.ptr(), weight.ptr()};
    for (const DeviceBuffer& b : epilogue_ins) in.push_back(b.ptr());
    return in;
  }
  DeviceBuffer reference_dev, sums;   // sums: the compare kernel's output (double[3])
  std::optional<PlanRunner> compare;  // out against reference_dev
  int64_t elements = 0;               // of the output (float32, int32 or float16)
  int calls = 0;
  double stop_above = 0;  // seconds; 0: no early stop

  struct Checked {
    std::string mismatch;  // "" when the output matches the reference
    double seconds = 0;    // the checking run's time (CUDA events)
  };
  // Runs the bound plan once on a poisoned output and compares with the reference; an error
  // status for launch failures.
  absl::StatusOr<Checked> Check(PlanRunner& runner, bool corrupt);
  absl::StatusOr<double> TimeMedianSeconds(PlanRunner& runner);
  absl::StatusOr<double> TimeSustainedSeconds(PlanRunner& runner);  // MeasureOptions above
  bool StopsEarly(double seconds) const { return stop_above > 0 && seconds > stop_above; }
};

absl::StatusOr<GpuMeasurer::State::Checked> GpuMeasurer::State::Check(PlanRunner& runner,
                                                                      bool corrupt) {
  TUNEJIT_RETURN_IF_ERROR(out.Fill(0xFF));  // NaN / -1: a kernel that skips outputs shows
  TUNEJIT_ASSIGN_OR_RETURN(Event start, Event::Create(*device));
  TUNEJIT_ASSIGN_OR_RETURN(Event end, Event::Create(*device));
  TUNEJIT_RETURN_IF_ERROR(device->Synchronize());  // the fill may run on another stream
  TUNEJIT_RETURN_IF_ERROR(stream->Record(start));
  TUNEJIT_RETURN_IF_ERROR(runner.Run(*stream));
  TUNEJIT_RETURN_IF_ERROR(stream->Record(end));
  TUNEJIT_RETURN_IF_ERROR(stream->Synchronize());
  TUNEJIT_ASSIGN_OR_RETURN(float ms, Event::ElapsedMs(start, end));
  Checked checked;
  checked.seconds = ms * 1e-3;
  if (corrupt) {  // the test hook: one wrong output element
    int32_t v = 0;
    TUNEJIT_RETURN_IF_ERROR(out.CopyToHost(&v, 4));
    v = int_output ? v + 1 : -1;  // -1 as float bits is a NaN
    TUNEJIT_RETURN_IF_ERROR(out.CopyFromHost(&v, 4));
  }
  TUNEJIT_RETURN_IF_ERROR(sums.Fill(0));
  TUNEJIT_RETURN_IF_ERROR(compare->Run(*stream));
  TUNEJIT_RETURN_IF_ERROR(stream->Synchronize());
  double got[3];
  TUNEJIT_RETURN_IF_ERROR(sums.CopyToHost(got, sizeof(got)));
  const double diff = got[0], norm = got[1];
  const int64_t bad = static_cast<int64_t>(got[2]);
  if (bad > 0) {
    checked.mismatch = absl::StrFormat("%d of %d outputs %s", bad, elements,
                                       int_output ? "differ from the reference" : "are NaN");
    return checked;
  }
  if (int_output) return checked;
  const double error =
      norm > 0 ? std::sqrt(diff / norm) : (diff == 0 ? 0 : std::numeric_limits<double>::infinity());
  if (!(error <= tolerance)) {
    checked.mismatch = absl::StrFormat("relative error %g > %g", error, tolerance);
  }
  return checked;
}

absl::StatusOr<double> GpuMeasurer::State::TimeSustainedSeconds(PlanRunner& runner) {
  const Clock::time_point begin = Clock::now();
  while (SecondsSince(begin) < options.sustained_seconds) {
    for (int i = 0; i < 4; ++i) TUNEJIT_RETURN_IF_ERROR(runner.Run(*stream));
    TUNEJIT_RETURN_IF_ERROR(stream->Synchronize());  // a few launches queued at a time
  }
  const int repeats = std::max(1, options.max_repeats);
  std::vector<Event> events;
  for (int i = 0; i <= repeats; ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(Event e, Event::Create(*device));
    events.push_back(std::move(e));
  }
  TUNEJIT_RETURN_IF_ERROR(stream->Record(events[0]));
  for (int i = 1; i <= repeats; ++i) {
    TUNEJIT_RETURN_IF_ERROR(runner.Run(*stream));
    TUNEJIT_RETURN_IF_ERROR(stream->Record(events[i]));
  }
  TUNEJIT_RETURN_IF_ERROR(events.back().Synchronize());
  std::vector<float> ms;
  for (int i = 1; i <= repeats; ++i) {
    TUNEJIT_ASSIGN_OR_RETURN(float t, Event::ElapsedMs(events[i - 1], events[i]));
    ms.push_back(t);
  }
  return Median(ms) * 1e-3;
}

absl::StatusOr<double> GpuMeasurer::State::TimeMedianSeconds(PlanRunner& runner) {
  if (options.sustained_seconds > 0) return TimeSustainedSeconds(runner);
  for (int i = 0; i < options.warmup_runs; ++i) TUNEJIT_RETURN_IF_ERROR(runner.Run(*stream));
  TUNEJIT_ASSIGN_OR_RETURN(Event start, Event::Create(*device));
  TUNEJIT_ASSIGN_OR_RETURN(Event end, Event::Create(*device));
  const Clock::time_point begin = Clock::now();
  std::vector<float> ms;
  double previous = -1;
  int stable = 0;
  while (static_cast<int>(ms.size()) < std::max(1, options.max_repeats)) {
    if (options.flush_l2 && flush.size() > 0) {
      TUNEJIT_RETURN_IF_ERROR(flush.Fill(static_cast<uint8_t>(ms.size())));
      // The memset may run on another stream: make sure it is done before the start event.
      TUNEJIT_RETURN_IF_ERROR(device->Synchronize());
    }
    TUNEJIT_RETURN_IF_ERROR(stream->Record(start));
    TUNEJIT_RETURN_IF_ERROR(runner.Run(*stream));
    TUNEJIT_RETURN_IF_ERROR(stream->Record(end));
    TUNEJIT_RETURN_IF_ERROR(end.Synchronize());
    TUNEJIT_ASSIGN_OR_RETURN(float t, Event::ElapsedMs(start, end));
    ms.push_back(t);
    // Cannot win: one run tells enough.
    if (ms.size() == 1 && StopsEarly(t * 1e-3 / options.timed_stop_fraction)) break;
    if (static_cast<int>(ms.size()) < options.min_repeats) continue;
    const double median = Median(ms);
    stable = previous > 0 && std::abs(median - previous) <= options.stable_tolerance * median
                 ? stable + 1
                 : 0;
    previous = median;
    if (stable >= 3 || SecondsSince(begin) >= options.max_timing_seconds) break;
  }
  return Median(ms) * 1e-3;
}

GpuMeasurer::GpuMeasurer(std::unique_ptr<State> state) : state_(std::move(state)) {}
GpuMeasurer::~GpuMeasurer() = default;

absl::StatusOr<std::unique_ptr<GpuMeasurer>> GpuMeasurer::Create(const Device& device,
                                                                 const KernelCompiler& compiler,
                                                                 const Task& task,
                                                                 const MeasureOptions& options) {
  auto s = std::make_unique<State>();
  s->device = &device;
  s->compiler = &compiler;
  s->op = FindOpTemplate(task.workload.task_name);
  if (s->op == nullptr) {
    return absl::UnimplementedError("no op template for " + task.workload.task_name);
  }
  s->workload = task.workload;
  s->options = options;
  s->limits = DeviceLimits::FromProperties(device.properties());
  s->arch = device.properties().arch;
  TUNEJIT_ASSIGN_OR_RETURN(TaskTensors t, TensorsOf(task.workload));
  s->tolerance = task.workload.task_name.find("winograd") != std::string::npos
                     ? options.winograd_tolerance
                 : t.attention               ? options.attention_tolerance
                 : t.float_stem              ? options.stem_tolerance
                 : t.out_dtype == "float16"  ? options.fp16_output_tolerance
                 : t.data_dtype == "float16" ? options.fp16_tolerance
                                             : options.fp32_tolerance;
  s->int_output = t.int8();
  TUNEJIT_ASSIGN_OR_RETURN(Stream stream, Stream::Create(device));
  s->stream.emplace(std::move(stream));
  SplitMix64 rng(options.input_seed);
  TUNEJIT_ASSIGN_OR_RETURN(s->data, Upload(device, RandomBytes(t.data_bytes, t.data_dtype, rng)));
  TUNEJIT_ASSIGN_OR_RETURN(s->weight,
                           Upload(device, RandomBytes(t.weight_bytes, t.data_dtype, rng)));
  s->epilogue = t.epilogue;
  for (const std::vector<uint8_t>& bytes : EpilogueOperands(t, rng)) {
    TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, Upload(device, bytes));
    s->epilogue_ins.push_back(std::move(b));
  }
  for (const auto& [bytes, dtype] : t.more_inputs) {
    TUNEJIT_ASSIGN_OR_RETURN(DeviceBuffer b, Upload(device, RandomBytes(bytes, dtype, rng)));
    s->epilogue_ins.push_back(std::move(b));
  }
  TUNEJIT_ASSIGN_OR_RETURN(s->out, DeviceBuffer::Allocate(device, t.out_bytes()));
  const int64_t l2 = std::max(device.properties().l2_bytes, 1 << 20);
  if (options.flush_l2) {
    TUNEJIT_ASSIGN_OR_RETURN(s->flush, DeviceBuffer::Allocate(device, 2 * l2));
  }
  // The reference output, computed once per task and kept on the device for the comparisons.
  TUNEJIT_ASSIGN_OR_RETURN(s->reference_dev, DeviceBuffer::Allocate(device, t.reference_bytes()));
  TUNEJIT_ASSIGN_OR_RETURN(PlanRunner ref,
                           PlanRunner::Create(device, compiler, t.reference, s->arch));
  TUNEJIT_RETURN_IF_ERROR(ref.Bind(s->Inputs(), {s->reference_dev.ptr()}));
  TUNEJIT_RETURN_IF_ERROR(ref.Prepare(*s->stream));
  TUNEJIT_RETURN_IF_ERROR(ref.Run(*s->stream));
  TUNEJIT_RETURN_IF_ERROR(s->stream->Synchronize());
  TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel compare, CompareKernel(t.out_elements, t.out_dtype));
  OpPlan compare_plan;
  compare_plan.kernels.push_back(std::move(compare));
  TUNEJIT_ASSIGN_OR_RETURN(PlanRunner compare_runner,
                           PlanRunner::Create(device, compiler, compare_plan, s->arch));
  TUNEJIT_ASSIGN_OR_RETURN(s->sums, DeviceBuffer::Allocate(device, 3 * sizeof(double)));
  TUNEJIT_RETURN_IF_ERROR(
      compare_runner.Bind({s->out.ptr(), s->reference_dev.ptr()}, {s->sums.ptr()}));
  s->compare.emplace(std::move(compare_runner));
  s->elements = t.out_elements;
  return std::unique_ptr<GpuMeasurer>(new GpuMeasurer(std::move(s)));
}

void GpuMeasurer::SetStopAbove(double seconds) {
  state_->stop_above = std::isfinite(seconds) && seconds > 0 ? seconds : 0;
}

std::function<void()> MakeCompileJob(const OpTemplate* op, const KernelCompiler* compiler,
                                     autotvm::Workload workload, DeviceLimits limits, GpuArch arch,
                                     autotvm::ConfigEntity config) {
  return [op, compiler, workload = std::move(workload), limits, arch, config = std::move(config)] {
    absl::StatusOr<OpPlan> plan =
        op->Specialize(workload, config, limits, MeasureEpilogue(workload));
    // Every kernel is attempted even when one fails; the successes land in the cache.
    if (plan.ok()) (void)CompilePlan(*compiler, *plan, arch, 1);
  };
}

std::function<void()> GpuMeasurer::CompileJob(const autotvm::ConfigEntity& config) {
  const State& s = *state_;
  return MakeCompileJob(s.op, s.compiler, s.workload, s.limits, s.arch, config);
}

Measurement GpuMeasurer::Measure(const autotvm::ConfigEntity& config) {
  State& s = *state_;
  const Clock::time_point begin = Clock::now();
  const bool corrupt = s.calls++ == s.options.corrupt_call;
  auto fail = [&](int error_no, const absl::Status& status) {
    return FailedMeasurement(error_no, std::string(status.message()), SecondsSince(begin));
  };
  absl::StatusOr<OpPlan> plan = s.op->Specialize(s.workload, config, s.limits, s.epilogue);
  if (!plan.ok()) return fail(autotvm::kInstantiationError, plan.status());
  absl::Status compiled =
      CompilePlan(*s.compiler, *plan, s.arch, s.options.compile_threads).status();
  if (!compiled.ok()) return fail(autotvm::kCompileDevice, compiled);
  absl::StatusOr<PlanRunner> runner = PlanRunner::Create(*s.device, *s.compiler, *plan, s.arch);
  if (!runner.ok()) return fail(autotvm::kRuntimeDevice, runner.status());
  absl::Status bound = runner->Bind(s.Inputs(), {s.out.ptr()});
  if (bound.ok()) bound = runner->Prepare(*s.stream);
  if (!bound.ok()) return fail(autotvm::kRuntimeDevice, bound);
  absl::StatusOr<State::Checked> checked = s.Check(*runner, corrupt);
  if (!checked.ok()) return fail(autotvm::kRuntimeDevice, checked.status());
  if (!checked->mismatch.empty()) {
    return fail(autotvm::kWrongAnswer, absl::InternalError("wrong answer: " + checked->mismatch));
  }
  // A checking run over the bound means a candidate that cannot win; its time is a little off
  // (first launch, no L2 flush) but the search only needs to know it is slow.
  absl::StatusOr<double> seconds =
      s.StopsEarly(checked->seconds) ? checked->seconds : s.TimeMedianSeconds(*runner);
  if (!seconds.ok()) return fail(autotvm::kRuntimeDevice, seconds.status());
  Measurement m;
  m.result.costs = {*seconds};
  m.result.error_no = autotvm::kNoError;
  m.result.all_cost = SecondsSince(begin);
  m.result.timestamp = UnixNow();
  return m;
}

}  // namespace tunejit
