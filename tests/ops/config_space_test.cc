// The op templates' config spaces: TVM's mixed-radix spaces, the seed's index <-> entity table
// (docs/tvm-templates.md section 1.7), records checked against them, and TopHub consistency.
#include "autotvm/config_space.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "autotvm/log_file.h"
#include "autotvm/record.h"
#include "autotvm/record_check.h"
#include "gtest/gtest.h"
#include "ops/op_template.h"
#include "tests/testing/test_data.h"

namespace tunejit::autotvm {
namespace {

using Splits = std::vector<std::vector<int64_t>>;

std::vector<LoadedRecord> SeedRecords() {
  LogContents log;
  EXPECT_TRUE(LoadLogFile(::tunejit::testing::RepoData("seed-vgg16-v100.log"), {}, &log).ok());
  return log.records;
}

// Section 1.7's table: digits (position / list length) per knob, in definition order.
TEST(ConfigSpaceTest, SeedIndexEntityTable) {
  struct Row {
    int64_t index;
    std::vector<std::pair<int64_t, int64_t>> digits;
  };
  const Row kRows[] = {
      {771496, {{16, 120}, {29, 400}, {16, 91}}},
      {5, {{5, 13}}},
      {2023458, {{18, 120}, {27, 455}, {37, 91}}},
      {9, {{9, 13}}},
      {7647258, {{18, 120}, {27, 455}, {140, 330}}},
      {22, {{22, 30}}},
      {3764134, {{0, 1}, {154, 220}, {309, 1200}, {4, 10}, {1, 3}, {0, 2}}},
      {13276589889,
       {{9, 120},
        {49, 120},
        {1, 16},
        {8, 16},
        {1, 2},
        {0, 8},
        {1, 2},
        {0, 2},
        {2, 6},
        {1, 2},
        {0, 2},
        {2, 3}}},
      {199135959, {{15, 84}, {74, 224}, {55, 224}, {1, 2}, {1, 2}, {1, 2}, {2, 3}, {1, 2}}},
      {3785449, {{0, 1}, {73, 84}, {264, 5600}, {0, 2}, {1, 3}, {1, 2}}},
  };
  std::map<int64_t, const LoadedRecord*> by_index;
  std::vector<LoadedRecord> records = SeedRecords();
  for (const LoadedRecord& r : records) by_index[r.record.index] = &r;
  for (const Row& row : kRows) {
    ASSERT_TRUE(by_index.count(row.index)) << row.index;
    const Record& rec = by_index[row.index]->record;
    absl::StatusOr<ConfigSpace> space = BuildConfigSpace(rec.workload, rec.target);
    ASSERT_TRUE(space.ok()) << space.status();
    ASSERT_EQ(space->knobs().size(), row.digits.size()) << row.index;
    std::vector<int64_t> digits = space->DigitsOf(row.index);
    for (size_t j = 0; j < row.digits.size(); ++j) {
      EXPECT_EQ(digits[j], row.digits[j].first) << row.index << " knob " << j;
      EXPECT_EQ(static_cast<int64_t>(space->knobs()[j].candidates.size()), row.digits[j].second)
          << row.index << " knob " << space->knobs()[j].name;
    }
    // index -> entity equals the logged entity, entity -> index gives the logged index.
    absl::StatusOr<ConfigEntity> entity = space->Get(row.index);
    ASSERT_TRUE(entity.ok());
    EXPECT_EQ(entity->ToJson(), rec.config.ToJson()) << row.index;
    EXPECT_EQ(*space->IndexOf(rec.config), row.index);
  }
}

TEST(ConfigSpaceTest, AllSeedRecordsAreConsistentAndSizesMatch) {
  for (const LoadedRecord& r : SeedRecords()) {
    RecordCheck c = ::tunejit::CheckRecord(r.record);
    EXPECT_EQ(c.verdict, RecordCheck::kConsistent) << r.line << ": " << c.message;
    if (r.record.index == 13276589889) {
      EXPECT_EQ(c.space_size, 16986931200);
    }
    if (r.record.index == 3764134) {
      EXPECT_EQ(c.space_size, 1 * 220 * 1200 * 10 * 3 * 2);
    }
    if (r.record.index == 3785449) {
      EXPECT_EQ(c.space_size, 1 * 84 * 5600 * 2 * 3 * 2);
    }
    if (r.record.index == 771496) {
      EXPECT_EQ(c.space_size, 120 * 400 * 91);
    }
    if (r.record.index == 7647258) {
      EXPECT_EQ(c.space_size, 120 * 455 * 330);
    }
  }
}

// A record written before the space's last knobs existed lacks them: valid when the missing
// knobs are the last ones (read as their first values, the index is unchanged); a record lacking
// a knob in the middle is not.
TEST(RecordCheckTest, MissingLaterKnobsAreValidMissingMiddleOnesAreNot) {
  absl::StatusOr<Record> r = ParseRecordLine(
      R"({"input": ["cuda -model=unknown", "conv2d_nhwc_wgmma.cuda", [["TENSOR", [128, 14, 14, )"
      R"(512], "float16"], ["TENSOR", [512, 3, 3, 512], "float16"], [1, 1], [1, 1, 1, 1], [1, )"
      R"(1], "float16"], {}], "config": {"index": 589, "code_hash": null, "entity": [["tile_h", )"
      R"("ot", 16], ["tile_w", "ot", 16], ["tile_n", "ot", 128], ["stages", "ot", 4], )"
      R"(["consumer_wg", "ot", 2], ["pingpong", "ot", 0], ["im2col", "ot", 0], ["cluster", )"
      R"("ot", 1]]}, "result": [[0.0002], 0, 0.006, 1796212619.9], "version": 0.2, )"
      R"("tvm_version": "0.7.dev1"})");
  ASSERT_TRUE(r.ok()) << r.status();
  RecordCheck c = ::tunejit::CheckRecord(*r);
  EXPECT_EQ(c.verdict, RecordCheck::kLacksLaterKnobs) << c.message;
  EXPECT_EQ(c.entity_index, 589);
  Record middle = *r;  // without `stages`, the fourth of eleven knobs
  middle.config.knobs.erase(middle.config.knobs.begin() + 3);
  EXPECT_EQ(::tunejit::CheckRecord(middle).verdict, RecordCheck::kInconsistent);
  Record wrong_index = *r;
  wrong_index.index = 590;
  EXPECT_EQ(::tunejit::CheckRecord(wrong_index).verdict, RecordCheck::kInconsistent);
}

TEST(ConfigSpaceTest, OuterSplitFactorIsIgnoredAndKnobOrderIrrelevant) {
  std::vector<LoadedRecord> records = SeedRecords();
  const Record& conv = records.back().record;  // conv2d_nchw.cuda, 199135959
  absl::StatusOr<ConfigSpace> space = BuildConfigSpace(conv.workload, conv.target);
  ASSERT_TRUE(space.ok());
  ConfigEntity e = conv.config;
  e.knobs[0].value[0] = 4;  // tile_f [4, 4, 4, 1]: the real outer extent, as TopHub stores it
  std::swap(e.knobs[0], e.knobs[7]);
  EXPECT_EQ(*space->IndexOf(e), 199135959);
  e.knobs[2].value = Json::array({-1, 3, 32, 1});  // not a candidate of OW = 224
  absl::StatusOr<int64_t> bad = space->IndexOf(e);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("tile_x"), std::string::npos) << bad.status();
  e.knobs.pop_back();
  EXPECT_EQ(space->IndexOf(e).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(space->Get(space->size()).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(space->Get(-1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(ConfigSpaceTest, UnrollExplicitDependsOnTargetName) {
  std::vector<LoadedRecord> records = SeedRecords();
  const Record& conv = records.back().record;
  absl::StatusOr<ConfigSpace> cuda = BuildConfigSpace(conv.workload, *ParseTarget("cuda"));
  absl::StatusOr<ConfigSpace> nvptx = BuildConfigSpace(conv.workload, *ParseTarget("nvptx"));
  ASSERT_TRUE(cuda.ok() && nvptx.ok());
  EXPECT_EQ(cuda->FindKnob("unroll_explicit")->candidates.size(), 2u);
  EXPECT_EQ(nvptx->FindKnob("unroll_explicit")->candidates.size(), 1u);
  EXPECT_EQ(cuda->size(), 2 * nvptx->size());
  // The same entity (unroll_explicit = 1) has a different index in each space.
  EXPECT_NE(*cuda->IndexOf(conv.config), *nvptx->IndexOf(conv.config));
}

TEST(ConfigSpaceTest, RandomIndexEntityIdentityAndNeighbours) {
  std::mt19937_64 rng(42);
  for (const LoadedRecord& r : SeedRecords()) {
    absl::StatusOr<ConfigSpace> space = BuildConfigSpace(r.record.workload, r.record.target);
    ASSERT_TRUE(space.ok());
    for (int i = 0; i < 300; ++i) {
      int64_t index = space->RandomIndex(rng);
      ASSERT_GE(index, 0);
      ASSERT_LT(index, space->size());
      absl::StatusOr<ConfigEntity> e = space->Get(index);
      ASSERT_TRUE(e.ok());
      ASSERT_EQ(*space->IndexOf(*e), index);
      int64_t n = space->RandomNeighbor(index, rng);
      std::vector<int64_t> a = space->DigitsOf(index), b = space->DigitsOf(n);
      int changed = 0;
      for (size_t j = 0; j < a.size(); ++j) changed += a[j] != b[j];
      EXPECT_EQ(changed, space->size() > 1 ? 1 : 0);
    }
    int64_t index = space->RandomIndex(rng);
    std::vector<int64_t> all = space->Neighbors(index);
    int64_t expected = 0;
    for (const KnobSpace& k : space->knobs()) expected += k.candidates.size() - 1;
    EXPECT_EQ(static_cast<int64_t>(all.size()), expected);
    EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), all.size());
    EXPECT_EQ(std::count(all.begin(), all.end(), index), 0);
  }
}

TEST(ConfigSpaceTest, WinogradTileSizeAndFilteredTileB) {
  // H % 8 == 0 -> m = 4 (alpha 6, 36 batches); otherwise m = 2 (alpha 4).
  Json args = Json::parse(
      R"([["TENSOR", [1, 64, 56, 56], "float32"], ["TENSOR", [64, 64, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  Target cuda = *ParseTarget("cuda");
  absl::StatusOr<ConfigSpace> s = BuildConfigSpace({"conv2d_nchw_winograd.cuda", args}, cuda);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->FindKnob("tile_b")->axis_length, 36);
  EXPECT_EQ(s->FindKnob("tile_b")->candidates, (Splits{{-1, 1, 1, 1}}));
  EXPECT_EQ(s->FindKnob("tile_x")->axis_length, 14 * 14);
  args[0][1] = Json::array({1, 64, 7, 7});
  s = BuildConfigSpace({"conv2d_nchw_winograd.cuda", args}, cuda);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->FindKnob("tile_b")->axis_length, 16);
  EXPECT_EQ(s->FindKnob("tile_x")->axis_length, 4 * 4);  // ceil(7 / 2)^2
  EXPECT_EQ(s->FindKnob("auto_unroll_max_step")->candidates, (Splits{{0}, {128}, {1500}}));
}

TEST(ConfigSpaceTest, DepthwiseAndInt8Knobs) {
  Target cuda = *ParseTarget("cuda");
  Json dw = Json::parse(
      R"([["TENSOR", [1, 32, 112, 112], "float32"], ["TENSOR", [32, 1, 3, 3], "float32"], [1, 1], [1, 1, 1, 1], [1, 1], "float32"])");
  absl::StatusOr<ConfigSpace> s = BuildConfigSpace({"depthwise_conv2d_nchw.cuda", dw}, cuda);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->ToString(),
            "tile_f sp 56 x tile_y sp 140 x tile_x sp 140 x auto_unroll_max_step ot 3 x "
            "unroll_explicit ot 2 = 6585600");
  EXPECT_EQ(s->FindKnob("auto_unroll_max_step")->candidates, (Splits{{0}, {256}, {1500}}));
  std::vector<LoadedRecord> seed = SeedRecords();
  const Record& int8 = seed[7].record;
  ASSERT_EQ(int8.workload.task_name, "conv2d_NCHWc_int8.cuda");
  s = BuildConfigSpace(int8.workload, int8.target);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->FindKnob("tile_f")->axis_length, 128);   // CO / 4
  EXPECT_EQ(s->FindKnob("tile_rc")->axis_length, 128);  // C / 4
  EXPECT_EQ(s->FindKnob("reorder_inner")->candidates,
            (Splits{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}));
  EXPECT_EQ(s->FindKnob("unroll_explicit"), nullptr);
  EXPECT_EQ(BuildConfigSpace({"conv2d_transpose_nchw.cuda", Json::array()}, cuda).status().code(),
            absl::StatusCode::kUnimplemented);
}

// Every error-free TopHub record of a supported task checks out (swapped-label records are
// recognised as such); sampled index <-> entity pairs are exact.
TEST(ConfigSpaceTest, TopHubRecordsCheckOut) {
  std::map<std::string, int> verdicts;
  std::mt19937_64 rng(7);
  bool any = false;
  for (int v = 8; v <= 10; ++v) {
    std::string path = ::tunejit::testing::SharedData(
        absl::StrCat("tophub/cuda_v0.", v == 10 ? "" : "0", v, ".log"));
    if (path.empty()) continue;
    any = true;
    LogContents log;
    ASSERT_TRUE(LoadLogFile(path, {}, &log).ok());
    for (const LoadedRecord& r : log.records) {
      if (!r.record.ok()) continue;
      RecordCheck c = ::tunejit::CheckRecord(r.record);
      ++verdicts[absl::StrCat(v, " ", r.record.workload.task_name, " ",
                              RecordCheckVerdictName(c.verdict))];
      if (c.verdict == RecordCheck::kInconsistent) {
        // The one known defect (the spec's "529 of 530"): a tx2 record whose logged index
        // decodes tile_f [-1, 2, 16, 1] while its entity says [8, 2, 4, 2]. TVM applies the
        // entity by name, so the record is still usable; the check must flag it.
        EXPECT_EQ(r.line, 336) << path << ": " << c.message;
        EXPECT_EQ(r.record.index, 124107);
        EXPECT_EQ(c.entity_index, 124130);
        EXPECT_NE(c.message.find(R"(["tile_f", "sp", [-1, 2, 16, 1]])"), std::string::npos);
      }
      if (c.verdict == RecordCheck::kConsistent && rng() % 8 == 0) {
        absl::StatusOr<ConfigSpace> space = BuildConfigSpace(r.record.workload, r.record.target);
        ASSERT_TRUE(space.ok());
        absl::StatusOr<ConfigEntity> e = space->Get(r.record.index);
        ASSERT_TRUE(e.ok());
        EXPECT_EQ(*space->IndexOf(*e), r.record.index);
        EXPECT_EQ(*space->IndexOf(r.record.config), r.record.index);
      }
    }
  }
  if (!any) GTEST_SKIP() << "shared TopHub data absent";
  for (const auto& [k, n] : verdicts) std::cout << k << ": " << n << "\n";
  // cuda_v0.08 (section 8): 530 conv2d_nchw, 60 winograd, 97 depthwise records.
  EXPECT_EQ(verdicts["8 conv2d_nchw.cuda ok"], 503);
  EXPECT_EQ(verdicts["8 conv2d_nchw.cuda swapped tile_rx/tile_ry labels"], 26);
  EXPECT_EQ(verdicts["8 conv2d_nchw.cuda inconsistent"], 1);
  EXPECT_EQ(verdicts["8 conv2d_nchw_winograd.cuda ok"], 60);
  EXPECT_EQ(verdicts["8 depthwise_conv2d_nchw.cuda ok"], 97);
  EXPECT_EQ(verdicts["10 conv2d_nchw_winograd.cuda ok"], 95);
  EXPECT_EQ(verdicts["10 batch_matmul.cuda ok"], 18);  // every one (section 8)
}

}  // namespace
}  // namespace tunejit::autotvm
