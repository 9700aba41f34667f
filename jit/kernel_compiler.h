// File: jit/kernel_compiler.h
// The core path of tunejit: a KernelSpec (template + template arguments) becomes a compiled
// program, through the on-disk cache. Needs no GPU. Thread-safe: the tuner and `tunejit warm`
// compile on all cores at once through one KernelCompiler.
//
//   KernelCompiler compiler(&cache);   // or nullptr for no cache
//   TUNEJIT_ASSIGN_OR_RETURN(CompiledKernel k, compiler.Compile(spec, arch));
//   k.cache_hit  // true when NVRTC was skipped
//   Module::Load(device, k.program.cubin) ... GetKernel(k.lowered_name)
#ifndef TUNEJIT_JIT_KERNEL_COMPILER_H_
#define TUNEJIT_JIT_KERNEL_COMPILER_H_

#include <string>

#include "absl/status/statusor.h"
#include "cache/kernel_cache.h"
#include "jit/arch.h"
#include "jit/kernel_spec.h"
#include "jit/nvrtc_compiler.h"

namespace tunejit {

struct CompiledKernel {
  CompiledProgram program;
  std::string lowered_name;  // of spec.name_expression
  bool cache_hit = false;
  double compile_seconds = 0;  // NVRTC time (0 on a hit)
  // CacheKey::digest of the request, with or without a cache: equal digests mean equal source,
  // headers, name expressions, options, architecture and NVRTC version (a saved build plan lists
  // its kernels by it).
  std::string key_digest;
};

// The cache key material for a request: every field of it plus the NVRTC version. Exposed so tests
// and tools can address the entry KernelCompiler would use.
CacheKeyInputs CacheKeyInputsFor(const CompileRequest& request);

class KernelCompiler {
 public:
  explicit KernelCompiler(KernelCache* cache) : cache_(cache) {}
  absl::StatusOr<CompiledKernel> Compile(const KernelSpec& spec, const GpuArch& arch) const;

 private:
  KernelCache* cache_;  // not owned; may be null
};

}  // namespace tunejit

#endif  // TUNEJIT_JIT_KERNEL_COMPILER_H_
