// jit_bench: what the kernel cache buys. Measures, for the selftest kernel:
//   1. NVRTC compile time (no cache), median of a few runs;
//   2. cache lookup time (read + verify an entry), median of 50;
//   3. on a GPU: cache hit to launchable kernel (Lookup + Module::Load + GetKernel), median of 50.
// Prints a table (docs/history/2026-11-30-jit-core-and-seed-log.md). The GPU rows are skipped
// without a device.
//   jit_bench [--arch sm_90] [--compiles 5]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "jit/device.h"
#include "jit/kernel_compiler.h"

namespace tunejit {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double Since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void Row(const std::string& what, double ms, const std::string& note) {
  std::printf("| %-44s | %10.3f | %s\n", what.c_str(), ms, note.c_str());
}

int Run(int argc, char** argv) {
  std::string arch_text;
  int compiles = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--arch") arch_text = argv[i + 1];
    if (std::string(argv[i]) == "--compiles") compiles = std::max(1, std::atoi(argv[i + 1]));
  }
  absl::StatusOr<Device> device = Device::Open(0);
  if (arch_text.empty()) arch_text = device.ok() ? device->properties().arch.ToString() : "sm_90";
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch(arch_text);
  if (!arch.ok()) {
    std::fprintf(stderr, "jit_bench: %s\n", std::string(arch.status().message()).c_str());
    return 2;
  }
  KernelSpec spec{.source_file = "selftest.cu",
                  .name_expression = "tunejit::selftest_saxpy<256, float>"};
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(spec, *arch);
  if (!request.ok()) return std::fprintf(stderr, "%s\n", request.status().ToString().c_str()), 1;

  std::printf("jit_bench: %s, NVRTC %d, %s\n\n", arch->ToString().c_str(), NvrtcVersion(),
              device.ok() ? device->properties().name.c_str() : "no GPU");
  std::printf("| %-44s | %10s | %s\n", "step", "median ms", "notes");
  std::printf("|%s|%s|------\n", std::string(46, '-').c_str(), std::string(12, '-').c_str());

  std::vector<double> compile_ms;
  CompiledProgram program;
  for (int i = 0; i < compiles; ++i) {
    auto start = Clock::now();
    absl::StatusOr<CompiledProgram> compiled = NvrtcCompile(*request);
    compile_ms.push_back(Since(start));
    if (!compiled.ok())
      return std::fprintf(stderr, "%s\n", compiled.status().ToString().c_str()), 1;
    program = *std::move(compiled);
  }
  Row("NVRTC compile (no cache)", Median(compile_ms),
      absl::StrFormat("%d runs, cubin %d bytes", compiles, program.cubin.size()));

  std::string dir = (std::filesystem::temp_directory_path() /
                     absl::StrFormat("tunejit-bench-%d", static_cast<int>(::getpid())))
                        .string();
  absl::StatusOr<KernelCache> cache = KernelCache::Open(CacheOptions{.dir = dir});
  if (!cache.ok()) return std::fprintf(stderr, "%s\n", cache.status().ToString().c_str()), 1;
  CacheKey key = ComputeCacheKey(CacheKeyInputsFor(*request));
  (void)cache->Store(key, CacheEntry{program.cubin, program.ptx, program.lowered_names});

  std::vector<double> lookup_ms, load_ms;
  for (int i = 0; i < 50; ++i) {
    auto start = Clock::now();
    std::optional<CacheEntry> hit = cache->Lookup(key);
    lookup_ms.push_back(Since(start));
    if (!hit) return std::fprintf(stderr, "jit_bench: cache miss after Store\n"), 1;
    if (!device.ok()) continue;
    absl::StatusOr<Module> module = Module::Load(*device, hit->cubin);
    absl::StatusOr<Kernel> kernel =
        module.ok() ? module->GetKernel(hit->lowered_names.at(spec.name_expression))
                    : absl::StatusOr<Kernel>(module.status());
    load_ms.push_back(Since(start));
    if (!kernel.ok()) return std::fprintf(stderr, "%s\n", kernel.status().ToString().c_str()), 1;
  }
  Row("cache Lookup (read + verify entry)", Median(lookup_ms), "50 runs");
  if (device.ok()) {
    Row("cache hit -> launchable (Lookup+Load+GetKernel)", Median(load_ms), "50 runs");
    std::printf("\nspeedup of a warm cache over NVRTC: %.0fx\n",
                Median(compile_ms) / std::max(Median(load_ms), 1e-6));
  } else {
    std::printf("\n(GPU rows skipped: %s)\n", std::string(device.status().message()).c_str());
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return 0;
}

}  // namespace
}  // namespace tunejit

int main(int argc, char** argv) { return tunejit::Run(argc, argv); }
