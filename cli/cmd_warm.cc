// `tunejit warm`: compile every kernel a tuning log needs into the kernel cache, for a named GPU
// architecture, with no GPU present. Kernels are deduplicated, then compiled on all cores.
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
#include "autotvm/log_file.h"
#include "cache/kernel_cache.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "jit/arch.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"

namespace tunejit::cli {
namespace {

struct WarmFlags {
  std::string arch = "sm_90";
  std::string log;
  std::string cache_dir;
  bool no_cache = false;
  bool strict = false;
  int64_t jobs = 0;
};

// The distinct kernels of the log's error-free records, and why others were left out.
struct WarmPlan {
  std::vector<KernelSpec> kernels;
  int records_used = 0;
  std::map<std::string, int> skipped;  // reason -> count
  std::vector<std::string> rejected;   // "file:line task: reason"
};

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
    for (const PlannedKernel& k : op_plan->kernels) {
      std::string id = k.spec.source_file + "|" + k.spec.name_expression;
      for (const std::string& d : k.spec.defines) id += "|" + d;
      if (!seen.emplace(id, true).second) continue;
      plan.kernels.push_back(k.spec);
    }
  }
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
      "architecture. Needs no GPU.");
  parser.String("arch", &f.arch, "SM", "target architecture, e.g. sm_90, sm_90a (default sm_90)");
  parser.String("log", &f.log, "FILE", "AutoTVM tuning log (required)");
  parser.String("cache-dir", &f.cache_dir, "DIR", "kernel cache directory");
  parser.Bool("no-cache", &f.no_cache, "compile without reading or writing the cache");
  parser.Bool("strict", &f.strict, "fail on the first bad log line");
  parser.Int("jobs", &f.jobs, "N", "parallel compiles (default: all cores)");
  std::vector<std::string> positional;
  if (int code = parser.Parse(args, &positional); code >= 0) return code;
  if (f.log.empty() || !positional.empty()) {
    std::cerr << "tunejit warm: "
              << (f.log.empty() ? "--log FILE is required"
                                : "unexpected argument '" + positional[0] + "'")
              << "\n(run 'tunejit warm --help' for usage)\n";
    return kExitUsage;
  }
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch(f.arch);
  if (!arch.ok()) {
    std::cerr << "tunejit warm: " << arch.status().message() << "\n";
    return kExitUsage;
  }
  autotvm::LogContents log;
  if (absl::Status s = autotvm::LoadLogFile(f.log, {.strict = f.strict}, &log); !s.ok()) {
    std::cerr << "tunejit warm: " << s.message() << "\n";
    return kExitFailure;
  }
  for (const autotvm::LogLineError& e : log.errors) std::cerr << "  " << e.ToString() << "\n";
  std::cout << "warm: " << log.Summary() << "\n";

  absl::StatusOr<KernelCache> cache =
      KernelCache::Open({.dir = f.cache_dir, .disabled = f.no_cache});
  if (!cache.ok()) {
    std::cerr << "tunejit warm: " << cache.status().message() << "\n";
    return kExitFailure;
  }
  auto start = std::chrono::steady_clock::now();
  WarmPlan plan = PlanKernels(log, DeviceLimits::ForArch(*arch));
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
