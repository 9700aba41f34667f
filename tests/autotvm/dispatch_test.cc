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

TEST(ChooseImplementationTest, SeedDenseAndConvChoices) {
  HistoryBest best;
  best.AddAll(Seed());
  Target target = *ParseTarget("cuda -model=v100");
  // dense [128,4096] x [1000,4096]: large batch 0.854 ms beats small batch 2.32 ms.
  DenseParams dense{128, 1000, 4096};
  OpChoice c = ChooseImplementation(best, target, DenseImplementations(dense));
  ASSERT_EQ(c.per_implementation.size(), 2u);
  ASSERT_EQ(c.chosen, 1);
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.per_implementation[1].best->record.index, 771496);
  EXPECT_NE(c.reasons[0].find("dense_small_batch.cuda: skipped: slower"), std::string::npos)
      << c.reasons[0];
  // int8 conv [128,512,14,14]: NCHWc_int8 2.70 ms beats winograd 4.75 ms.
  Conv2dParams conv;
  conv.n = 128, conv.ci = 512, conv.h = 14, conv.w = 14, conv.co = 512, conv.kh = 3, conv.kw = 3;
  conv.pad_top = conv.pad_left = conv.pad_bottom = conv.pad_right = 1;
  conv.data_dtype = conv.kernel_dtype = "int8";
  conv.out_dtype = "int32";
  c = ChooseImplementation(best, target, Conv2dImplementations(conv));
  ASSERT_EQ(c.per_implementation.size(), 2u);
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.per_implementation[0].best->record.workload.task_name, "conv2d_NCHWc_int8.cuda");
  EXPECT_EQ(c.per_implementation[1].best->record.index, 3764134);
  // [128,128,56,56] x [256,128]: only a winograd record exists, so winograd wins over the
  // higher-priority NCHWc_int8 implementation.
  conv.ci = 128, conv.h = conv.w = 56, conv.co = 256;
  c = ChooseImplementation(best, target, Conv2dImplementations(conv));
  EXPECT_EQ(c.chosen, 1);
  EXPECT_FALSE(c.fallback);
  EXPECT_EQ(c.reasons[0], "conv2d_NCHWc_int8.cuda: skipped: no record");
  // fp32 [128,3,224,224]: direct 2.44 ms beats winograd 13.8 ms.
  conv.ci = 3, conv.h = conv.w = 224, conv.co = 64;
  conv.data_dtype = conv.kernel_dtype = conv.out_dtype = "float32";
  c = ChooseImplementation(best, target, Conv2dImplementations(conv));
  EXPECT_EQ(c.chosen, 0);
  EXPECT_EQ(c.per_implementation[0].best->record.index, 199135959);
}

TEST(ChooseImplementationTest, NoRecordFallsBackToHighestPriority) {
  HistoryBest empty;
  DenseParams dense{64, 10, 32};
  OpChoice c = ChooseImplementation(empty, *ParseTarget("cuda"), DenseImplementations(dense));
  EXPECT_TRUE(c.fallback);
  EXPECT_EQ(c.chosen, 1);  // dense_large_batch.cuda, priority 15
  dense.m = 8;             // small batch only
  c = ChooseImplementation(empty, *ParseTarget("cuda"), DenseImplementations(dense));
  ASSERT_EQ(c.per_implementation.size(), 1u);
  EXPECT_EQ(c.chosen, 0);
  // 1x1 or strided convs get no winograd implementation.
  Conv2dParams conv;
  conv.n = 1, conv.ci = 8, conv.h = 8, conv.w = 8, conv.co = 8, conv.kh = 1, conv.kw = 1;
  EXPECT_EQ(Conv2dImplementations(conv).size(), 1u);
  conv.kh = conv.kw = 3;
  EXPECT_EQ(Conv2dImplementations(conv).size(), 2u);
  conv.stride_h = 2;
  EXPECT_EQ(Conv2dImplementations(conv).size(), 1u);
}

// tunejit's tensor-core implementations: only where the template can run (fp16 / int8 data, C a
// whole 16 bytes, groups 1, stride 1), with NHWC / OHWI workloads.
TEST(WgmmaImplementationsTest, ConvNeedsAlignedChannelsStrideOneAndNoGroups) {
  Conv2dParams p;
  p.n = 2, p.ci = 64, p.h = 14, p.w = 14, p.co = 72, p.kh = 3, p.kw = 3;
  p.data_dtype = p.kernel_dtype = "float16";
  std::vector<Implementation> impls = Conv2dWgmmaImplementations(p);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].workload.task_name, kConv2dNhwcWgmma);
  EXPECT_EQ(impls[0].workload.args[0][1], Json::array({2, 14, 14, 64}));  // NHWC
  EXPECT_EQ(impls[0].workload.args[1][1], Json::array({72, 3, 3, 64}));   // OHWI
  EXPECT_EQ(impls[0].workload.args.back(), "float32");
  absl::StatusOr<Conv2dParams> back = ParseConv2dWorkload(impls[0].workload);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->layout, "NHWC");
  EXPECT_EQ(back->ci, 64);
  EXPECT_EQ(back->co, 72);

  Conv2dParams q = p;
  q.ci = 12;  // 24 bytes: not a whole 16
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q = p;
  q.ci = 3;  // VGG-16's first conv
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q = p;
  q.stride_h = q.stride_w = 2;
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q = p;
  q.groups = 2;
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q = p;
  q.data_dtype = q.kernel_dtype = "float32";
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q = p;
  q.data_dtype = q.kernel_dtype = "int8";
  q.out_dtype = "int32";
  q.ci = 72;  // a whole 16 bytes of halves, not of int8
  EXPECT_TRUE(Conv2dWgmmaImplementations(q).empty());
  q.ci = 64;
  ASSERT_EQ(Conv2dWgmmaImplementations(q).size(), 1u);
}

TEST(WgmmaImplementationsTest, DenseNeedsKAWhole16Bytes) {
  DenseParams d{128, 1000, 4096};
  d.data_dtype = "float16";
  std::vector<Implementation> impls = DenseWgmmaImplementations(d);
  ASSERT_EQ(impls.size(), 1u);
  EXPECT_EQ(impls[0].workload.task_name, "dense_wgmma.cuda");
  d.k = 4100;
  EXPECT_TRUE(DenseWgmmaImplementations(d).empty());
  d.k = 4096;
  d.data_dtype = "float32";
  EXPECT_TRUE(DenseWgmmaImplementations(d).empty());
}

}  // namespace
}  // namespace tunejit::autotvm
