#include "jit/nvrtc_compiler.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_sources/embedded.h"
#include "tests/jit/jit_test_util.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadFile;
using ::testing::StartsWith;
using testing::TempDir;

constexpr char kSaxpy[] = "tunejit::selftest_saxpy<256, float>";

GpuArch Arch(const char* text) { return *ParseGpuArch(text); }

KernelSpec SaxpySpec() {
  return KernelSpec{.source_file = "selftest.cu", .name_expression = kSaxpy};
}

bool IsElf(const std::string& image) {
  return image.size() > 4 && image.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

TEST(DefaultNvrtcOptions, CorrectnessFirst) {
  std::vector<std::string> options = DefaultNvrtcOptions(Arch("sm_90a"));
  EXPECT_THAT(options, ::testing::Contains("--gpu-architecture=sm_90a"));
  EXPECT_THAT(options, ::testing::Contains("-std=c++17"));
  EXPECT_THAT(options, ::testing::Contains("-default-device"));
  EXPECT_THAT(options, Not(::testing::Contains("--use_fast_math")));
}

TEST(MakeCompileRequest, UsesEmbeddedSourceAndEveryHeader) {
  KernelSpec spec = SaxpySpec();
  spec.defines = {"-DTUNEJIT_SELFTEST_BIAS=2"};
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(spec, Arch("sm_90"));
  ASSERT_TRUE(request.ok()) << request.status();
  const EmbeddedFile* file = FindKernelSource("selftest.cu");
  ASSERT_NE(file, nullptr);
  EXPECT_EQ(request->source_name, "selftest.cu");
  EXPECT_EQ(request->source, file->content);
  size_t headers = 0;
  for (const EmbeddedFile& f : EmbeddedKernelSources()) {
    if (!absl::EndsWith(std::string(f.name), ".cuh")) continue;
    ++headers;
    EXPECT_THAT(request->headers,
                ::testing::Contains(std::pair<std::string, std::string>(f.name, f.content)));
  }
  EXPECT_EQ(request->headers.size(), headers);
  EXPECT_THAT(request->name_expressions, ::testing::ElementsAre(kSaxpy));
  EXPECT_EQ(request->options.back(), "-DTUNEJIT_SELFTEST_BIAS=2");
  EXPECT_THAT(request->options, ::testing::Contains("--gpu-architecture=sm_90"));
  EXPECT_EQ(request->arch, Arch("sm_90"));
}

TEST(MakeCompileRequest, UnknownFileIsNotFound) {
  KernelSpec spec{.source_file = "no_such_kernel.cu", .name_expression = "x"};
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(spec, Arch("sm_90"));
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(request.status().message()), HasSubstr("no_such_kernel.cu"));
  EXPECT_THAT(std::string(request.status().message()),
              HasSubstr("selftest.cu"));  // lists what exists
}

TEST(MakeCompileRequest, BadDefineIsInvalidArgument) {
  KernelSpec spec = SaxpySpec();
  spec.defines = {"TUNEJIT_SELFTEST_BIAS=1"};
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(spec, Arch("sm_90"));
  ASSERT_FALSE(request.ok());
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(request.status().message()), HasSubstr("TUNEJIT_SELFTEST_BIAS=1"));
}

// An arch-specific spec (wgmma, setmaxnreg) is built for the "a" target of the arch asked for;
// others keep the arch as given.
TEST(MakeCompileRequest, ArchSpecificSpecTargetsTheAVariant) {
  KernelSpec spec = SaxpySpec();
  spec.arch_specific = true;
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(spec, Arch("sm_90"));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->arch.ToString(), "sm_90a");
  EXPECT_THAT(request->options, ::testing::Contains("--gpu-architecture=sm_90a"));
  spec.arch_specific = false;
  request = MakeCompileRequest(spec, Arch("sm_90"));
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->arch.ToString(), "sm_90");
  EXPECT_THAT(request->options, Not(::testing::Contains("--gpu-architecture=sm_90a")));
}

class NvrtcCompileArch : public ::testing::TestWithParam<const char*> {};

TEST_P(NvrtcCompileArch, SelftestCompiles) {
  absl::StatusOr<CompileRequest> request = MakeCompileRequest(SaxpySpec(), Arch(GetParam()));
  ASSERT_TRUE(request.ok()) << request.status();
  absl::StatusOr<CompiledProgram> program = NvrtcCompile(*request);
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_TRUE(IsElf(program->cubin)) << "cubin is " << program->cubin.size() << " bytes";
  ASSERT_EQ(program->lowered_names.count(kSaxpy), 1u);
  const std::string& lowered = program->lowered_names.at(kSaxpy);
  EXPECT_THAT(lowered, StartsWith("_Z"));
  EXPECT_THAT(lowered, HasSubstr("selftest_saxpy"));
  // The PTX names the requested target, so the option reached NVRTC.
  EXPECT_THAT(program->ptx, HasSubstr(std::string(".target ") + GetParam()));
  EXPECT_THAT(program->ptx, HasSubstr(".entry " + lowered));
}

INSTANTIATE_TEST_SUITE_P(Archs, NvrtcCompileArch, ::testing::Values("sm_75", "sm_90", "sm_90a"));

TEST(NvrtcCompile, DefinesReachTheCompiler) {
  KernelSpec spec = SaxpySpec();
  spec.defines = {"-DTUNEJIT_SELFTEST_BIAS=7"};
  absl::StatusOr<CompiledProgram> with_bias =
      NvrtcCompile(*MakeCompileRequest(spec, Arch("sm_90")));
  ASSERT_TRUE(with_bias.ok()) << with_bias.status();
  // 7.0f is 0x40E00000; the default bias 0 adds no such constant.
  EXPECT_THAT(with_bias->ptx, HasSubstr("0f40E00000"));
  absl::StatusOr<CompiledProgram> plain =
      NvrtcCompile(*MakeCompileRequest(SaxpySpec(), Arch("sm_90")));
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(plain->ptx, Not(HasSubstr("0f40E00000")));
}

CompileRequest BrokenRequest() {
  CompileRequest request;
  request.source_name = "broken.cu";
  request.source =
      "namespace tunejit {\n"
      "template <int N> __global__ void broken(float* x) {\n"
      "  x[0] = N + undeclared_thing;\n"
      "}\n"
      "}\n";
  request.name_expressions = {"tunejit::broken<3>"};
  request.arch = Arch("sm_90");
  request.options = DefaultNvrtcOptions(request.arch);
  request.options.push_back("-DSOME_OPTION=1");
  return request;
}

std::string DumpPathFrom(std::string_view message) {
  constexpr std::string_view kTag = "source dump: ";
  size_t start = message.find(kTag);
  if (start == std::string_view::npos) return "";
  start += kTag.size();
  return std::string(message.substr(start, message.find('\n', start) - start));
}

TEST(NvrtcCompile, ErrorNamesEverythingAndDumpsTheSource) {
  TempDir dir;
  absl::StatusOr<CompiledProgram> program = NvrtcCompile(BrokenRequest(), dir.path());
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(program.status().message());
  EXPECT_THAT(message, HasSubstr("broken.cu"));
  EXPECT_THAT(message, HasSubstr("tunejit::broken<3>"));
  EXPECT_THAT(message, HasSubstr("--gpu-architecture=sm_90"));
  EXPECT_THAT(message, HasSubstr("-std=c++17"));
  EXPECT_THAT(message, HasSubstr("-DSOME_OPTION=1"));
  // The NVRTC log, with the file and line of the error.
  EXPECT_THAT(message, HasSubstr("broken.cu(3)"));
  EXPECT_THAT(message, HasSubstr("undeclared_thing"));

  std::string dump = DumpPathFrom(message);
  ASSERT_FALSE(dump.empty()) << message;
  EXPECT_THAT(dump, StartsWith(dir.path()));
  ASSERT_TRUE(std::filesystem::exists(dump)) << dump;
  std::string text = ReadFile(dump);
  EXPECT_THAT(text, HasSubstr("    3|   x[0] = N + undeclared_thing;"));
  EXPECT_THAT(text, HasSubstr("tunejit::broken<3>"));
}

TEST(NvrtcCompile, DefaultDumpDirIsTempTunejitFailed) {
  absl::StatusOr<CompiledProgram> program = NvrtcCompile(BrokenRequest());
  ASSERT_FALSE(program.ok());
  std::string dump = DumpPathFrom(std::string(program.status().message()));
  std::filesystem::path expected_dir = std::filesystem::temp_directory_path() / "tunejit-failed";
  EXPECT_THAT(dump, StartsWith(expected_dir.string()));
  EXPECT_THAT(dump, ::testing::EndsWith(".cu"));
  EXPECT_TRUE(std::filesystem::exists(dump)) << dump;
  std::filesystem::remove(dump);
}

TEST(NvrtcCompile, BadNameExpressionIsInvalidArgument) {
  KernelSpec spec = SaxpySpec();
  spec.name_expression = "tunejit::selftest_saxpy<256>";  // T missing
  TempDir dir;
  absl::StatusOr<CompiledProgram> program =
      NvrtcCompile(*MakeCompileRequest(spec, Arch("sm_90")), dir.path());
  ASSERT_FALSE(program.ok());
  EXPECT_EQ(program.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("tunejit::selftest_saxpy<256>"));
  EXPECT_THAT(std::string(program.status().message()), HasSubstr("selftest.cu"));
}

TEST(NvrtcCompile, ConcurrentCompilesAgree) {
  CompileRequest request = *MakeCompileRequest(SaxpySpec(), Arch("sm_90"));
  absl::StatusOr<CompiledProgram> a, b;
  std::thread t1([&] { a = NvrtcCompile(request); });
  std::thread t2([&] { b = NvrtcCompile(request); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->cubin, b->cubin);
  EXPECT_EQ(a->lowered_names, b->lowered_names);
}

TEST(NvrtcVersion, IsEncodedAsMajorTimes1000) {
  int version = NvrtcVersion();
  EXPECT_GE(version, 12000);
  EXPECT_EQ(version % 10, 0);
}

}  // namespace
}  // namespace tunejit
