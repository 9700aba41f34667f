// File: jit/nvrtc_compiler.h
// NVRTC front end: compile one embedded template file for one architecture, instantiating the
// requested name expressions. Needs no GPU (code is generated for a named architecture).
//
//   CompileRequest req = MakeCompileRequest(spec, arch);   // source + all .cuh as virtual headers
//   absl::StatusOr<CompiledProgram> prog = NvrtcCompile(req);
//   prog->lowered_names.at(spec.name_expression)  // mangled name to look up after loading
//
// On a compile error the status is InvalidArgument and its message names the source file, the name
// expressions (template arguments), every option and the NVRTC log; the specialized source is
// written to `dump_dir` (with line numbers) and that path is in the message.
#ifndef TUNEJIT_JIT_NVRTC_COMPILER_H_
#define TUNEJIT_JIT_NVRTC_COMPILER_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/arch.h"
#include "jit/kernel_spec.h"

namespace tunejit {

struct CompileRequest {
  std::string source_name;                                   // e.g. "dense.cu"
  std::string source;                                        // full text
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, text)
  std::vector<std::string> name_expressions;
  std::vector<std::string> options;  // Complete NVRTC option list, architecture included.
  GpuArch arch;
};

struct CompiledProgram {
  std::string cubin;  // SASS for `arch` (empty only if PTX-only was requested).
  std::string ptx;    // Kept for readers and for JIT by a newer driver.
  std::map<std::string, std::string> lowered_names;  // name expression -> mangled name
  std::string log;                                   // NVRTC log (warnings), may be empty.
};

// The default NVRTC options for `arch` (-std=c++17, --gpu-architecture=..., -default-device, ...).
std::vector<std::string> DefaultNvrtcOptions(const GpuArch& arch);

// Builds a request for `spec` from the embedded sources: the .cu file, every embedded .cuh as a
// header, DefaultNvrtcOptions(arch) plus spec.defines. NotFound if the file is not embedded.
// A spec.arch_specific kernel is built for arch's "a" variant (sm_90 -> sm_90a).
absl::StatusOr<CompileRequest> MakeCompileRequest(const KernelSpec& spec, const GpuArch& arch);

// Compiles. `dump_dir` (may be empty: then the system temp dir) receives the source on failure.
absl::StatusOr<CompiledProgram> NvrtcCompile(const CompileRequest& request,
                                             const std::string& dump_dir = "");

// NVRTC's version as major*1000 + minor*10 (e.g. 13000), part of every cache key.
int NvrtcVersion();

}  // namespace tunejit

#endif  // TUNEJIT_JIT_NVRTC_COMPILER_H_
