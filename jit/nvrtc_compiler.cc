#include "jit/nvrtc_compiler.h"

#include <nvrtc.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "jit/cuda_status.h"
#include "kernel_sources/embedded.h"

namespace tunejit {
namespace {

using jit_internal::ToStatus;

// The one owner of an nvrtcProgram: destroyed on every path, including failed compiles.
struct ProgramDeleter {
  void operator()(nvrtcProgram program) const { nvrtcDestroyProgram(&program); }
};
using ProgramOwner = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

uint64_t Fnv1a(uint64_t hash, absl::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash ^ bytes.size();
}

void AppendNumbered(std::string& out, absl::string_view text) {
  int line = 1;
  for (absl::string_view piece : absl::StrSplit(text, '\n')) {
    absl::StrAppendFormat(&out, "%5d| %s\n", line++, piece);
  }
}

// Writes the source (and every header) with line numbers so NVRTC log positions can be found.
// Returns the path, or a note on why nothing was written.
std::string DumpSource(const CompileRequest& request, const std::string& dump_dir) {
  std::error_code error;
  std::filesystem::path dir = dump_dir;
  if (dir.empty()) {
    dir = std::filesystem::temp_directory_path(error);
    if (error) return "(no source dump: no temp directory: " + error.message() + ")";
    dir /= "tunejit-failed";
  }
  std::filesystem::create_directories(dir, error);
  uint64_t hash = 0xcbf29ce484222325ull;
  hash = Fnv1a(hash, request.source);
  for (const auto& [name, text] : request.headers) hash = Fnv1a(Fnv1a(hash, name), text);
  for (const std::string& e : request.name_expressions) hash = Fnv1a(hash, e);
  for (const std::string& o : request.options) hash = Fnv1a(hash, o);
  std::string stem = std::filesystem::path(request.source_name).stem().string();
  std::filesystem::path path = dir / absl::StrFormat("%s-%016x.cu", stem, hash);

  std::string text = absl::StrCat(
      "// tunejit: NVRTC failed to compile ", request.source_name, " for ", request.arch.ToString(),
      "\n// name expressions: ", absl::StrJoin(request.name_expressions, " ; "),
      "\n// options: ", absl::StrJoin(request.options, " "),
      "\n// Line numbers match the NVRTC log.\n");
  AppendNumbered(text, request.source);
  for (const auto& [name, header] : request.headers) {
    absl::StrAppend(&text, "// ---- header ", name, " ----\n");
    AppendNumbered(text, header);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return "(no source dump: could not write " + path.string() + ")";
  return path.string();
}

std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

absl::Status CompileFailure(const CompileRequest& request, nvrtcResult result,
                            const std::string& log, const std::string& dump_dir) {
  return absl::InvalidArgumentError(
      absl::StrCat("NVRTC failed to compile ", request.source_name, " for ",
                   request.arch.ToString(), " (", nvrtcGetErrorString(result),
                   ")\n  name expressions: ", absl::StrJoin(request.name_expressions, " ; "),
                   "\n  options: ", absl::StrJoin(request.options, " "),
                   "\n  source dump: ", DumpSource(request, dump_dir), "\n  log:\n", log));
}

absl::StatusOr<ProgramOwner> CreateProgram(const CompileRequest& request) {
  std::vector<const char*> header_texts, header_names;
  for (const auto& [name, text] : request.headers) {
    header_names.push_back(name.c_str());
    header_texts.push_back(text.c_str());
  }
  nvrtcProgram raw = nullptr;
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(nvrtcCreateProgram(&raw, request.source.c_str(), request.source_name.c_str(),
                                  static_cast<int>(header_texts.size()), header_texts.data(),
                                  header_names.data()),
               "nvrtcCreateProgram(" + request.source_name + ")"));
  ProgramOwner program(raw);
  for (const std::string& expression : request.name_expressions) {
    TUNEJIT_RETURN_IF_ERROR(ToStatus(nvrtcAddNameExpression(program.get(), expression.c_str()),
                                     "nvrtcAddNameExpression(" + expression + ")"));
  }
  return program;
}

absl::StatusOr<std::string> GetOutput(nvrtcProgram program, bool cubin) {
  size_t size = 0;
  auto get_size = cubin ? nvrtcGetCUBINSize : nvrtcGetPTXSize;
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(get_size(program, &size), cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize"));
  std::string out(size, '\0');
  if (size == 0) return out;
  TUNEJIT_RETURN_IF_ERROR(
      ToStatus(cubin ? nvrtcGetCUBIN(program, out.data()) : nvrtcGetPTX(program, out.data()),
               cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX"));
  if (!cubin && out.back() == '\0') out.pop_back();  // PTX size counts its NUL
  return out;
}

}  // namespace

std::vector<std::string> DefaultNvrtcOptions(const GpuArch& arch) {
  // No --use_fast_math: correctness first; a template that wants fast intrinsics uses them itself.
  return {"-std=c++17", arch.NvrtcOption(), "-default-device"};
}

absl::StatusOr<CompileRequest> MakeCompileRequest(const KernelSpec& spec, const GpuArch& arch) {
  const EmbeddedFile* file = FindKernelSource(spec.source_file);
  if (file == nullptr || !absl::EndsWith(spec.source_file, ".cu")) {
    std::vector<std::string> known;
    for (const EmbeddedFile& f : EmbeddedKernelSources()) {
      if (f.name.size() > 3 && f.name.substr(f.name.size() - 3) == ".cu")
        known.emplace_back(f.name);
    }
    return absl::NotFoundError(absl::StrCat("no embedded kernel source '", spec.source_file,
                                            "' (known: ", absl::StrJoin(known, ", "), ")"));
  }
  CompileRequest request;
  request.source_name = std::string(file->name);
  request.source = std::string(file->content);
  for (const EmbeddedFile& f : EmbeddedKernelSources()) {
    if (f.name.size() > 4 && f.name.substr(f.name.size() - 4) == ".cuh") {
      request.headers.emplace_back(f.name, f.content);
    }
  }
  GpuArch target = arch;
  if (spec.arch_specific) target.arch_specific = true;
  request.name_expressions = {spec.name_expression};
  request.options = DefaultNvrtcOptions(target);
  for (const std::string& define : spec.defines) {
    if (!absl::StartsWith(define, "-D") || define.size() < 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bad define '", define, "' for ", spec.source_file, ": expected -DNAME or -DNAME=value"));
    }
    request.options.push_back(define);
  }
  request.arch = target;
  return request;
}

namespace {

absl::StatusOr<CompiledProgram> CompileProgram(const CompileRequest& request,
                                               const std::string& dump_dir) {
  TUNEJIT_ASSIGN_OR_RETURN(ProgramOwner program, CreateProgram(request));
  std::vector<const char*> options;
  for (const std::string& option : request.options) options.push_back(option.c_str());
  nvrtcResult result =
      nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  CompiledProgram out;
  out.log = ProgramLog(program.get());
  if (result == NVRTC_ERROR_COMPILATION || result == NVRTC_ERROR_INVALID_OPTION ||
      result == NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID) {
    return CompileFailure(request, result, out.log, dump_dir);
  }
  TUNEJIT_RETURN_IF_ERROR(ToStatus(result, "nvrtcCompileProgram(" + request.source_name + ")"));
  TUNEJIT_ASSIGN_OR_RETURN(out.cubin, GetOutput(program.get(), /*cubin=*/true));
  TUNEJIT_ASSIGN_OR_RETURN(out.ptx, GetOutput(program.get(), /*cubin=*/false));
  for (const std::string& expression : request.name_expressions) {
    const char* lowered = nullptr;
    TUNEJIT_RETURN_IF_ERROR(
        ToStatus(nvrtcGetLoweredName(program.get(), expression.c_str(), &lowered),
                 "nvrtcGetLoweredName(" + expression + ")"));
    out.lowered_names[expression] = lowered;
  }
  return out;
}

}  // namespace

absl::StatusOr<CompiledProgram> NvrtcCompile(const CompileRequest& request,
                                             const std::string& dump_dir) {
  // NVRTC calls on different programs may run on many threads at once (NVRTC's thread-safety
  // rule); each call here owns its program, so no lock is needed, except around the process's
  // first compile: NVRTC sets up its global state then, with synchronization ThreadSanitizer does
  // not see, so the first compile runs alone and every other one happens after it.
  static std::once_flag first;
  std::optional<absl::StatusOr<CompiledProgram>> first_result;
  std::call_once(first, [&] { first_result = CompileProgram(request, dump_dir); });
  if (first_result) return *std::move(first_result);
  return CompileProgram(request, dump_dir);
}

int NvrtcVersion() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return 0;
  return major * 1000 + minor * 10;
}

}  // namespace tunejit
