#include "jit/kernel_compiler.h"

#include <chrono>
#include <iostream>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace tunejit {
namespace {

void WarnStoreFailedOnce(const absl::Status& status) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::cerr << "tunejit: warning: could not store a compiled kernel in the cache (continuing "
                 "uncached): "
              << status.message() << "\n";
  });
}

}  // namespace

// Every field of the request goes into the key, so any change to the source, a header, an option
// or the NVRTC version is a different entry (style practice 7).
CacheKeyInputs CacheKeyInputsFor(const CompileRequest& request) {
  CacheKeyInputs inputs;
  inputs.source_name = request.source_name;
  inputs.source = request.source;
  inputs.headers = request.headers;
  inputs.name_expressions = request.name_expressions;
  inputs.options = request.options;
  inputs.arch = request.arch.ToString();
  inputs.nvrtc_version = NvrtcVersion();
  inputs.output_kind = "cubin";
  return inputs;
}

absl::StatusOr<CompiledKernel> KernelCompiler::Compile(const KernelSpec& spec,
                                                       const GpuArch& arch) const {
  TUNEJIT_ASSIGN_OR_RETURN(CompileRequest request, MakeCompileRequest(spec, arch));
  const bool use_cache = cache_ != nullptr && cache_->enabled();
  const CacheKey key = ComputeCacheKey(CacheKeyInputsFor(request));
  if (use_cache) {
    if (std::optional<CacheEntry> hit = cache_->Lookup(key)) {
      auto lowered = hit->lowered_names.find(spec.name_expression);
      // An entry without our name expression or without code cannot be used: treat it as a miss.
      if (lowered != hit->lowered_names.end() && !lowered->second.empty() && !hit->cubin.empty()) {
        CompiledKernel out;
        out.lowered_name = lowered->second;
        out.program.cubin = std::move(hit->cubin);
        out.program.ptx = std::move(hit->ptx);
        out.program.lowered_names = std::move(hit->lowered_names);
        out.cache_hit = true;
        out.key_digest = key.digest;
        return out;
      }
    }
  }
  auto start = std::chrono::steady_clock::now();
  TUNEJIT_ASSIGN_OR_RETURN(CompiledProgram program, NvrtcCompile(request));
  CompiledKernel out;
  out.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto lowered = program.lowered_names.find(spec.name_expression);
  if (lowered == program.lowered_names.end()) {
    return absl::InternalError(
        absl::StrCat("NVRTC returned no lowered name for ", spec.name_expression));
  }
  out.lowered_name = lowered->second;
  out.key_digest = key.digest;
  if (use_cache) {
    CacheEntry entry{program.cubin, program.ptx, program.lowered_names};
    if (absl::Status stored = cache_->Store(key, entry); !stored.ok()) WarnStoreFailedOnce(stored);
  }
  out.program = std::move(program);
  return out;
}

}  // namespace tunejit
