// `tunejit tune`: tune every task of a model (each conv/dense node, every task name that can
// implement it) and append AutoTVM 0.2 records to a log. Candidates run in worker processes
// (`tunejit tune-worker`, hidden), so a faulting or endless candidate is an error record, not the
// end of the run; this process never touches CUDA, it only runs NVRTC into the kernel cache.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cache/kernel_cache.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/model_source.h"
#include "cli/svg_chart.h"
#include "common/status_macros.h"
#include "executor/node_tasks.h"
#include "executor/step_program.h"
#include "ops/attention.h"
#include "tuner/budget.h"
#include "tuner/tune_model.h"
#include "tuner/tune_plan.h"
#include "tuner/worker_main.h"

namespace tunejit::cli {
namespace {

constexpr char kSummary[] =
    "Tune every conv2d/dense task of a model on all GPUs and append AutoTVM (0.2) records to a "
    "log.\n\n"
    "Candidates are measured in worker processes: one that faults is recorded as error 4 "
    "(RUNTIME_DEVICE), one that runs past --timeout is killed and recorded as error 7 "
    "(RUN_TIMEOUT); the worker is restarted and tuning goes on. The budget (--budget time and/or "
    "--trials count) is split over the tasks by FLOPs. Records are appended (whole lines, flushed "
    "one by one); after a crash or kill, run the same command with --resume: measured configs are "
    "skipped and count against the budget.\n\n"
    "Multi-GPU: one worker per visible GPU (CUDA_VISIBLE_DEVICES applies) x --workers-per-gpu, "
    "sharing one task queue; records carry {\"tunejit\": {\"gpu\": N, \"device\": ...}}.\n"
    "Job arrays: --shard i/n tunes a deterministic, FLOP-balanced subset of the tasks (0 <= i < "
    "n), with the given budget; give each shard its own --log and join them with 'tunejit log "
    "merge'.\n"
    "Also writes a tuning curve (best time vs trials per task) to LOG.svg.";

struct TuneFlags {
  std::string model = "vgg16", precision = "fp32", budget, log, tasks, search = "xgb", shard;
  std::string target = "cuda -model=unknown", cache_dir, timeout = "20", sustained;
  int64_t batch = 0, trials = 0, workers_per_gpu = 1, seed = 1, trial_batch = 0, jobs = 0;
  int64_t gpus = 0, fault_trial = -1, hang_trial = -1;
  bool resume = false, list = false, no_cache = false, tensor_cores = false;
};

struct Selected {
  std::vector<ModelTask> tasks;
  std::vector<double> weights;  // FLOPs x uses
};

int Usage(const std::string& message) {
  std::cerr << "tunejit tune: " << message << "\n(run 'tunejit tune --help' for usage)\n";
  return kExitUsage;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t out = 0;
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

// The fused attention steps' workloads (attention_mma.cuda: the chains the executor fuses at fp16
// with the model's weights, executor/attention_fusion.h), which no node task has.
absl::Status AddAttentionWorkloads(const ModelSource& model, NumericMode mode,
                                   std::vector<autotvm::Workload>& workloads,
                                   std::map<std::string, std::vector<std::string>>& users) {
  if (mode != NumericMode::kFp16TensorCores || !model.weights) return absl::OkStatus();
  TUNEJIT_ASSIGN_OR_RETURN(StepProgram program, LowerToSteps(model.graph, mode, &*model.weights));
  for (const Step& step : program.steps) {
    if (step.kind != StepKind::kAttention) continue;
    autotvm::Workload w = MakeAttentionWorkload(step.attention);
    std::vector<std::string>& names = users[w.Key()];
    if (names.empty()) workloads.push_back(std::move(w));
    names.push_back(step.name);
  }
  return absl::OkStatus();
}

// Every distinct workload of the model, labelled with the nodes that use it.
absl::StatusOr<Selected> AllTasks(const TuneFlags& f) {
  TUNEJIT_ASSIGN_OR_RETURN(NumericMode mode, ResolveNumericMode(f.precision, f.tensor_cores));
  TUNEJIT_ASSIGN_OR_RETURN(ModelSource model, LoadModel(f.model, f.batch, 1));
  TUNEJIT_ASSIGN_OR_RETURN(std::vector<NodeTask> nodes, ExtractTasks(model.graph, mode));
  TUNEJIT_ASSIGN_OR_RETURN(autotvm::Target target, autotvm::ParseTarget(f.target));
  std::map<std::string, std::vector<std::string>> users;  // workload key -> node names
  for (const NodeTask& n : nodes) {
    for (const autotvm::Implementation& impl : n.implementations) {
      users[impl.workload.Key()].push_back(n.name);
    }
  }
  Selected all;
  std::vector<autotvm::Workload> workloads = DistinctWorkloads(nodes);
  TUNEJIT_RETURN_IF_ERROR(AddAttentionWorkloads(model, mode, workloads, users));
  for (const autotvm::Workload& w : workloads) {
    TUNEJIT_ASSIGN_OR_RETURN(Task task, MakeTask(w, target));
    const std::vector<std::string>& names = users[w.Key()];
    all.weights.push_back(task.flops * static_cast<double>(names.size()));
    all.tasks.push_back({.task = std::move(task), .label = absl::StrJoin(names, ",")});
  }
  return all;
}

// --tasks: comma-separated task names ("dense_small_batch.cuda"), node names ("features.0") or
// 1-based numbers from --list.
absl::StatusOr<Selected> FilterTasks(Selected all, const std::string& list) {
  if (list.empty()) return all;
  Selected out;
  std::vector<bool> keep(all.tasks.size(), false);
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    bool matched = false;
    int64_t number = 0;
    const bool numeric = absl::SimpleAtoi(item, &number);
    for (size_t i = 0; i < all.tasks.size(); ++i) {
      const ModelTask& t = all.tasks[i];
      std::vector<std::string> nodes = absl::StrSplit(t.label, ',');
      if ((numeric && number == static_cast<int64_t>(i) + 1) || t.task.workload.task_name == item ||
          std::find(nodes.begin(), nodes.end(), item) != nodes.end()) {
        keep[i] = matched = true;
      }
    }
    if (!matched) {
      return absl::InvalidArgumentError(absl::StrCat("--tasks: nothing matches '", item, "'"));
    }
  }
  for (size_t i = 0; i < all.tasks.size(); ++i) {
    if (!keep[i]) continue;
    out.tasks.push_back(std::move(all.tasks[i]));
    out.weights.push_back(all.weights[i]);
  }
  return out;
}

Selected ApplyShard(Selected all, const Shard& shard) {
  std::vector<std::string> keys;
  for (const ModelTask& t : all.tasks) keys.push_back(t.task.workload.Key());
  Selected out;
  for (size_t i : ShardTasks(keys, all.weights, shard)) {
    out.tasks.push_back(std::move(all.tasks[i]));
    out.weights.push_back(all.weights[i]);
  }
  return out;
}

// A trial budget is split over the tasks up front; a time budget is the whole run's
// (TuneModelOptions::total_seconds, spent in passes).
void SplitTrials(Selected& s, int64_t trials) {
  const size_t n = s.tasks.size();
  if (n == 0 || trials <= 0) return;
  std::vector<int64_t> share =
      SplitBudget(s.weights, trials, std::min<int64_t>(16, trials / static_cast<int64_t>(n)));
  for (size_t i = 0; i < n; ++i) s.tasks[i].trials = share[i];
}

void PrintTaskList(const Selected& s) {
  for (size_t i = 0; i < s.tasks.size(); ++i) {
    const ModelTask& t = s.tasks[i];
    std::cout << absl::StrFormat("%3d  %-30s %-28s %8.3f GFLOP  space %d\n", i + 1,
                                 t.task.workload.task_name, t.label, t.task.flops / 1e9,
                                 t.task.space.size());
  }
}

void PrintSummary(const Selected& s, const TuneModelReport& report) {
  std::cout << absl::StrFormat("\n%3s  %-30s %-24s %13s %6s %10s %10s %8s\n", "#", "task", "nodes",
                               "trials", "errors", "best ms", "GFLOP/s", "time");
  for (size_t i = 0; i < s.tasks.size(); ++i) {
    const ModelTask& t = s.tasks[i];
    const TaskOutcome& o = report.tasks[i];
    const std::string trials = t.trials > 0 ? absl::StrFormat("%d/%d", o.trials_total, t.trials)
                                            : absl::StrFormat("%d", o.trials_total);
    const std::string best =
        o.best_index < 0 ? std::string("-") : absl::StrFormat("%.4f", o.best_cost * 1e3);
    std::cout << absl::StrFormat(
        "%3d  %-30s %-24s %13s %6d %10s %10.1f %7.0fs%s\n", i + 1, t.task.workload.task_name,
        t.label.substr(0, 24), trials, o.result.errors, best, o.best_gflops, o.seconds,
        o.status.ok() ? "" : "  (" + std::string(o.status.message()) + ")");
  }
  std::cout << absl::StrFormat("%d worker slots on %d GPU(s) (%s), %d worker restarts\n",
                               report.slots, report.gpus, report.device, report.restarts);
}

void WriteCurve(const std::string& path, const Selected& s, const TuneModelReport& report) {
  LineChart chart{.title = "tunejit tune: best time vs trials",
                  .x_label = "trials",
                  .y_label = "best time (ms)",
                  .series = {},
                  .log_y = true};
  for (size_t i = 0; i < s.tasks.size(); ++i) {
    if (report.tasks[i].curve.empty()) continue;
    chart.series.push_back({.name = absl::StrCat(i + 1, " ", s.tasks[i].task.workload.task_name),
                            .points = report.tasks[i].curve});
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << RenderLineChart(chart);
  if (out) std::cerr << "tuning curve: " << path << "\n";
}

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
}

void RegisterFlags(FlagParser& p, TuneFlags& f) {
  p.String("model", &f.model, "NAME|FILE", std::string(kModelHelp) + " (default vgg16)");
  p.Int("batch", &f.batch, "N", "batch size (default: vgg16 1, ONNX the file's)");
  p.String("precision", &f.precision, "P",
           "fp32, int8 or fp16 (Hopper tensor cores) (default fp32)");
  p.String("budget", &f.budget, "TIME", "time budget, e.g. 90s, 5m, 1h30m");
  p.Int("trials", &f.trials, "N",
        "trial budget over all tasks (with --budget: whichever ends first)");
  p.String("log", &f.log, "FILE", "tuning log to append to (required)");
  p.Bool("resume", &f.resume, "continue LOG: skip measured configs, count them against the budget");
  p.Bool("tensor-cores", &f.tensor_cores,
         "int8: tune the convs on the Hopper tensor-core template and the dense layers on float16 "
         "wgmma (as `run --tensor-cores` runs them) instead of TVM's dp4a templates");
  p.String("tasks", &f.tasks, "LIST", "comma list of task names, node names or --list numbers");
  p.String("search", &f.search, "S", "xgb (default), random or grid");
  p.Int("workers-per-gpu", &f.workers_per_gpu, "K", "worker processes per GPU (default 1)");
  p.Int("gpus", &f.gpus, "N", "use at most N GPUs (default: all visible)");
  p.String("shard", &f.shard, "i/n", "tune only shard i of n (0 <= i < n) of the tasks");
  p.Int("seed", &f.seed, "S", "search seed (default 1)");
  p.String("timeout", &f.timeout, "SECONDS",
           "per-candidate deadline before the worker is killed (20)");
  p.String("sustained", &f.sustained, "TIME",
           "time each candidate after running it back to back this long (e.g. 0.1s), as a "
           "network runs its layers, at the GPU's sustained (power-capped) clock; default: "
           "isolated runs with the L2 flushed before each");
  p.Int("trial-batch", &f.trial_batch, "N",
        "candidates proposed (and compiled in parallel) per batch (default: cores, 8 to 32)");
  p.Int("jobs", &f.jobs, "N", "NVRTC compile threads (default: all cores)");
  p.String("target", &f.target, "T", "target string of the records (cuda -model=unknown)");
  p.String("cache-dir", &f.cache_dir, "DIR", "kernel cache directory");
  p.Bool("no-cache", &f.no_cache, "compile without the kernel cache");
  p.Bool("list", &f.list, "print the tasks (after --tasks/--shard) and exit");
  p.Int("test-fault-trial", &f.fault_trial, "K",
        "testing: the K-th candidate (0-based) runs a faulting kernel ($TUNEJIT_TEST_FAULT_TRIAL)");
  p.Int("test-hang-trial", &f.hang_trial, "K",
        "testing: the K-th candidate runs an endless kernel ($TUNEJIT_TEST_HANG_TRIAL)");
  p.HideFromHelp("test-fault-trial");
  p.HideFromHelp("test-hang-trial");
}

// The tasks this invocation tunes, with budgets; exit code >= 0 on error.
int SelectTasks(const TuneFlags& f, Selected* out) {
  absl::StatusOr<Selected> all = AllTasks(f);
  if (!all.ok()) return Usage(std::string(all.status().message()));
  absl::StatusOr<Selected> chosen = FilterTasks(*std::move(all), f.tasks);
  if (!chosen.ok()) return Usage(std::string(chosen.status().message()));
  if (!f.shard.empty()) {
    absl::StatusOr<Shard> shard = ParseShard(f.shard);
    if (!shard.ok()) return Usage(std::string(shard.status().message()));
    *chosen = ApplyShard(*std::move(chosen), *shard);
  }
  SplitTrials(*chosen, f.trials);
  // A trial budget smaller than the task count leaves some tasks with none: they are not tuned.
  for (size_t i = 0; i < chosen->tasks.size(); ++i) {
    if (f.trials > 0 && chosen->tasks[i].trials == 0) continue;
    out->tasks.push_back(std::move(chosen->tasks[i]));
    out->weights.push_back(chosen->weights[i]);
  }
  if (out->tasks.size() < chosen->tasks.size()) {
    std::cerr << absl::StrFormat("tune: %d tasks get no trials from --trials %d; not tuned\n",
                                 chosen->tasks.size() - out->tasks.size(), f.trials);
  }
  return -1;
}

absl::StatusOr<ResumeLog> OpenLog(const TuneFlags& f) {
  if (!f.resume) {
    std::ifstream existing(f.log, std::ios::binary | std::ios::ate);
    if (existing && existing.tellg() > 0) {
      return absl::AlreadyExistsError(f.log +
                                      " already holds records: pass --resume to continue "
                                      "it, or choose another --log");
    }
    return ResumeLog();
  }
  TUNEJIT_ASSIGN_OR_RETURN(ResumeLog log, LoadResumeLog(f.log, /*repair=*/true));
  for (const std::string& m : log.messages) std::cerr << "resume: " << m << "\n";
  std::cerr << absl::StrFormat("resume: %d records from %s (%d duplicates, %d bad lines)\n",
                               log.records, f.log, log.duplicates, log.bad_lines);
  return log;
}

// Checks the flags and parses the durations; an exit code >= 0 on bad usage.
int ValidateFlags(const TuneFlags& f, double* seconds, double* timeout) {
  if (!f.budget.empty()) {
    absl::StatusOr<double> b = ParseDuration(f.budget);
    if (!b.ok()) return Usage(std::string(b.status().message()));
    *seconds = *b;
  }
  absl::StatusOr<double> t = ParseDuration(f.timeout);
  if (!t.ok()) return Usage("--timeout: " + std::string(t.status().message()));
  *timeout = *t;
  if (!f.sustained.empty()) {
    absl::StatusOr<double> s = ParseDuration(f.sustained);
    if (!s.ok()) return Usage("--sustained: " + std::string(s.status().message()));
  }
  if (f.batch < 0 || f.workers_per_gpu < 1 || f.trial_batch < 0 || f.trials < 0) {
    return Usage("--batch, --workers-per-gpu and --trial-batch must be positive");
  }
  if (f.search != "xgb" && f.search != "random" && f.search != "grid") {
    return Usage("--search must be xgb, random or grid");
  }
  return -1;
}

TuneModelOptions MakeOptions(const TuneFlags& f, double timeout, const KernelCache& cache) {
  TuneModelOptions o;
  o.log_path = f.log;
  o.search = f.search;
  o.seed = static_cast<uint64_t>(f.seed);
  // A batch is compiled in parallel while the previous one is measured: one candidate per core
  // keeps NVRTC busy (AutoTVM's n_parallel), bounded so the cost model is refitted often enough.
  o.batch_size = f.trial_batch > 0
                     ? static_cast<int>(f.trial_batch)
                     : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 8, 32);
  // $TUNEJIT_TUNE_WORKER replaces the worker executable: tests run the command against a fake.
  const char* worker_exe = std::getenv("TUNEJIT_TUNE_WORKER");
  o.worker.argv = {worker_exe != nullptr ? worker_exe : SelfExe(), "tune-worker"};
  if (cache.enabled()) {
    o.worker.argv.insert(o.worker.argv.end(), {"--cache-dir", cache.dir()});
  } else {
    o.worker.argv.push_back("--no-cache");
  }
  if (!f.sustained.empty()) o.worker.argv.insert(o.worker.argv.end(), {"--sustained", f.sustained});
  o.worker.measure_timeout_seconds = timeout;
  o.workers_per_gpu = static_cast<int>(f.workers_per_gpu);
  o.max_gpus = static_cast<int>(f.gpus);
  o.compile_threads = static_cast<int>(f.jobs);
  o.progress = stderr;
  return o;
}

// Tunes `selected` and reports; the exit code.
int Tune(const TuneFlags& f, double seconds, double timeout, const Selected& selected,
         const ResumeLog& resume) {
  absl::StatusOr<KernelCache> cache =
      KernelCache::Open({.dir = f.cache_dir, .disabled = f.no_cache});
  if (!cache.ok()) {
    std::cerr << "tunejit tune: " << cache.status().message() << "\n";
    return kExitFailure;
  }
  KernelCompiler compiler(cache->enabled() ? &*cache : nullptr);
  TestFaults faults;
  faults.fault_trial = f.fault_trial >= 0 ? f.fault_trial : EnvInt("TUNEJIT_TEST_FAULT_TRIAL", -1);
  faults.hang_trial = f.hang_trial >= 0 ? f.hang_trial : EnvInt("TUNEJIT_TEST_HANG_TRIAL", -1);
  TuneModelOptions o = MakeOptions(f, timeout, *cache);
  o.compiler = &compiler;
  o.faults = &faults;
  o.resume = &resume;
  o.total_seconds = seconds;
  std::cerr << absl::StrFormat(
      "tune: %d tasks, budget %s%s%s, search %s, log %s\n", selected.tasks.size(),
      f.budget.empty() ? "" : f.budget, !f.budget.empty() && f.trials > 0 ? " / " : "",
      f.trials > 0 ? absl::StrCat(f.trials, " trials") : "", f.search, f.log);
  absl::StatusOr<TuneModelReport> report = TuneModel(selected.tasks, o);
  if (!report.ok()) {
    std::cerr << "tunejit tune: " << report.status().message() << "\n";
    return kExitFailure;
  }
  PrintSummary(selected, *report);
  WriteCurve(f.log + ".svg", selected, *report);
  for (const TaskOutcome& out : report->tasks) {
    if (!out.status.ok()) return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int RunTuneCommand(const std::vector<std::string>& args) {
  TuneFlags f;
  FlagParser parser("tunejit tune", kSummary);
  RegisterFlags(parser, f);
  std::vector<std::string> positional;
  if (int code = parser.Parse(args, &positional); code >= 0) return code;
  if (!positional.empty()) return Usage("unexpected argument '" + positional[0] + "'");
  double seconds = 0, timeout = 0;
  if (int code = ValidateFlags(f, &seconds, &timeout); code >= 0) return code;
  Selected selected;
  if (int code = SelectTasks(f, &selected); code >= 0) return code;
  if (f.list) {
    PrintTaskList(selected);
    return kExitOk;
  }
  if (f.log.empty()) return Usage("--log FILE is required");
  if (seconds <= 0 && f.trials <= 0) return Usage("give a budget: --budget TIME and/or --trials N");
  if (selected.tasks.empty()) {
    std::cerr << "tunejit tune: no tasks in this selection/shard; nothing to do\n";
    return kExitOk;
  }
  absl::StatusOr<ResumeLog> resume = OpenLog(f);
  if (!resume.ok()) {
    std::cerr << "tunejit tune: " << resume.status().message() << "\n";
    return absl::IsAlreadyExists(resume.status()) ? kExitUsage : kExitFailure;
  }
  return Tune(f, seconds, timeout, selected, *resume);
}

int RunTuneWorkerCommand(const std::vector<std::string>& args) {
  WorkerMainOptions o;
  int64_t gpu = 0;
  std::string max_timing = "1";
  FlagParser parser(
      "tunejit tune-worker",
      "Internal: the measuring worker of 'tunejit tune' (JSON lines on stdin/stdout).");
  parser.Int("gpu", &gpu, "N", "device ordinal");
  parser.String("cache-dir", &o.cache_dir, "DIR", "kernel cache directory");
  parser.Bool("no-cache", &o.no_cache, "no kernel cache");
  parser.String("max-timing", &max_timing, "SECONDS", "timing time per candidate (default 1)");
  std::string sustained;
  parser.String("sustained", &sustained, "TIME",
                "back-to-back run before timing (tune --sustained)");
  std::vector<std::string> positional;
  if (int code = parser.Parse(args, &positional); code >= 0) return code;
  absl::StatusOr<double> timing = ParseDuration(max_timing);
  absl::StatusOr<double> sustained_seconds =
      sustained.empty() ? absl::StatusOr<double>(0.0) : ParseDuration(sustained);
  if (!timing.ok() || !sustained_seconds.ok() || !positional.empty()) {
    return Usage("tune-worker: bad arguments");
  }
  o.measure.sustained_seconds = *sustained_seconds;
  o.gpu = static_cast<int>(gpu);
  o.measure.max_timing_seconds = *timing;
  // The protocol keeps the real stdout; fd 1 becomes stderr so no library print can corrupt it.
  const int protocol_fd = ::dup(STDOUT_FILENO);
  if (protocol_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) return kExitFailure;
  return RunTuneWorker(o, STDIN_FILENO, protocol_fd);
}

}  // namespace tunejit::cli
