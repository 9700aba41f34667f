// `tunejit log show|check|merge` (cli/cmd_log.cc), driven through RunLogCommand.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "autotvm/dispatch.h"
#include "autotvm/log_file.h"
#include "cli/commands.h"
#include "gtest/gtest.h"
#include "tests/testing/test_data.h"

namespace tunejit::cli {
namespace {

using ::tunejit::testing::RepoData;

struct CliRun {
  int code;
  std::string out;
};

CliRun LogCommand(const std::vector<std::string>& args) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = RunLogCommand(args);
  std::string out = ::testing::internal::GetCapturedStdout();
  ::testing::internal::GetCapturedStderr();
  return {code, out};
}

TEST(LogCliTest, HelpAndUsageExitCodes) {
  EXPECT_EQ(LogCommand({"--help"}).code, 0);
  for (const char* sub : {"show", "check", "merge"}) {
    CliRun r = LogCommand({sub, "--help"});
    EXPECT_EQ(r.code, 0) << sub;
    EXPECT_NE(r.out.find(absl::StrCat("tunejit log ", sub)), std::string::npos) << r.out;
  }
  EXPECT_EQ(LogCommand({}).code, 2);
  EXPECT_EQ(LogCommand({"bogus"}).code, 2);
  EXPECT_EQ(LogCommand({"show"}).code, 2);
  EXPECT_EQ(LogCommand({"merge", "out.log"}).code, 2);
  EXPECT_EQ(LogCommand({"show", "--nope", "x.log"}).code, 2);
  EXPECT_EQ(LogCommand({"show", "--target", "cuda model", "x.log"}).code, 2);
  EXPECT_EQ(LogCommand({"show", "/nonexistent/x.log"}).code, 1);
}

TEST(LogCliTest, ShowSeed) {
  CliRun r = LogCommand({"show", RepoData("seed-vgg16-v100.log")});
  ASSERT_EQ(r.code, 0);
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 24u);  // who wrote it, header, 22 distinct workloads
  EXPECT_EQ(lines[0], "written by TVM 0.7.dev1 (22 records)");
  EXPECT_NE(lines[1].find("GFLOP/S"), std::string::npos);
  const std::string& dense = lines[2];
  EXPECT_NE(dense.find("dense_large_batch.cuda"), std::string::npos) << dense;
  EXPECT_NE(dense.find("128x4096 float32, 1000x4096 float32"), std::string::npos) << dense;
  EXPECT_NE(dense.find("cuda -model=unknown"), std::string::npos) << dense;
  EXPECT_NE(dense.find("0.8543 ms"), std::string::npos) << dense;
  EXPECT_NE(dense.find("1227.5"), std::string::npos) << dense;  // 2*128*1000*4096 / 0.854 ms
  EXPECT_NE(dense.find("tile_x=[-1,2,4,1] tile_y=[-1,2,4,1] tile_k=[-1,8,2]"), std::string::npos);
}

// A log TVM 0.8 wrote: its dense records carry the ".gpu" task names, shown as written, and read as
// TVM 0.7's templates (the same best choice and config as the .cuda records they copy).
TEST(LogCliTest, ShowNamesTheTvmReleaseAndLaterTaskNames) {
  std::ifstream in(RepoData("seed-vgg16-v100.log"));
  const std::string path = ::testing::TempDir() + "/tvm08.log";
  std::ofstream out(path);
  int lines_written = 0;
  for (std::string line; std::getline(in, line) && lines_written < 2; ++lines_written) {
    for (const char* task : {"dense_large_batch", "dense_small_batch"}) {
      const std::string from = absl::StrCat("\"", task, ".cuda\"");
      if (size_t at = line.find(from); at != std::string::npos) {
        line.replace(at, from.size(), absl::StrCat("\"", task, ".gpu\""));
      }
    }
    const std::string version = "\"0.7.dev1\"";
    line.replace(line.find(version), version.size(), "\"0.8.0\"");
    out << line << "\n";
  }
  out.close();
  CliRun r = LogCommand({"show", path});
  ASSERT_EQ(r.code, 0);
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "written by TVM 0.8.0 (2 records); later TVM task names read as the same templates: "
            "dense_large_batch.gpu as dense_large_batch.cuda, dense_small_batch.gpu as "
            "dense_small_batch.cuda");
  EXPECT_NE(lines[2].find("dense_large_batch.gpu"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("tile_x=[-1,2,4,1] tile_y=[-1,2,4,1] tile_k=[-1,8,2]"), std::string::npos)
      << lines[2];
  EXPECT_EQ(LogCommand({"check", path}).code, 0);
}

TEST(LogCliTest, CheckSeedAndBadFile) {
  CliRun r = LogCommand({"check", RepoData("seed-vgg16-v100.log")});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("22 records checked: 22 ok"), std::string::npos) << r.out;
  r = LogCommand({"check", ::tunejit::testing::RepoTestData("autotvm/bad_lines.log")});
  EXPECT_EQ(r.code, 1);
}

// TopHub cuda_v0.10's batch_matmul.cuda records: every one consistent with our space, and shown
// with its FLOP rate.
TEST(LogCliTest, BatchMatmulRecords) {
  const std::string path =
      ::tunejit::testing::RepoTestData("autotvm/tophub_v0.10_batch_matmul.log");
  CliRun r = LogCommand({"check", path});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("18 records checked: 18 ok"), std::string::npos) << r.out;
  r = LogCommand({"show", path});
  ASSERT_EQ(r.code, 0);
  std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 20u);  // who wrote it, header, 18 workloads
  EXPECT_EQ(lines[0], "written by TVM 0.7.dev1 (18 records)");
  const std::string& last = lines.back();
  EXPECT_NE(last.find("1x9216x133 float32, 1x133x133 float32"), std::string::npos) << last;
  EXPECT_NE(last.find("0.0644 ms"), std::string::npos) << last;
  EXPECT_NE(last.find("5064.2"), std::string::npos) << last;  // 2*9216*133*133 / 64.4 us
  EXPECT_NE(last.find("tile_y=[-1,16,3] tile_x=[-1,19,7] tile_k=[-1,19]"), std::string::npos);
}

// The shipped tensor-core logs hold records from before the later knobs (halo, swap_ab, tile_b,
// ...): valid, counted in a note, exit 0.
TEST(LogCliTest, CheckShippedLogsCountsOlderRecordsAsValid) {
  for (const char* log : {"vgg16-fp16-wgmma.log", "vgg16-int8-wgmma.log",
                          "vgg16-int8-h200-5min.log", "seed-vgg16-v100.log"}) {
    CliRun r = LogCommand({"check", RepoData(log)});
    EXPECT_EQ(r.code, 0) << log << "\n" << r.out;
    EXPECT_EQ(r.out.find("inconsistent"), std::string::npos) << log << "\n" << r.out;
  }
  CliRun r = LogCommand({"check", RepoData("vgg16-fp16-wgmma.log")});
  EXPECT_NE(r.out.find(" lacks later knobs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("records predate knobs added later; they are valid"), std::string::npos)
      << r.out;
}

TEST(LogCliTest, CheckTopHubReportsSwappedLabelsAndTheOneRealDefect) {
  std::string path = ::tunejit::testing::SharedData("tophub/cuda_v0.08.log");
  if (path.empty()) GTEST_SKIP() << "shared TopHub data absent";
  CliRun r = LogCommand({"check", path});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("conv2d_nchw.cuda: swapped tile_rx/tile_ry labels"), std::string::npos);
  EXPECT_NE(r.out.find(":336: conv2d_nchw.cuda: inconsistent: index 124107"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("688 records checked: 1 inconsistent, 1 no space, 660 ok, 26 swapped"),
            std::string::npos)
      << r.out;
}

TEST(LogCliTest, MergeDedupesAndKeepsOrder) {
  std::string out = absl::StrCat(::testing::TempDir(), "/merged.", ::getpid(), ".log");
  std::filesystem::remove(out);
  std::string seed = RepoData("seed-vgg16-v100.log");
  CliRun r = LogCommand({"merge", out, seed, seed});
  ASSERT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("appended 22 records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("22 duplicates skipped"), std::string::npos) << r.out;
  r = LogCommand({"merge", out, seed});
  EXPECT_NE(r.out.find("appended 0 records"), std::string::npos) << r.out;
  std::ifstream a(out), b(seed);
  std::string merged((std::istreambuf_iterator<char>(a)), {});
  std::string original((std::istreambuf_iterator<char>(b)), {});
  EXPECT_EQ(merged, original);
  std::filesystem::remove(out);
}

// --best N keeps each workload's N fastest measured records (per measuring GPU): a log a fraction
// of the size from which ApplyHistoryBest chooses the same record for every workload.
TEST(LogCliTest, MergeBestKeepsTheFastestAndTheSameChoices) {
  const std::string out = absl::StrCat(::testing::TempDir(), "/best.", ::getpid(), ".log");
  std::filesystem::remove(out);
  const std::string shipped = RepoData("vgg16-fp16-wgmma.log");
  EXPECT_EQ(LogCommand({"merge", "--best", "-1", out, shipped}).code, 2);
  CliRun r = LogCommand({"merge", "--best", "3", out, shipped});
  ASSERT_EQ(r.code, 0) << r.out;
  autotvm::LogContents whole, best;
  ASSERT_TRUE(autotvm::LoadLogFile(shipped, {}, &whole).ok());
  ASSERT_TRUE(autotvm::LoadLogFile(out, {}, &best).ok());
  std::map<std::string, int> per_workload;
  for (const autotvm::LoadedRecord& rec : best.records) {
    EXPECT_TRUE(rec.record.ok());
    ++per_workload[absl::StrCat(rec.record.workload.Key(), " on ", rec.record.device)];
  }
  autotvm::HistoryBest from_whole, from_best;
  from_whole.AddAll(whole);
  from_best.AddAll(best);
  std::set<std::string> workloads;
  for (const autotvm::LoadedRecord& rec : whole.records) {
    const std::string key = absl::StrCat(rec.record.workload.Key(), " on ", rec.record.device);
    if (!workloads.insert(key).second) continue;
    EXPECT_LE(per_workload[key], 3) << key;
    const autotvm::Target target = *autotvm::ParseTarget(rec.record.target.text);
    const autotvm::Decision a = from_whole.Query(target, rec.record.workload);
    const autotvm::Decision b = from_best.Query(target, rec.record.workload);
    ASSERT_NE(a.best, nullptr) << key;
    ASSERT_NE(b.best, nullptr) << key;
    EXPECT_EQ(autotvm::SerializeRecord(a.best->record), autotvm::SerializeRecord(b.best->record));
  }
  EXPECT_EQ(per_workload.size(), workloads.size());
  EXPECT_LT(best.records.size(), whole.records.size() / 10);
  std::filesystem::remove(out);
}

// --best N counts per measuring GPU: a log merged from two GPUs' tuning keeps each GPU's fastest
// records, so that each GPU's own choice (HistoryBest::PreferDevice) survives.
TEST(LogCliTest, MergeBestKeepsEachGpusFastest) {
  const std::string dir = ::testing::TempDir();
  const std::string two = absl::StrCat(dir, "/two_gpus.", ::getpid(), ".log");
  const std::string out = absl::StrCat(dir, "/two_gpus_best.", ::getpid(), ".log");
  std::filesystem::remove(out);
  {
    std::ifstream shipped(RepoData("vgg16-fp16-wgmma.log"));
    std::ofstream o(two);
    std::string line;
    const std::string h200 = "\"device\": \"NVIDIA H200\"";
    for (int i = 0; i < 200 && std::getline(shipped, line); ++i) {
      o << line << "\n";
      const size_t at = line.find(h200);
      ASSERT_NE(at, std::string::npos) << line;
      o << line.replace(at, h200.size(), "\"device\": \"NVIDIA H100 80GB HBM3\"") << "\n";
    }
  }
  ASSERT_EQ(LogCommand({"merge", "--best", "1", out, two}).code, 0);
  autotvm::LogContents whole, best;
  ASSERT_TRUE(autotvm::LoadLogFile(two, {}, &whole).ok());
  ASSERT_TRUE(autotvm::LoadLogFile(out, {}, &best).ok());
  std::map<std::string, std::set<std::string>> devices;  // workload -> devices kept
  for (const autotvm::LoadedRecord& rec : best.records) {
    EXPECT_TRUE(devices[rec.record.workload.Key()].insert(rec.record.device).second);
  }
  ASSERT_FALSE(devices.empty());
  for (const std::string gpu : {"NVIDIA H200", "NVIDIA H100 80GB HBM3"}) {
    autotvm::HistoryBest from_whole, from_best;
    from_whole.AddAll(whole);
    from_best.AddAll(best);
    from_whole.PreferDevice(gpu);
    from_best.PreferDevice(gpu);
    for (const autotvm::LoadedRecord& rec : best.records) {
      EXPECT_EQ(devices[rec.record.workload.Key()].size(), 2u);
      const autotvm::Decision a = from_whole.Query(rec.record.target, rec.record.workload);
      const autotvm::Decision b = from_best.Query(rec.record.target, rec.record.workload);
      ASSERT_NE(b.best, nullptr);
      EXPECT_EQ(b.best->record.device, gpu);
      EXPECT_EQ(autotvm::SerializeRecord(a.best->record), autotvm::SerializeRecord(b.best->record));
    }
  }
  std::filesystem::remove(two);
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace tunejit::cli
