// KernelCompiler through a real on-disk cache in a temporary directory (no GPU needed).
#include "jit/kernel_compiler.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/jit/jit_test_util.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr char kSaxpy[] = "tunejit::selftest_saxpy<256, float>";

KernelSpec SaxpySpec() {
  return KernelSpec{.source_file = "selftest.cu", .name_expression = kSaxpy};
}
GpuArch Sm90() { return *ParseGpuArch("sm_90"); }

KernelCache OpenCache(const std::string& dir) {
  absl::StatusOr<KernelCache> cache = KernelCache::Open(CacheOptions{.dir = dir});
  EXPECT_TRUE(cache.ok()) << cache.status();
  return *std::move(cache);
}

std::vector<std::string> EntryFiles(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".tjk") files.push_back(e.path().string());
  }
  return files;
}

class KernelCompilerTest : public ::testing::Test {
 protected:
  TempDir dir_;
  KernelCache cache_ = OpenCache(dir_.path());
  KernelCompiler compiler_{&cache_};
};

TEST_F(KernelCompilerTest, MissThenHitWithIdenticalProgram) {
  absl::StatusOr<CompiledKernel> first = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->cache_hit);
  EXPECT_GT(first->compile_seconds, 0);
  EXPECT_FALSE(first->program.cubin.empty());
  EXPECT_EQ(first->lowered_name, first->program.lowered_names.at(kSaxpy));
  EXPECT_THAT(first->lowered_name, HasSubstr("selftest_saxpy"));
  EXPECT_EQ(EntryFiles(dir_.path()).size(), 1u);

  absl::StatusOr<CompiledKernel> second = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->compile_seconds, 0);
  EXPECT_EQ(second->program.cubin, first->program.cubin);
  EXPECT_EQ(second->program.ptx, first->program.ptx);
  EXPECT_EQ(second->lowered_name, first->lowered_name);

  // A fresh cache object and compiler on the same directory (as in a new run) also hit.
  KernelCache reopened = OpenCache(dir_.path());
  absl::StatusOr<CompiledKernel> third = KernelCompiler(&reopened).Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->cache_hit);
  EXPECT_EQ(third->program.cubin, first->program.cubin);
}

TEST_F(KernelCompilerTest, EverythingThatChangesTheBinaryMisses) {
  ASSERT_TRUE(compiler_.Compile(SaxpySpec(), Sm90()).ok());
  KernelSpec with_define = SaxpySpec();
  with_define.defines = {"-DTUNEJIT_SELFTEST_BIAS=1"};
  KernelSpec other_expression = SaxpySpec();
  other_expression.name_expression = "tunejit::selftest_saxpy<128, double>";
  struct Variant {
    const char* what;
    KernelSpec spec;
    GpuArch arch;
  };
  const Variant variants[] = {
      {"define", with_define, Sm90()},
      {"arch", SaxpySpec(), *ParseGpuArch("sm_90a")},
      {"older arch", SaxpySpec(), *ParseGpuArch("sm_80")},
      {"name expression", other_expression, Sm90()},
  };
  for (const Variant& v : variants) {
    absl::StatusOr<CompiledKernel> miss = compiler_.Compile(v.spec, v.arch);
    ASSERT_TRUE(miss.ok()) << v.what << ": " << miss.status();
    EXPECT_FALSE(miss->cache_hit) << v.what;
    absl::StatusOr<CompiledKernel> hit = compiler_.Compile(v.spec, v.arch);
    ASSERT_TRUE(hit.ok());
    EXPECT_TRUE(hit->cache_hit) << v.what;
    EXPECT_EQ(hit->program.cubin, miss->program.cubin) << v.what;
  }
  EXPECT_EQ(EntryFiles(dir_.path()).size(), 5u);
}

TEST_F(KernelCompilerTest, EntryWithoutOurLoweredNameIsAMiss) {
  CompileRequest request = *MakeCompileRequest(SaxpySpec(), Sm90());
  CacheKey key = ComputeCacheKey(CacheKeyInputsFor(request));
  ASSERT_TRUE(cache_.Store(key, CacheEntry{"not a cubin", "", {{"something else", "_Z1xv"}}}).ok());
  absl::StatusOr<CompiledKernel> compiled = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_FALSE(compiled->cache_hit);
  EXPECT_EQ(compiled->program.cubin.compare(0, 4,
                                            "\x7f"
                                            "ELF"),
            0);
  // The recompiled program replaced the useless entry.
  absl::StatusOr<CompiledKernel> again = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->program.cubin, compiled->program.cubin);
}

TEST_F(KernelCompilerTest, CorruptEntryIsRecompiled) {
  absl::StatusOr<CompiledKernel> first = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(first.ok());
  std::vector<std::string> files = EntryFiles(dir_.path());
  ASSERT_EQ(files.size(), 1u);
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "garbage";
  absl::StatusOr<CompiledKernel> second = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->cache_hit);
  EXPECT_EQ(second->program.cubin, first->program.cubin);
}

TEST(KernelCompiler, WorksWithoutACache) {
  KernelCompiler compiler(nullptr);
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<CompiledKernel> compiled = compiler.Compile(SaxpySpec(), Sm90());
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    EXPECT_FALSE(compiled->cache_hit);
  }
  TempDir dir;
  absl::StatusOr<KernelCache> disabled =
      KernelCache::Open(CacheOptions{.dir = dir.path(), .disabled = true});
  ASSERT_TRUE(disabled.ok());
  KernelCompiler uncached(&*disabled);
  ASSERT_TRUE(uncached.Compile(SaxpySpec(), Sm90()).ok());
  absl::StatusOr<CompiledKernel> again = uncached.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->cache_hit);
}

TEST(KernelCompiler, ErrorsPassThrough) {
  TempDir dir;
  KernelCache cache = OpenCache(dir.path());
  KernelCompiler compiler(&cache);
  KernelSpec missing{.source_file = "nope.cu", .name_expression = "x"};
  EXPECT_EQ(compiler.Compile(missing, Sm90()).status().code(), absl::StatusCode::kNotFound);
  KernelSpec bad = SaxpySpec();
  bad.name_expression = "tunejit::selftest_saxpy<256, not_a_type>";
  absl::StatusOr<CompiledKernel> compiled = compiler.Compile(bad, Sm90());
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("not_a_type"));
  EXPECT_TRUE(EntryFiles(dir.path()).empty());  // failures are not cached
}

TEST_F(KernelCompilerTest, ThreadsShareOneCompiler) {
  std::vector<KernelSpec> specs(4, SaxpySpec());
  specs[1].name_expression = "tunejit::selftest_saxpy<128, float>";
  specs[2].name_expression = "tunejit::selftest_saxpy<64, double>";
  specs[3].defines = {"-DTUNEJIT_SELFTEST_BIAS=3"};
  std::vector<absl::StatusOr<CompiledKernel>> results(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = compiler_.Compile(specs[i], Sm90()); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(results[i].ok()) << i << ": " << results[i].status();
    EXPECT_EQ(results[i]->lowered_name,
              results[i]->program.lowered_names.at(specs[i].name_expression));
  }
  EXPECT_EQ(EntryFiles(dir_.path()).size(), specs.size());
}

// Child half of SecondProcessHits: compiles through the cache in TUNEJIT_TEST_CACHE_DIR and writes
// "hit" or "miss" (plus the cubin size) to TUNEJIT_TEST_OUT.
TEST(ChildProcess, CompileThroughCache) {
  std::string dir = testing::Env("TUNEJIT_TEST_CACHE_DIR");
  if (dir.empty()) GTEST_SKIP() << "only run as a child of SecondProcessHits";
  KernelCache cache = OpenCache(dir);
  absl::StatusOr<CompiledKernel> compiled = KernelCompiler(&cache).Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  std::ofstream(testing::Env("TUNEJIT_TEST_OUT"))
      << (compiled->cache_hit ? "hit " : "miss ") << compiled->program.cubin.size();
}

TEST_F(KernelCompilerTest, SecondProcessHits) {
  absl::StatusOr<CompiledKernel> first = compiler_.Compile(SaxpySpec(), Sm90());
  ASSERT_TRUE(first.ok());
  std::string out = dir_.path() + "/child-report.txt";
  int code =
      testing::RunSelfTest("ChildProcess.CompileThroughCache",
                           {{"TUNEJIT_TEST_CACHE_DIR", dir_.path()}, {"TUNEJIT_TEST_OUT", out}});
  EXPECT_EQ(code, 0);
  EXPECT_EQ(testing::ReadFile(out), "hit " + std::to_string(first->program.cubin.size()));
}

}  // namespace
}  // namespace tunejit
