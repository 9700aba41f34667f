// `tunejit run`: build a model (the built-in VGG-16 or an ONNX file) with a tuning log's kernels,
// run it on the GPU, check it against cuDNN fp32 and report per-layer times beside cuDNN's (text
// table, --json, --plot). Inputs are checked before the GPU is, so a wrong file name is reported as
// such even on a machine without one. --input / --output read and write raw float32 files, to
// compare with another framework's output on the same input.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <limits>
#include <memory>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "autotvm/target.h"
#include "baseline/cudnn_network.h"
#include "cache/kernel_cache.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_source.h"
#include "cli/raw_floats.h"
#include "cli/run_report.h"
#include "cli/svg_chart.h"
#include "common/random.h"
#include "common/status_macros.h"
#include "common/version.h"
#include "executor/executor.h"
#include "executor/node_tasks.h"
#include "graph/weights.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"
#include "onnx/import.h"

namespace tunejit::cli {
namespace {

constexpr char kSeedLog[] = "seed-vgg16-v100.log";
constexpr int64_t kMaxBatch = 4096;  // far above what fits an H200 at 224x224; catches typos
constexpr int64_t kBatchUnset = std::numeric_limits<int64_t>::min();  // no --batch given

struct RunFlags {
  std::string model = "vgg16";
  std::string log;
  std::string weights;
  std::string precision_text = "int8";
  NumericMode mode = NumericMode::kInt8Dp4a;  // from precision_text and tensor_cores
  int64_t batch = kBatchUnset;                // the model's (vgg16: 128; ONNX: the file's)
  int64_t repeats = 50;
  int64_t device = 0;
  std::string cache_dir;
  bool no_cudnn = false;
  std::string baseline_text;  // "fp32" / "fp16"; "" = fp16 for tensor-core runs, else fp32
  BaselinePrecision baseline = BaselinePrecision::kFp32;
  bool no_verify = false;
  bool prefer_own_gpu = false;  // HistoryBest::PreferDevice with this GPU's name
  bool tensor_cores = false;    // int8 convs on the Hopper tensor-core template
  int64_t seed = 1;
  std::string json;
  std::string plot;
  std::string save_weights;
  std::string input;   // raw float32 input file (raw int64 for an int64 input: token ids)
  std::string output;  // raw float32 output file
  std::string plan;    // saved build plan: used when it matches, else written after the build
};

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The shipped data file `name`: $TUNEJIT_DATA_DIR, then <prefix>/share/tunejit next to an installed
// binary, then <checkout>/data beside a <checkout>/build/tunejit (a tree copied elsewhere), then
// the source tree this binary was built from. "" when none has it.
std::string FindDataFile(const std::string& name, std::vector<std::string>* searched) {
  std::vector<std::filesystem::path> dirs;
  if (const char* env = std::getenv("TUNEJIT_DATA_DIR"); env != nullptr && *env != '\0')
    dirs.emplace_back(env);
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path().parent_path() / "share" / "tunejit");
    dirs.push_back(exe.parent_path().parent_path() / "data");  // build/tunejit in a checkout
  }
  dirs.emplace_back(TUNEJIT_BUILD_DATA_DIR);
  for (const std::filesystem::path& dir : dirs) {
    std::filesystem::path p = dir / name;
    searched->push_back(p.string());
    if (std::filesystem::exists(p, ec)) return p.string();
  }
  return "";
}

int Usage(const std::string& message) {
  std::cerr << "tunejit run: " << message << "\n(run 'tunejit run --help' for usage)\n";
  return kExitUsage;
}

// Parses and checks the flags; returns -1 to go on, else the exit code.
int ParseRunFlags(const std::vector<std::string>& args, RunFlags* f) {
  FlagParser p("tunejit run",
               "Run a model on the GPU with the kernels a tuning log chose, check its output "
               "against cuDNN fp32 and report per-layer and end-to-end times beside cuDNN's.");
  p.String("model", &f->model, "NAME|FILE", std::string(kModelHelp) + " (default vgg16)");
  p.String("log", &f->log, "FILE", "AutoTVM tuning log (default: the shipped seed log)");
  p.String("weights", &f->weights, "FILE",
           "safetensors weights for vgg16 (default: random, from --seed); an ONNX model "
           "carries its own");
  p.Int("batch", &f->batch, "N", "batch size (default: vgg16 128, ONNX the file's)");
  p.String("precision", &f->precision_text, "P",
           "fp32, int8 or fp16 (Hopper tensor cores, NHWC inside) (default int8)");
  p.Int("repeats", &f->repeats, "N", "timed runs; medians are reported (default 50)");
  p.Int("device", &f->device, "N", "GPU ordinal (default 0)");
  p.String("cache-dir", &f->cache_dir, "DIR", "kernel cache directory");
  p.Bool("no-cudnn", &f->no_cudnn, "skip the cuDNN baseline (and the accuracy check)");
  p.String("baseline", &f->baseline_text, "P",
           "the cuDNN times beside ours: fp32 (NCHW, no TF32) or fp16 (NHWC, tensor cores) "
           "(default: fp16 for --precision fp16 and --tensor-cores, else fp32); the accuracy "
           "check always compares with cuDNN fp32");
  p.Bool("no-verify", &f->no_verify, "do not check each record's kernel against the reference");
  p.Bool("prefer-own-gpu", &f->prefer_own_gpu,
         "choose among the records this GPU measured (their \"tunejit\" device) where the log "
         "has any, instead of the fastest record of any GPU (TVM's choice)");
  p.Bool("tensor-cores", &f->tensor_cores,
         "int8: run the convs on the Hopper tensor-core template (NHWC, IGMMA; sm_90) instead of "
         "TVM's dp4a templates, and the dense layers float16 on wgmma");
  p.Int("seed", &f->seed, "N", "seed of the random input and random weights (default 1)");
  p.String("json", &f->json, "FILE", "also write the report as JSON");
  p.String("plot", &f->plot, "FILE.svg", "also write a per-layer bar chart");
  p.String("save-weights", &f->save_weights, "FILE",
           "write the weights used (e.g. the random ones) as safetensors, for --weights later");
  p.String("input", &f->input, "FILE.bin",
           "the input as raw little-endian float32, or int64 for an int64 input such as "
           "BERT's token ids (default: N(0, 1), or ids uniform over the embedding table, from "
           "--seed)");
  p.String("output", &f->output, "FILE.bin", "write the output as raw little-endian float32");
  p.String("plan", &f->plan, "FILE",
           "a saved build plan: when it was made for this model, weights, log, precision, GPU "
           "and tunejit build, the build takes its kernels and int8 scales (no kernel choice, "
           "verification or calibration); otherwise (or when FILE does not exist) the build "
           "runs in full and writes its plan to FILE");
  std::vector<std::string> positional;
  if (int code = p.Parse(args, &positional); code >= 0) return code;
  if (!positional.empty()) return Usage("unexpected argument '" + positional[0] + "'");
  if (f->model != "vgg16" && !IsOnnxPath(f->model)) {
    return Usage("unknown model '" + f->model + "': expected " + kModelHelp);
  }
  if (IsOnnxPath(f->model) && !f->weights.empty()) {
    return Usage("--weights applies to vgg16 only: an ONNX model's weights are its initializers");
  }
  absl::StatusOr<NumericMode> mode = ResolveNumericMode(f->precision_text, f->tensor_cores);
  if (!mode.ok()) return Usage(std::string(mode.status().message()));
  f->mode = *mode;
  if (f->batch != kBatchUnset && (f->batch < 1 || f->batch > kMaxBatch))
    return Usage(absl::StrFormat("--batch must be in 1..%d, got %d", kMaxBatch, f->batch));
  if (f->repeats < 1) return Usage(absl::StrFormat("--repeats must be >= 1, got %d", f->repeats));
  if (f->baseline_text.empty()) f->baseline_text = UsesTensorCores(f->mode) ? "fp16" : "fp32";
  if (f->baseline_text != "fp32" && f->baseline_text != "fp16") {
    return Usage("--baseline must be fp32 or fp16, got '" + f->baseline_text + "'");
  }
  f->baseline = f->baseline_text == "fp16" ? BaselinePrecision::kFp16 : BaselinePrecision::kFp32;
  if (f->device < 0) return Usage(absl::StrFormat("--device must be >= 0, got %d", f->device));
  return -1;
}

// Everything the run builds up, in the order it is made.
struct RunState {
  std::optional<Graph> graph;
  std::string input_name, output_name;  // the graph's input and output tensors
  int64_t batch = 0;
  std::vector<float> input;  // --input's values, or N(0, 1) from --seed
  // An int64 input (token ids) instead: --input's values, or uniform ids from --seed.
  std::optional<std::vector<int64_t>> input_ids;
  autotvm::LogContents log;
  autotvm::HistoryBest history;
  std::optional<WeightSet> weights;
  absl::flat_hash_map<std::string, float> activation_scales;  // a QDQ model's
  RunReport report;
};

// N(0, 1) values from `seed`: splitmix64 + Box-Muller, the same on every platform.
std::vector<float> RandomInput(size_t count, uint64_t seed) {
  SplitMix64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  auto next = [&rng] { return rng.Uniform(); };
  std::vector<float> out(count);
  for (size_t i = 0; i < count; i += 2) {
    double u1 = 1.0 - next(), u2 = next();  // u1 in (0, 1]: log is finite
    double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(2 * std::numbers::pi * u2));
    if (i + 1 < count) out[i + 1] = static_cast<float>(r * std::sin(2 * std::numbers::pi * u2));
  }
  return out;
}

// The rows of the smallest table a gather reads with graph tensor `ids` (every id below it is
// valid for all of them); 1 when no gather reads it.
int64_t IdBound(const Graph& g, int ids) {
  int64_t bound = 0;
  for (const Node& n : g.nodes()) {
    if (n.op == OpKind::kGather && n.inputs[1] == ids) {
      const int64_t rows = g.tensor(n.inputs[0]).shape[0];
      bound = bound == 0 ? rows : std::min(bound, rows);
    }
  }
  return std::max<int64_t>(bound, 1);
}

// Ids uniform in [0, bound) from `seed` (splitmix64, the same on every platform).
std::vector<int64_t> RandomIds(size_t count, int64_t bound, uint64_t seed) {
  SplitMix64 rng(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<int64_t> out(count);
  for (int64_t& id : out) id = static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(bound));
  return out;
}

// The gather clamps ids outside [-bound, bound) to its table (graph/graph.h): the run goes on, but
// such ids are most likely a tokenizer with another vocabulary, which the user should hear of.
void WarnIdsOutOfRange(const std::string& path, const std::vector<int64_t>& ids, int64_t bound) {
  const auto out = std::count_if(ids.begin(), ids.end(),
                                 [bound](int64_t id) { return id < -bound || id >= bound; });
  if (out == 0) return;
  std::cerr << "run: warning: " << out << " of " << ids.size() << " ids in " << path
            << " are outside the embedding table's " << bound
            << " rows: they read the nearest row (clamped)\n";
}

// `values` read from --input must be exactly the input's size.
template <typename T>
absl::Status CheckInputSize(const RunFlags& f, const RunState& s, const TensorDesc& t,
                            const std::vector<T>& values, const char* type) {
  if (static_cast<int64_t>(values.size()) == t.NumElements()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("--input %s holds %d %s values; input '%s' [%s] (%s) needs %d", f.input,
                      values.size(), type, s.input_name, absl::StrJoin(t.shape, ", "),
                      std::string(DTypeName(t.dtype)), t.NumElements()));
}

// --input's values (raw float32, or raw int64 for an int64 input; exactly the input's size), else
// N(0, 1) floats or uniform ids from --seed, into s->input or s->input_ids.
absl::Status ModelInput(const RunFlags& f, RunState* s) {
  const int id = *s->graph->FindTensor(s->input_name);
  const TensorDesc& t = s->graph->tensor(id);
  const size_t count = static_cast<size_t>(t.NumElements());
  if (t.dtype == DType::kI64) {
    if (f.input.empty()) {
      s->input_ids = RandomIds(count, IdBound(*s->graph, id), static_cast<uint64_t>(f.seed));
      return absl::OkStatus();
    }
    TUNEJIT_ASSIGN_OR_RETURN(std::vector<int64_t> ids, ReadInt64s(f.input));
    TUNEJIT_RETURN_IF_ERROR(CheckInputSize(f, *s, t, ids, "int64"));
    WarnIdsOutOfRange(f.input, ids, IdBound(*s->graph, id));
    s->input_ids = std::move(ids);
    return absl::OkStatus();
  }
  if (f.input.empty()) {
    s->input = RandomInput(count, static_cast<uint64_t>(f.seed));
    return absl::OkStatus();
  }
  TUNEJIT_ASSIGN_OR_RETURN(s->input, ReadFloats(f.input));
  return CheckInputSize(f, *s, t, s->input, "float32");
}

// Copies the model's input (floats or ids) to `ex`.
absl::Status SetModelInput(Executor& ex, const RunState& s) {
  if (s.input_ids) return ex.SetInput(s.input_name, *s.input_ids);
  return ex.SetInput(s.input_name, s.input);
}

// The CPU-side inputs: graph, log, weights. Every failure names the file.
absl::Status LoadInputs(const RunFlags& f, RunState* s) {
  auto start = std::chrono::steady_clock::now();
  TUNEJIT_ASSIGN_OR_RETURN(ModelSource model,
                           LoadModel(f.model, f.batch == kBatchUnset ? 0 : f.batch, 128));
  s->graph.emplace(std::move(model.graph));
  s->input_name = model.input;
  s->output_name = model.output;
  s->batch = s->report.batch = model.batch;
  if (model.weights) s->weights.emplace(*std::move(model.weights));
  s->activation_scales = std::move(model.activation_scales);
  s->report.startup.push_back({"model", Since(start), f.model});
  TUNEJIT_RETURN_IF_ERROR(ModelInput(f, s));
  std::string log = f.log;
  if (log.empty()) {
    std::vector<std::string> searched;
    log = FindDataFile(kSeedLog, &searched);
    if (log.empty()) {
      return absl::NotFoundError(absl::StrCat("the seed log ", kSeedLog, " is not in ",
                                              absl::StrJoin(searched, ", "),
                                              "; pass --log FILE or set TUNEJIT_DATA_DIR"));
    }
  }
  start = std::chrono::steady_clock::now();
  TUNEJIT_RETURN_IF_ERROR(autotvm::LoadLogFile(log, {}, &s->log));
  for (const autotvm::LogLineError& e : s->log.errors) std::cerr << "  " << e.ToString() << "\n";
  s->history.AddAll(s->log);
  s->report.log_path = log;
  s->report.startup.push_back({"log", Since(start), s->log.Summary()});

  start = std::chrono::steady_clock::now();
  if (s->weights) {
    // ONNX: decoded with the model above.
  } else if (f.weights.empty()) {
    s->weights.emplace(RandomWeights(*s->graph, static_cast<uint64_t>(f.seed)));
  } else {
    if (!std::filesystem::exists(f.weights))
      return absl::NotFoundError(absl::StrCat("weights file ", f.weights, " does not exist"));
    TUNEJIT_ASSIGN_OR_RETURN(WeightSet w, LoadWeights(*s->graph, f.weights));
    s->weights.emplace(std::move(w));
  }
  for (const std::string& w : s->weights->warnings()) std::cerr << "  warning: " << w << "\n";
  s->report.weights_label = s->weights->Label();
  s->report.startup.push_back({"weights", Since(start), s->weights->Label()});
  if (!f.save_weights.empty()) {
    TUNEJIT_RETURN_IF_ERROR(ExportWeights(*s->graph, *s->weights, f.save_weights));
    std::cerr << "wrote " << s->weights->Label() << " to " << f.save_weights << "\n";
  }
  return absl::OkStatus();
}

std::string BuildDetail(const ExecutorStats& st) {
  std::string detail = absl::StrFormat(
      "lower %.2f s, compile %.2f s (%d compiled, %d cache hits), calibrate %.2f s, upload %.2f "
      "s (prepare %.2f s, copy %.2f s, overlapping), verify %.2f s; %d fallback layers",
      st.lower_seconds, st.compile_seconds, st.kernels_compiled, st.kernel_cache_hits,
      st.calibrate_seconds, st.upload_seconds, st.weight_prepare_seconds, st.weight_copy_seconds,
      st.verify_seconds, st.fallback_layers);
  if (st.scales_given + st.scales_calibrated > 0) {
    absl::StrAppendFormat(&detail, "; int8 scales: %d %s, %d calibrated", st.scales_given,
                          st.plan_used ? "from the plan" : "from the model", st.scales_calibrated);
  }
  if (st.plan_used) absl::StrAppend(&detail, "; from the build plan");
  return detail;
}

// Where the int8 activation scales came from, e.g. "12 from vgg16-qdq.onnx, 0 calibrated".
std::string ScalesLine(const RunFlags& f, const ExecutorStats& st) {
  std::string line = absl::StrFormat("run: int8 activation scales: %d from %s, %d calibrated",
                                     st.scales_given, f.model, st.scales_calibrated);
  if (!st.scales_unused.empty()) {
    absl::StrAppendFormat(&line, "; %d of the file's unused (their layers run float32: %s)",
                          st.scales_unused.size(), absl::StrJoin(st.scales_unused, ", "));
  }
  return line;
}

// A QDQ model at --precision fp32 runs its float graph: say so, as its numbers are not the int8
// model's.
void NoteQdqAtFp32(const RunFlags& f, const RunState& s) {
  if (s.activation_scales.empty() || f.mode != NumericMode::kFp32) return;
  std::cerr << "run: note: " << f.model << " is a QDQ (fake-quantized) model: fp32 runs its float "
            << "graph with the fake-quantized weights, the activation quantization dropped; "
               "--precision int8 runs it on the int8 kernels with the file's scales\n";
}

// --plan's file, when it exists and reads; a damaged one is reported (the build then runs in full
// and replaces it).
std::optional<BuildPlan> LoadPlan(const RunFlags& f) {
  if (f.plan.empty()) return std::nullopt;
  absl::StatusOr<BuildPlan> plan = LoadBuildPlan(f.plan);
  if (plan.ok()) return *std::move(plan);
  std::cerr << "run: " << plan.status().message() << "; building in full, then writing it\n";
  return std::nullopt;
}

absl::StatusOr<Executor> BuildExecutor(const RunFlags& f, const Device& device,
                                       const KernelCompiler& compiler, RunState* s) {
  ExecutorOptions options;
  options.mode = f.mode;
  // Off by default: a short tuning on this GPU may rank configs worse than a longer one on a
  // sibling GPU (docs/history/2026-12-05-twentieth-session.md: 6.38 against 6.27 ms on the H100).
  if (f.prefer_own_gpu) s->history.PreferDevice(device.properties().name);
  options.history = &s->history;
  TUNEJIT_ASSIGN_OR_RETURN(options.target, autotvm::ParseTarget("cuda"));
  options.verify_records = !f.no_verify;
  options.progress = stderr;
  if (IsInt8(f.mode)) options.activation_scales = s->activation_scales;
  NoteQdqAtFp32(f, *s);
  std::cerr << "run: building " << f.model << " (" << NumericModeName(f.mode) << ", batch "
            << s->batch << ") on " << device.properties().name << "\n";
  auto start = std::chrono::steady_clock::now();
  const std::optional<BuildPlan> plan = LoadPlan(f);
  if (plan.has_value()) options.plan = &*plan;
  TUNEJIT_ASSIGN_OR_RETURN(Executor ex,
                           Executor::Build(device, compiler, *s->graph, *s->weights, options));
  s->report.startup.push_back({"build", Since(start), BuildDetail(ex.stats())});
  if (!f.plan.empty() && !ex.stats().plan_used) {
    absl::Status saved = SaveBuildPlan(f.plan, ex.build_plan());
    std::cerr << "run: " << (saved.ok() ? "wrote build plan " + f.plan : saved.message()) << "\n";
  }
  if (IsInt8(f.mode) && IsOnnxPath(f.model)) {
    std::cerr << ScalesLine(f, ex.stats()) << "\n";
  }
  for (const std::string& w : ex.stats().warnings) std::cerr << "  warning: " << w << "\n";
  return ex;
}

// The cuDNN runs on the same input: fp32's logits (for the accuracy check), and the times of
// --baseline's precision (the fp32 network's, or an fp16 network's, built once the fp32 one is
// freed). Returns nullopt, with the reason in report.cudnn, when there is no baseline.
absl::StatusOr<std::optional<std::vector<float>>> RunBaseline(const RunFlags& f,
                                                              const Device& device,
                                                              const std::vector<float>& input,
                                                              RunState* s) {
  if (f.no_cudnn) {
    s->report.cudnn = "skipped (--no-cudnn)";
    return std::nullopt;
  }
  if (s->input_ids) {
    s->report.cudnn = "unavailable: the input is int64 (token ids); the baseline takes float32";
    std::cerr << "run: cuDNN baseline " << s->report.cudnn << "\n";
    return std::nullopt;
  }
  absl::StatusOr<std::unique_ptr<CudnnNetwork>> net =
      CudnnBaselineAvailable() ? CudnnNetwork::Create(device, *s->graph, *s->weights)
                               : absl::UnimplementedError("this build has no cuDNN");
  if (!net.ok()) {
    s->report.cudnn = absl::StrCat("unavailable: ", net.status().message());
    std::cerr << "run: cuDNN baseline " << s->report.cudnn << "\n";
    return std::nullopt;
  }
  std::cerr << "run: cuDNN fp32 baseline (" << (*net)->Version() << ")\n";
  s->report.cudnn = (*net)->Version();
  s->report.baseline_precision = std::string(BaselinePrecisionName(f.baseline));
  TUNEJIT_RETURN_IF_ERROR((*net)->SetInput(s->input_name, input));
  TUNEJIT_RETURN_IF_ERROR((*net)->Run());
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> logits, (*net)->Output(s->output_name));
  if (f.baseline == BaselinePrecision::kFp16) {
    net->reset();
    std::cerr << "run: cuDNN fp16 baseline (NHWC, tensor cores) for the times\n";
    net = CudnnNetwork::Create(device, *s->graph, *s->weights, BaselinePrecision::kFp16);
    if (!net.ok()) {
      return absl::Status(net.status().code(),
                          absl::StrCat("cuDNN fp16 baseline: ", net.status().message(),
                                       " (--baseline fp32 times the float32 one)"));
    }
    TUNEJIT_RETURN_IF_ERROR((*net)->SetInput(s->input_name, input));
  }
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<BaselineLayer> layers,
                           (*net)->TimeLayers(static_cast<int>(f.repeats)));
  AttachBaseline(layers, &s->report.layers);
  TUNEJIT_ASSIGN_OR_RETURN(s->report.cudnn_e2e_seconds,
                           (*net)->TimeEndToEnd(static_cast<int>(f.repeats)));
  return std::optional<std::vector<float>>(std::move(logits));
}

// The device, opened on a thread of its own while the model and the log load: the driver and
// the CUDA context take about 0.14 s on an H100, as long as the rest of a planned start.
struct DeviceOpening {
  absl::StatusOr<Device> device = absl::UnknownError("not opened");
  double seconds = 0;
};

std::future<DeviceOpening> StartOpeningDevice(int ordinal) {
  return std::async(std::launch::async, [ordinal] {
    const auto start = std::chrono::steady_clock::now();
    DeviceOpening opening;
    opening.device = Device::Open(ordinal);
    opening.seconds = Since(start);
    return opening;
  });
}

// Builds, runs, compares and times; fills s->report. `opening`: the device, which the "device"
// phase waits for (the time it took beyond the loads) before it opens the kernel cache.
absl::Status RunOnGpu(const RunFlags& f, std::future<DeviceOpening>& opening, RunState* s) {
  auto start = std::chrono::steady_clock::now();
  DeviceOpening opened = opening.get();
  TUNEJIT_ASSIGN_OR_RETURN(Device device, std::move(opened.device));
  const DeviceProperties& props = device.properties();
  s->report.peaks =
      ComputePeaks(props.name, props.sm_count, props.clock_khz, props.PeakMemoryBytesPerSecond());
  CacheOptions cache_options;
  cache_options.dir = f.cache_dir;
  TUNEJIT_ASSIGN_OR_RETURN(KernelCache cache, KernelCache::Open(cache_options));
  KernelCompiler compiler(cache.enabled() ? &cache : nullptr);
  s->report.startup.push_back(
      {"device", Since(start),
       absl::StrFormat("CUDA context (%.3f s, opened while the model and log loaded), kernel cache",
                       opened.seconds)});
  TUNEJIT_ASSIGN_OR_RETURN(Executor ex, BuildExecutor(f, device, compiler, s));
  s->report.stats = ex.stats();

  const std::vector<float>& input = s->input;
  start = std::chrono::steady_clock::now();
  TUNEJIT_RETURN_IF_ERROR(SetModelInput(ex, *s));
  TUNEJIT_RETURN_IF_ERROR(ex.Run());
  s->report.startup.push_back({"first run", Since(start), "input upload + run + CUDA graph"});
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<float> logits, ex.Output(s->output_name));
  if (!f.output.empty()) {
    TUNEJIT_RETURN_IF_ERROR(WriteFloats(f.output, logits));
    std::cerr << "run: wrote " << logits.size() << " floats of '" << s->output_name << "' to "
              << f.output << "\n";
  }

  std::cerr << "run: timing " << ex.layers().size() << " layers, median of " << f.repeats << "\n";
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<double> per_layer,
                           ex.TimeLayers(static_cast<int>(f.repeats)));
  s->report.layers = LayersFromExecutor(ex.layers(), per_layer);
  TUNEJIT_ASSIGN_OR_RETURN(s->report.e2e_seconds, ex.TimeEndToEnd(static_cast<int>(f.repeats)));

  TUNEJIT_ASSIGN_OR_RETURN(std::optional<std::vector<float>> ref, RunBaseline(f, device, input, s));
  if (!ref) {
    s->report.accuracy.skipped = "no cuDNN baseline: " + s->report.cudnn;
    return absl::OkStatus();
  }
  TUNEJIT_ASSIGN_OR_RETURN(
      s->report.accuracy,
      CompareLogits(logits, *ref, static_cast<int>(s->batch), BoundsFor(f.mode)));
  return absl::OkStatus();
}

absl::Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteOutputs(const RunFlags& f, const RunReport& report) {
  std::cout << FormatLayerTable(report) << "\n" << FormatSummary(report) << std::flush;
  if (!f.json.empty()) {
    TUNEJIT_RETURN_IF_ERROR(WriteTextFile(
        f.json,
        // replace: a non-UTF-8 path or device name must not make dump() throw.
        ReportJson(report).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
            "\n"));
    std::cerr << "run: wrote " << f.json << "\n";
  }
  if (!f.plot.empty()) {
    TUNEJIT_RETURN_IF_ERROR(WriteTextFile(f.plot, RenderBarChart(ReportChart(report))));
    std::cerr << "run: wrote " << f.plot << "\n";
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& status) {
  std::cerr << "tunejit run: " << status.message() << "\n";
  return kExitFailure;
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args) {
  RunFlags f;
  if (int code = ParseRunFlags(args, &f); code >= 0) return code;
  RunState s;
  s.report.version = TunejitVersion();
  s.report.model = f.model;
  s.report.precision = std::string(PrecisionName(f.mode));
  s.report.numeric_mode = std::string(NumericModeName(f.mode));
  s.report.repeats = f.repeats;
  std::future<DeviceOpening> opening = StartOpeningDevice(static_cast<int>(f.device));
  if (absl::Status st = LoadInputs(f, &s); !st.ok()) return Fail(st);
  if (absl::Status gpu = GpuAvailable(); !gpu.ok()) {
    std::cerr << "tunejit run: no usable GPU (" << gpu.message()
              << ")\n  'tunejit run' needs an NVIDIA GPU; without one, 'tunejit warm --log FILE "
                 "--arch sm_90' still compiles every kernel into the cache for a later run\n";
    return kExitFailure;
  }
  if (absl::Status st = RunOnGpu(f, opening, &s); !st.ok()) return Fail(st);
  if (absl::Status st = WriteOutputs(f, s.report); !st.ok()) return Fail(st);
  if (s.report.accuracy.checked && !s.report.accuracy.pass) {
    std::cerr << "tunejit run: accuracy check FAILED against cuDNN fp32 (see above)\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace tunejit::cli
