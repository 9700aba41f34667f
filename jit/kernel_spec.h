// File: jit/kernel_spec.h
// What one kernel instantiation is, as plain data: which embedded template file, which template
// instantiation (an NVRTC name expression), and which extra -D options. Ops build these from tuning
// records; jit/ compiles them; the cache keys on their full expansion. Specialization is by
// template arguments, never by editing source text.
//
//   KernelSpec spec{.source_file = "dense.cu",
//                   .name_expression = "tunejit::dense_large_batch<2, 4, 1, 2, 4, 1, 8, 2, 0>"};
#ifndef TUNEJIT_JIT_KERNEL_SPEC_H_
#define TUNEJIT_JIT_KERNEL_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tunejit {

struct KernelSpec {
  std::string source_file;      // An embedded kernel_sources/ file name, e.g. "dense.cu".
  std::string name_expression;  // e.g. "tunejit::dense_small_batch<64, 0>" (or "&ns::kernel<...>").
  // Extra "-DNAME=value" options, only for values that cannot be template arguments. (The "= {}"
  // lets designated initializers leave it out without -Wmissing-field-initializers.)
  std::vector<std::string> defines = {};
  // Uses features of the architecture-specific target (sm_90a: wgmma, setmaxnreg): compiled for
  // "sm_XYa" whatever arch the caller names; not portable to other generations.
  bool arch_specific = false;

  friend bool operator==(const KernelSpec&, const KernelSpec&) = default;
};

// Launch geometry of one kernel.
struct LaunchShape {
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // Dynamic shared memory.
  // Programmatic dependent launch: the kernel may start while the previous one on the stream drains
  // (its setup overlaps that kernel's tail). Only for kernels that call griddepcontrol.wait
  // (common.cuh GridDependencyWait) before touching global memory.
  bool overlaps_previous = false;

  uint64_t threads_per_block() const { return uint64_t{block[0]} * block[1] * block[2]; }
  friend bool operator==(const LaunchShape&, const LaunchShape&) = default;
};

}  // namespace tunejit

#endif  // TUNEJIT_JIT_KERNEL_SPEC_H_
