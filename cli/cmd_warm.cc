// `tunejit warm`: compile every kernel a tuning log needs into the kernel cache, for a named GPU
// architecture, with no GPU present. Kernels are deduplicated, then compiled on all cores. With
// --model (vgg16 or FILE.onnx), the kernels are instead those `tunejit run` would choose for each
// conv / dense layer of that model (the log's best record, else the template's fallback), with the
// layer's fused epilogue, so a later run finds them in the cache. With --plan FILE (on the GPU
// machine), it makes a saved build plan as well, through `tunejit run`'s build.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "autotvm/target.h"
#include "cache/kernel_cache.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_source.h"
#include "common/status_macros.h"
#include "executor/kernel_choice.h"
#include "executor/step_kernels.h"
#include "executor/step_program.h"
#include "jit/arch.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"

namespace tunejit::cli {
namespace {

struct WarmFlags {
  std::string arch = "sm_90";
  std::string log;
  std::string model;  // empty: the log's records; else the model's layers
  int64_t batch = 0;
  std::string precision = "int8";
  std::string cache_dir;
  bool no_cache = false;
  bool strict = false;
  bool tensor_cores = false;  // with --model --precision int8: as `run --tensor-cores`
  int64_t jobs = 0;
  std::string plan;     // a saved build plan to make, on this machine's GPU
  std::string weights;  // with --plan: the weights the plan is for (vgg16's safetensors)
  bool steps = false;   // with --model: list every step of the lowered program
};

// `warm --plan FILE`: the build plan holds what only the build on the target GPU decides (each
// record verified against the reference kernels, int8 scales calibrated), so it is made by
// `tunejit run`'s build itself, with one timed run and no cuDNN baseline; the kernels land in
// the cache on the way. Without a GPU, run says so and exits 1.
int MakeBuildPlan(const WarmFlags& f) {
  std::vector<std::string> args = {"--plan",    f.plan,    "--precision",
                                   f.precision, "--model", f.model.empty() ? "vgg16" : f.model,
                                   "--repeats", "1",       "--no-cudnn"};
  auto add = [&](const char* flag, const std::string& value) {
    if (!value.empty()) args.insert(args.end(), {flag, value});
  };
  add("--log", f.log);
  add("--weights", f.weights);
  add("--cache-dir", f.cache_dir);
  if (f.batch > 0) add("--batch", std::to_string(f.batch));
  if (f.tensor_cores) args.push_back("--tensor-cores");
  std::cout << "warm: making the build plan " << f.plan << " with `tunejit run "
            << absl::StrJoin(args, " ") << "`\n";
  return RunRunCommand(args);
}

// The distinct kernels of the log's error-free records, and why others were left out.
struct WarmPlan {
  std::vector<KernelSpec> kernels;
  int records_used = 0;
  std::map<std::string, int> skipped;  // reason -> count
  std::vector<std::string> rejected;   // "file:line task: reason"
};

void AddKernels(const OpPlan& plan, WarmPlan* out, std::map<std::string, bool>* seen) {
  for (const PlannedKernel& k : plan.kernels) {
    std::string id = k.spec.source_file + "|" + k.spec.name_expression;
    for (const std::string& d : k.spec.defines) id += "|" + d;
    if (seen->emplace(id, true).second) out->kernels.push_back(k.spec);
  }
}

WarmPlan PlanKernels(const autotvm::LogContents& log, const DeviceLimits& limits) {
  WarmPlan plan;
  std::map<std::string, bool> seen;  // name expression + source + defines
  for (const autotvm::LoadedRecord& loaded : log.records) {
    const autotvm::Record& record = loaded.record;
    if (!record.ok()) {
      ++plan.skipped["error record (error_no != 0)"];
      continue;
    }
    const OpTemplate* op = FindOpTemplate(record.workload.task_name);
    if (op == nullptr) {
      ++plan.skipped["task " + record.workload.task_name + " has no template"];
      continue;
    }
    absl::StatusOr<OpPlan> op_plan =
        op->Specialize(record.workload, record.config, limits, Epilogue{});
    if (!op_plan.ok()) {
      plan.rejected.push_back(absl::StrFormat("%s:%d %s: %s", loaded.file, loaded.line,
                                              record.workload.task_name,
                                              std::string(op_plan.status().message())));
      continue;
    }
    ++plan.records_used;
    AddKernels(*op_plan, &plan, &seen);
  }
  return plan;
}

absl::StatusOr<OpPlan> UntunedPlan(const Graph& graph, const StepProgram& program,
                                   const Step& step) {
  OpPlan plan;
  TUNEJIT_ASSIGN_OR_RETURN(plan.kernels,
                           UntunedStepKernels(graph, program, step, /*slot_scales=*/{}));
  return plan;
}

// Every step of the program, in launch order: what `tunejit run` launches, without a GPU.
void PrintSteps(const StepProgram& program) {
  std::cout << absl::StrFormat("warm: %d steps\n", program.steps.size());
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& s = program.steps[i];
    const StepTensor& out = program.tensors[s.output];
    std::cout << absl::StrFormat("  %3d %-14s %-44s -> %s %s [%s]%s%s\n", i, StepKindName(s.kind),
                                 s.name, DTypeName(out.dtype), out.nhwc ? "NHWC" : "",
                                 absl::StrJoin(out.shape, "x"), s.fused.empty() ? "" : " fused ",
                                 s.fused);
  }
}

// The model's conv / dense steps as the executor lowers them (fused epilogues included), each
// with the kernel the executor would try first, one line per layer on stdout; then the kernels of
// every other step.
absl::StatusOr<WarmPlan> PlanModelKernels(const WarmFlags& f, const autotvm::LogContents& log,
                                          const DeviceLimits& limits) {
  TUNEJIT_ASSIGN_OR_RETURN(ModelSource model, LoadModel(f.model, f.batch, 128));
  TUNEJIT_ASSIGN_OR_RETURN(NumericMode mode, ResolveNumericMode(f.precision, f.tensor_cores));
  TUNEJIT_ASSIGN_OR_RETURN(
      StepProgram program,
      LowerToSteps(model.graph, mode, model.weights ? &*model.weights : nullptr));
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Target target, autotvm::ParseTarget("cuda"));
  autotvm::HistoryBest history;
  history.AddAll(log);
  std::cout << absl::StrFormat("warm: %s, batch %d, %s: %d tuned layers\n", f.model, model.batch,
                               NumericModeName(mode), program.tasks.size());
  if (f.steps) PrintSteps(program);
  WarmPlan plan;
  std::map<std::string, bool> seen;
  int untuned = 0;
  for (const Step& step : program.steps) {
    if (step.kind == StepKind::kAttention) {  // the log's record, as the executor takes it
      OpPlan attention;
      TUNEJIT_ASSIGN_OR_RETURN(PlannedKernel k,
                               AttentionStepKernel(step, &history, target, limits, nullptr));
      attention.kernels.push_back(std::move(k));
      AddKernels(attention, &plan, &seen);
      ++untuned;
      continue;
    }
    if (step.task < 0) {
      TUNEJIT_ASSIGN_OR_RETURN(OpPlan untuned_plan, UntunedPlan(model.graph, program, step));
      AddKernels(untuned_plan, &plan, &seen);
      ++untuned;
      continue;
    }
    TUNEJIT_ASSIGN_OR_RETURN(KernelChoice choice, ChooseKernel(program.tasks[step.task], &history,
                                                               target, limits, step.epilogue));
    const KernelCandidate& best = choice.candidates.front();
    plan.records_used += best.fallback ? 0 : 1;
    if (best.fallback) ++plan.skipped["layers with no usable record (fallback config)"];
    std::cout << absl::StrFormat("  %-24s %-30s %s\n", step.name, best.task_name,
                                 best.fallback ? "fallback" : best.record_label);
    AddKernels(best.plan, &plan, &seen);
  }
  std::cout << absl::StrFormat("  and %d untuned steps (pools, converts, tensor ops)\n", untuned);
  return plan;
}

struct CompileTally {
  std::atomic<int> done{0}, hits{0}, compiled{0}, failed{0};
  std::mutex mu;
  std::vector<std::string> failures;
  double nvrtc_seconds = 0;
};

void CompileAll(const std::vector<KernelSpec>& kernels, const KernelCompiler& compiler,
                const GpuArch& arch, int jobs, CompileTally* tally) {
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < kernels.size(); i = next++) {
      absl::StatusOr<CompiledKernel> result = compiler.Compile(kernels[i], arch);
      std::lock_guard<std::mutex> lock(tally->mu);
      if (!result.ok()) {
        ++tally->failed;
        tally->failures.push_back(kernels[i].name_expression + ": " +
                                  std::string(result.status().message()));
      } else if (result->cache_hit) {
        ++tally->hits;
      } else {
        ++tally->compiled;
        tally->nvrtc_seconds += result->compile_seconds;
      }
      int done = ++tally->done;
      // A live line on a terminal; in a log file, a line per tenth of the work.
      bool milestone = done == static_cast<int>(kernels.size()) ||
                       done % std::max<size_t>(1, kernels.size() / 10) == 0;
      if (!isatty(STDERR_FILENO) && !milestone) continue;
      std::cerr << absl::StrFormat("\r  [%d/%d] compiled %d, cache hits %d, failed %d", done,
                                   kernels.size(), tally->compiled.load(), tally->hits.load(),
                                   tally->failed.load())
                << (isatty(STDERR_FILENO) ? "" : "\n") << std::flush;
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < jobs; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (!kernels.empty() && isatty(STDERR_FILENO)) std::cerr << "\n";
}

void PrintSummary(const WarmPlan& plan, const CompileTally& tally, double seconds,
                  const KernelCache& cache) {
  std::cout << absl::StrFormat(
      "warm: %d kernels for %d records in %.2f s: compiled %d (NVRTC %.2f s), cache hits %d, "
      "failed %d, rejected records %d\n",
      plan.kernels.size(), plan.records_used, seconds, tally.compiled.load(), tally.nvrtc_seconds,
      tally.hits.load(), tally.failed.load(), plan.rejected.size());
  std::cout << "  cache: " << (cache.enabled() ? cache.dir() : std::string("disabled")) << "\n";
  for (const auto& [reason, count] : plan.skipped) {
    std::cout << absl::StrFormat("  skipped %d: %s\n", count, reason);
  }
  for (const std::string& r : plan.rejected) std::cout << "  rejected " << r << "\n";
  for (const std::string& f : tally.failures) std::cout << "  FAILED " << f << "\n";
}

}  // namespace

int RunWarmCommand(const std::vector<std::string>& args) {
  WarmFlags f;
  FlagParser parser(
      "tunejit warm",
      "Compile into the kernel cache every kernel a tuning log needs, for a named GPU "
      "architecture. Needs no GPU, except --plan.");
  parser.String("arch", &f.arch, "SM", "target architecture, e.g. sm_90, sm_90a (default sm_90)");
  parser.String("log", &f.log, "FILE", "AutoTVM tuning log (required without --model)");
  parser.String("model", &f.model, "NAME|FILE",
                std::string(kModelHelp) + ": the kernels `tunejit run` would use for it");
  parser.Int("batch", &f.batch, "N", "with --model: batch (default: vgg16 128, ONNX the file's)");
  parser.String("precision", &f.precision, "P", "with --model: fp32, int8 or fp16 (default int8)");
  parser.Bool("tensor-cores", &f.tensor_cores,
              "with --model --precision int8: the kernels of `run --tensor-cores`");
  parser.String("cache-dir", &f.cache_dir, "DIR", "kernel cache directory");
  parser.Bool("no-cache", &f.no_cache, "compile without reading or writing the cache");
  parser.Bool("strict", &f.strict, "fail on the first bad log line");
  parser.Int("jobs", &f.jobs, "N", "parallel compiles (default: all cores)");
  parser.String("plan", &f.plan, "FILE",
                "make a saved build plan for --model on this machine's GPU (a full build, as "
                "`tunejit run --plan FILE` does; needs the GPU the plan is for)");
  parser.String("weights", &f.weights, "FILE", "with --plan: the weights file (vgg16)");
  parser.Bool("steps", &f.steps,
              "with --model: list every step `tunejit run` would launch (kind, output, fusions)");
  std::vector<std::string> positional;
  if (int code = parser.Parse(args, &positional); code >= 0) return code;
  if (!f.plan.empty() && positional.empty()) {
    if (f.no_cache) {
      std::cerr << "tunejit warm: --plan keeps its kernels in the cache; drop --no-cache\n"
                << "(run 'tunejit warm --help' for usage)\n";
      return kExitUsage;
    }
    return MakeBuildPlan(f);
  }
  if (!f.weights.empty()) {
    std::cerr << "tunejit warm: --weights applies to --plan only\n"
              << "(run 'tunejit warm --help' for usage)\n";
    return kExitUsage;
  }
  if ((f.log.empty() && f.model.empty()) || !positional.empty()) {
    std::cerr << "tunejit warm: "
              << (positional.empty() ? "--log FILE or --model NAME|FILE is required"
                                     : "unexpected argument '" + positional[0] + "'")
              << "\n(run 'tunejit warm --help' for usage)\n";
    return kExitUsage;
  }
  if (f.steps && f.model.empty()) {
    std::cerr << "tunejit warm: --steps needs --model\n"
              << "(run 'tunejit warm --help' for usage)\n";
    return kExitUsage;
  }
  if (f.tensor_cores && (f.model.empty() || f.precision != "int8")) {
    std::cerr << "tunejit warm: --tensor-cores needs --model and --precision int8\n"
              << "(run 'tunejit warm --help' for usage)\n";
    return kExitUsage;
  }
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch(f.arch);
  if (!arch.ok()) {
    std::cerr << "tunejit warm: " << arch.status().message() << "\n";
    return kExitUsage;
  }
  autotvm::LogContents log;
  if (!f.log.empty()) {
    if (absl::Status s = autotvm::LoadLogFile(f.log, {.strict = f.strict}, &log); !s.ok()) {
      std::cerr << "tunejit warm: " << s.message() << "\n";
      return kExitFailure;
    }
    for (const autotvm::LogLineError& e : log.errors) std::cerr << "  " << e.ToString() << "\n";
    std::cout << "warm: " << log.Summary() << "\n";
  }

  absl::StatusOr<KernelCache> cache =
      KernelCache::Open({.dir = f.cache_dir, .disabled = f.no_cache});
  if (!cache.ok()) {
    std::cerr << "tunejit warm: " << cache.status().message() << "\n";
    return kExitFailure;
  }
  auto start = std::chrono::steady_clock::now();
  WarmPlan plan;
  if (f.model.empty()) {
    plan = PlanKernels(log, DeviceLimits::ForArch(*arch));
  } else {
    absl::StatusOr<WarmPlan> model_plan = PlanModelKernels(f, log, DeviceLimits::ForArch(*arch));
    if (!model_plan.ok()) {
      std::cerr << "tunejit warm: " << model_plan.status().message() << "\n";
      return kExitFailure;
    }
    plan = *std::move(model_plan);
  }
  int jobs = f.jobs > 0 ? static_cast<int>(f.jobs)
                        : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  std::cout << absl::StrFormat("warm: %d distinct kernels for %s on %d threads\n",
                               plan.kernels.size(), arch->ToString(), jobs);
  CompileTally tally;
  KernelCompiler compiler(cache->enabled() ? &*cache : nullptr);
  CompileAll(plan.kernels, compiler, *arch, jobs, &tally);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  PrintSummary(plan, tally, seconds, *cache);
  return tally.failed > 0 ? kExitFailure : kExitOk;
}

}  // namespace tunejit::cli
