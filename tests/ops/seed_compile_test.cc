// Every dense / conv2d_nchw record of the seed log, and (when ../shared/data/tophub exists) every
// TopHub conv2d_nchw.cuda / depthwise_conv2d_nchw.cuda record, specializes for sm_90 and compiles
// with NVRTC. TVM logs hold only records that ran (error_no 0), so any rejection by our validity
// rules is suspicious: rejections are printed with their reasons and fail the test.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "jit/kernel_compiler.h"
#include "ops/op_template.h"
#include "ops/plan_runner.h"
#include "tests/ops/ops_test_util.h"
#include "tests/testing/test_data.h"

namespace tunejit {
namespace {

const GpuArch kSm90{9, 0, false};

struct SpecializeReport {
  OpPlan unique;  // one kernel per distinct spec
  int records = 0;
  int rejected = 0;
  int swapped = 0;
};

SpecializeReport SpecializeAll(const std::vector<testing::LogRecord>& records,
                               const std::string& source) {
  SpecializeReport report;
  std::map<std::string, bool> seen;
  const DeviceLimits limits = DeviceLimits::ForArch(kSm90);
  for (const testing::LogRecord& r : records) {
    ++report.records;
    const OpTemplate* op = FindOpTemplate(r.workload.task_name);
    if (op == nullptr) {
      ADD_FAILURE() << source << ":" << r.line << ": no template for " << r.workload.task_name;
      continue;
    }
    absl::StatusOr<OpPlan> plan = op->Specialize(r.workload, r.config, limits, Epilogue{});
    if (!plan.ok()) {
      ++report.rejected;
      std::printf("REJECTED %s:%d %s %s: %s\n", source.c_str(), r.line,
                  r.workload.args.dump().c_str(), r.config.ToString().c_str(),
                  std::string(plan.status().message()).c_str());
      continue;
    }
    if (!plan->notes.empty()) ++report.swapped;
    for (const PlannedKernel& k : plan->kernels) {
      const std::string key = absl::StrCat(k.spec.source_file, "|", k.spec.name_expression);
      if (seen.emplace(key, true).second) report.unique.kernels.push_back(k);
    }
  }
  return report;
}

void CompileAll(const SpecializeReport& report, const std::string& what) {
  KernelCompiler compiler(nullptr);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<CompiledKernel>> compiled =
      CompilePlan(compiler, report.unique, kSm90, /*threads=*/2);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  double nvrtc = 0;
  for (const CompiledKernel& k : *compiled) {
    EXPECT_FALSE(k.program.cubin.empty());
    EXPECT_FALSE(k.lowered_name.empty());
    nvrtc += k.compile_seconds;
  }
  std::printf(
      "%s: %d records, %d rejected, %d with swapped ry/rx labels, %zu distinct kernels "
      "compiled in %.1f s wall on 2 threads (%.2f s NVRTC per kernel)\n",
      what.c_str(), report.records, report.rejected, report.swapped, report.unique.kernels.size(),
      seconds, compiled->empty() ? 0.0 : nvrtc / compiled->size());
}

TEST(SeedCompile, SeedLogDenseAndDirectConv) {
  const std::string path = testing::RepoData("seed-vgg16-v100.log");
  std::vector<testing::LogRecord> records = testing::ReadLogRecords(
      path, {"dense_small_batch.cuda", "dense_large_batch.cuda", "conv2d_nchw.cuda"});
  ASSERT_EQ(records.size(), 7u);  // 3 large + 3 small dense, 1 direct conv
  SpecializeReport report = SpecializeAll(records, path);
  EXPECT_EQ(report.rejected, 0);
  EXPECT_EQ(report.unique.kernels.size(), 7u);
  CompileAll(report, "seed log");
}

// The distinct records of `tasks` across every TopHub file (the same record appears in several
// TopHub versions).
std::vector<testing::LogRecord> DistinctTopHubRecords(const std::string& dir,
                                                      const std::vector<std::string>& tasks) {
  std::vector<testing::LogRecord> records;
  std::map<std::string, bool> seen;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".log") continue;
    for (testing::LogRecord& r : testing::ReadLogRecords(entry.path().string(), tasks)) {
      const std::string key = r.workload.args.dump() + r.workload.task_name + r.config.ToString();
      if (seen.emplace(key, true).second) records.push_back(std::move(r));
    }
  }
  return records;
}

TEST(SeedCompile, TopHubWinograd) {
  const std::string dir = testing::SharedData("tophub");
  if (dir.empty()) GTEST_SKIP() << "../shared/data/tophub not present";
  std::vector<testing::LogRecord> records =
      DistinctTopHubRecords(dir, {"conv2d_nchw_winograd.cuda"});
  if (records.empty()) GTEST_SKIP() << "no winograd records in " << dir;
  SpecializeReport report = SpecializeAll(records, dir);
  EXPECT_EQ(report.rejected, 0) << "TVM ran these records (see the REJECTED lines)";
  CompileAll(report, "TopHub winograd");
}

TEST(SeedCompile, TopHubDirectAndDepthwiseConv) {
  const std::string dir = testing::SharedData("tophub");
  if (dir.empty()) GTEST_SKIP() << "../shared/data/tophub not present";
  std::vector<testing::LogRecord> records =
      DistinctTopHubRecords(dir, {"conv2d_nchw.cuda", "depthwise_conv2d_nchw.cuda"});
  if (records.empty()) GTEST_SKIP() << "no conv2d_nchw / depthwise records in " << dir;
  SpecializeReport report = SpecializeAll(records, dir);
  EXPECT_EQ(report.rejected, 0) << "TVM ran these records: a rejection means our rules or "
                                   "kernels differ from TVM's (see the REJECTED lines)";
  CompileAll(report, "TopHub");
}

}  // namespace
}  // namespace tunejit
