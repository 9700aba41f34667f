// ApplyHistoryBest semantics and the choice across implementations of one op.
#include "autotvm/dispatch.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/test_data.h"

namespace tunejit::autotvm {
namespace {

LogContents Seed() {
  LogContents log;
  EXPECT_TRUE(LoadLogFile(::tunejit::testing::RepoData("seed-vgg16-v100.log"), {}, &log).ok());
  return log;
}

// A copy of the dense_small_batch seed record with another target, cost and error.
Record Variant(const std::string& target, double cost, int error_no = 0, int64_t index = 5) {
  Record r = Seed().records[1].record;
  r.target = *ParseTarget(target);
  r.result.costs = {cost};
  r.result.error_no = error_no;
  r.index = index;
  return r;
}

bool Contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const std::string& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

TEST(HistoryBestTest, ErrorRecordsAreSkippedEvenWhenFaster) {
  HistoryBest best;
  best.Add(Variant("cuda", 1e-6, kInstantiationError, 1));
  best.Add(Variant("cuda", 2e-3, kNoError, 2));
  Decision d = best.Query(*ParseTarget("cuda"), Variant("cuda", 0).workload);
  ASSERT_NE(d.best, nullptr);
  EXPECT_EQ(d.best->record.index, 2);
  EXPECT_EQ(d.matched_by, "key cuda");
  ASSERT_EQ(d.reasons.size(), 2u);
  EXPECT_NE(d.reasons[0].find("skipped: error_no 1 (INSTANTIATION_ERROR)"), std::string::npos)
      << d.reasons[0];
  EXPECT_NE(d.reasons[1].find("chosen (key cuda)"), std::string::npos) << d.reasons[1];
}

TEST(HistoryBestTest, LowestMeanCostWinsAndTiesKeepTheFirst) {
  HistoryBest best;
  Record slow = Variant("cuda", 3e-3, kNoError, 1);
  slow.result.costs = {1e-3, 5e-3};  // mean 3 ms
  best.Add(slow);
  best.Add(Variant("cuda", 2e-3, kNoError, 2));
  best.Add(Variant("cuda", 2e-3, kNoError, 3));  // tie: the earlier one stays
  best.Add(Variant("cuda", 2.5e-3, kNoError, 4));
  Decision d = best.Query(*ParseTarget("cuda -model=unknown"), Variant("cuda", 0).workload);
  ASSERT_NE(d.best, nullptr);
  EXPECT_EQ(d.best->record.index, 2);
  EXPECT_DOUBLE_EQ(d.cost(), 2e-3);
  EXPECT_TRUE(Contains(d.reasons, "skipped: slower (3 ms > 2 ms)"));
  EXPECT_TRUE(Contains(d.reasons, "ties the chosen record"));
}

TEST(HistoryBestTest, ModelMapFirstThenKeysAcrossModels) {
  HistoryBest best;
  best.Add(Variant("cuda -model=v100", 2e-3, kNoError, 1));
  best.Add(Variant("cuda -model=titanx", 1e-3, kNoError, 2));
  best.Add(Variant("cuda -model=unknown", 1.5e-3, kNoError, 3));
  Workload w = Variant("cuda", 0).workload;
  Decision d = best.Query(*ParseTarget("cuda -model=v100"), w);
  ASSERT_NE(d.best, nullptr);
  EXPECT_EQ(d.best->record.index, 1);  // by model, although slower
  EXPECT_EQ(d.matched_by, "model v100");
  EXPECT_TRUE(Contains(d.reasons, "skipped: model titanx"));
  // Unknown or other models go through the "cuda" key: the fastest of any model.
  for (const char* t : {"cuda -model=unknown", "cuda -model=1080ti", "nvptx", "cuda"}) {
    d = best.Query(*ParseTarget(t), w);
    ASSERT_NE(d.best, nullptr) << t;
    EXPECT_EQ(d.best->record.index, 2) << t;
    EXPECT_EQ(d.matched_by, "key cuda") << t;
  }
  // "unknown" is never a by-model key: a record of model unknown is only found by key.
  HistoryBest only_unknown;
  only_unknown.Add(Variant("cuda -model=unknown", 1e-3, kNoError, 7));
  d = only_unknown.Query(*ParseTarget("cuda -model=unknown"), w);
  ASSERT_NE(d.best, nullptr);
  EXPECT_EQ(d.matched_by, "key cuda");
  // No common key: nothing found.
  d = best.Query(*ParseTarget("llvm"), w);
  EXPECT_EQ(d.best, nullptr);
  EXPECT_TRUE(Contains(d.reasons, "has no model or key"));
  // The -keys option adds keys: a record with -keys=mygpu matches a target with that key only.
  HistoryBest custom;
  custom.Add(Variant("opencl -keys=mygpu", 1e-3, kNoError, 9));
  EXPECT_EQ(custom.Query(*ParseTarget("cuda"), w).matched_by,
            "key gpu");  // opencl keys: opencl, gpu
  EXPECT_EQ(custom.Query(*ParseTarget("llvm -keys=mygpu"), w).matched_by, "key mygpu");
}

// A log merged from two GPUs' tuning: each GPU takes its own fastest record, not the other
// GPU's faster-looking one; a GPU with no records of its own takes the fastest of all.
TEST(HistoryBestTest, PreferredDeviceRecordsComeFirst) {
  auto measured_on = [](const std::string& device, double cost, int64_t index, int error = 0) {
    Record r = Variant("cuda -model=unknown", cost, error, index);
    r.gpu = 0;
    r.device = device;
    return r;
  };
  HistoryBest best;
  best.Add(measured_on("NVIDIA H200", 1e-3, 1));
  best.Add(measured_on("NVIDIA H100 80GB HBM3", 1.4e-3, 2));
  best.Add(measured_on("NVIDIA H100 80GB HBM3", 1.2e-3, 3));
  best.Add(measured_on("NVIDIA H100 80GB HBM3", 1e-6, 4, kRuntimeDevice));
  best.Add(Variant("cuda", 0.9e-3, kNoError, 5));  // no device named (a TVM record)
  const Workload w = Variant("cuda", 0).workload;
  const Target cuda = *ParseTarget("cuda");

  EXPECT_EQ(best.Query(cuda, w).best->record.index, 5);  // no preference: the fastest of all

  best.PreferDevice("NVIDIA H100 80GB HBM3");
  Decision d = best.Query(cuda, w);
  ASSERT_NE(d.best, nullptr);
  EXPECT_EQ(d.best->record.index, 3);
  EXPECT_EQ(d.matched_by, "device NVIDIA H100 80GB HBM3, key cuda");
  EXPECT_TRUE(Contains(d.reasons, "skipped: measured on NVIDIA H200 (NVIDIA H100 80GB HBM3's"));
  EXPECT_TRUE(Contains(d.reasons, "skipped: measured on an unnamed GPU"));
  EXPECT_TRUE(Contains(d.reasons, "skipped: slower (1.4 ms > 1.2 ms)"));
  EXPECT_TRUE(Contains(d.reasons, "skipped: error_no 4"));

  best.PreferDevice("NVIDIA H200");
  EXPECT_EQ(best.Query(cuda, w).best->record.index, 1);

  best.PreferDevice("NVIDIA A100-SXM4-80GB");  // no records of its own
  d = best.Query(cuda, w);
  EXPECT_EQ(d.best->record.index, 5);
  EXPECT_EQ(d.matched_by, "key cuda");

  // The preference stays within the target's keys.
  best.PreferDevice("NVIDIA H200");
  EXPECT_EQ(best.Query(*ParseTarget("llvm"), w).best, nullptr);
}

TEST(HistoryBestTest, WorkloadMatchIsExact) {
  HistoryBest best;
  best.AddAll(Seed());
  Record conv = Seed().records.back().record;
  Workload other = conv.workload;
  other.args[3] = Json::array({1, 1});  // 2-element padding: a different workload for TVM
  EXPECT_EQ(best.Query(conv.target, other).best, nullptr);
  EXPECT_NE(best.Query(conv.target, conv.workload).best, nullptr);
}

// Among a node's implementations: the fastest record wins; with none, the highest priority, the
// first listed of equal ones.
TEST(ChooseImplementationTest, FastestRecordElseHighestPriority) {
  HistoryBest best;
  best.AddAll(Seed());
  DenseParams dense{128, 1000, 4096};
  const std::vector<Implementation> impls = {
      {MakeDenseWorkload("dense_small_batch.cuda", dense), 10},
      {MakeDenseWorkload("dense_large_batch.cuda", dense), 15}};
  // dense [128,4096] x [1000,4096]: large batch 0.854 ms beats small batch 2.32 ms.
  OpChoice c = ChooseImplementation(best, *ParseTarget("cuda -model=v100"), impls);
  ASSERT_EQ(c.per_implementation.size(), 2u);
  EXPECT_EQ(c.chosen, 1);
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.per_implementation[1].best->record.index, 771496);
  EXPECT_NE(c.reasons[0].find("dense_small_batch.cuda: skipped: slower"), std::string::npos)
      << c.reasons[0];
  HistoryBest empty;
  c = ChooseImplementation(empty, *ParseTarget("cuda"), impls);
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.chosen, 1);  // priority 15
  c = ChooseImplementation(empty, *ParseTarget("cuda"), {impls[0], {impls[1].workload, 10}});
  EXPECT_EQ(c.chosen, 0);  // a tie: the first listed
}

}  // namespace
}  // namespace tunejit::autotvm
