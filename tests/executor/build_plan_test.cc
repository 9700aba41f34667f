// The build plan file (executor/build_plan.h): encoding round trips; every damaged file (truncated,
// a flipped byte, another format version, a field of the wrong type) is refused with its reason;
// identity mismatches are worded for the user; save and load through files.
#include "executor/build_plan.h"

#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "autotvm/python_json.h"
#include "common/digest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

// The first line of a plan this tunejit writes.
std::string Header() { return absl::StrCat("tunejit build plan ", kBuildPlanFormatVersion, "\n"); }

BuildPlan SamplePlan() {
  BuildPlan plan;
  plan.identity = {.tunejit = "0.1.0 (abc1234)",
                   .graph = std::string(64, 'a'),
                   .weights = std::string(64, 'b'),
                   .mode = "int8_tensor_cores",
                   .options = std::string(64, 'c'),
                   .arch = "sm_90a",
                   .driver_version = 13000,
                   .nvrtc_version = 13000};
  plan.steps.push_back({.name = "input.int8", .kind = "quantize", .kernels = {"d1"}});
  plan.steps.push_back({.name = "features.0",
                        .kind = "conv2d",
                        .task_name = "conv2d_nhwc_wgmma.cuda",
                        .workload = R"([["TENSOR", [128, 64, 224, 224], "int8"]])",
                        .fallback = false,
                        .record = R"({"input": ["cuda", "x", [], {}], "config": {}})",
                        .record_label = "vgg16.log:3",
                        .record_cost = 1.25e-4,
                        .verified = true,
                        .kernels = {"k1", "k2"}});
  plan.steps.push_back({.name = "classifier.6",
                        .kind = "dense",
                        .task_name = "gemm_wgmma.cuda",
                        .workload = "[]",
                        .fallback = true,
                        .kernels = {"k3"}});
  plan.activation_scales = {0.0123f, 1.0f / 3.0f, 7.5e-6f};
  plan.arena_bytes = 123456789;
  return plan;
}

TEST(BuildPlanTest, EncodingRoundTripsExactly) {
  const BuildPlan plan = SamplePlan();
  const std::string bytes = EncodeBuildPlan(plan);
  EXPECT_THAT(bytes, ::testing::StartsWith(Header() + "{"));
  absl::StatusOr<BuildPlan> parsed = ParseBuildPlan(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, plan);  // float scales included, bit for bit
  EXPECT_EQ(EncodeBuildPlan(*parsed), bytes);
}

TEST(BuildPlanTest, EveryTruncationIsRefused) {
  const std::string bytes = EncodeBuildPlan(SamplePlan());
  for (size_t n = 0; n < bytes.size(); ++n) {
    absl::StatusOr<BuildPlan> parsed = ParseBuildPlan(bytes.substr(0, n));
    ASSERT_FALSE(parsed.ok()) << "length " << n;
    EXPECT_TRUE(absl::IsDataLoss(parsed.status())) << parsed.status();
  }
}

TEST(BuildPlanTest, EveryFlippedByteIsRefused) {
  const std::string bytes = EncodeBuildPlan(SamplePlan());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] ^= 0x01;
    absl::StatusOr<BuildPlan> parsed = ParseBuildPlan(damaged);
    EXPECT_FALSE(parsed.ok()) << "byte " << i;
  }
  std::string body_flip = bytes;
  body_flip[bytes.find("sm_90a")] = 'x';
  EXPECT_EQ(ParseBuildPlan(body_flip).status().message(), "corrupt (checksum mismatch)");
}

// A well-formed file (valid checksum) whose header or fields are not what this tunejit reads.
std::string Resealed(std::string header_and_body) {
  return header_and_body + "sha256 " + Sha256Hex(header_and_body) + "\n";
}

TEST(BuildPlanTest, AnotherFormatVersionIsRefusedByName) {
  // An older plan (its weights fingerprint is another function) and a newer one.
  EXPECT_EQ(kBuildPlanFormatVersion, 2);
  absl::StatusOr<BuildPlan> parsed = ParseBuildPlan(Resealed("tunejit build plan 1\n{}\n"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "format version 1; this tunejit reads 2");
  EXPECT_EQ(ParseBuildPlan(Resealed("tunejit build plan 3\n{}\n")).status().message(),
            "format version 3; this tunejit reads 2");
  EXPECT_THAT(ParseBuildPlan("GIF89a").status().message(), HasSubstr("not a build plan"));
}

TEST(BuildPlanTest, FieldsOfTheWrongShapeAreNamed) {
  const std::string bytes = EncodeBuildPlan(SamplePlan());
  const size_t header = bytes.find('\n') + 1;
  const size_t checksum = bytes.rfind("sha256 ");
  autotvm::Json body = autotvm::Json::parse(bytes.substr(header, checksum - header));
  struct Case {
    const char* pointer;
    autotvm::Json value;
    const char* reason;
  };
  const Case cases[] = {
      {"/steps/1/kernels", autotvm::Json::array({1, 2}), "steps[1].kernels: not a list of strings"},
      {"/steps/0/name", 7, "steps[0].name: wrong type"},
      {"/identity/driver_version", "13000", "identity.driver_version: wrong type"},
      {"/identity/nvrtc_version", 1e12, "identity.nvrtc_version: wrong type"},
      {"/activation_scales/1", -1.0, "activation_scales[1]: not a positive finite number"},
      {"/activation_scales/0", 1e-50, "activation_scales[0]: not a positive finite number"},
      {"/steps/1/record_cost", "fast", "steps[1].record_cost: not a number"},
      {"/steps/1/task_name", "", "steps[1].task_name: empty"},
      {"/arena_bytes", autotvm::Json(), "arena_bytes: wrong type"},
      {"/steps", autotvm::Json::object(), "steps: wrong type"},
  };
  for (const Case& c : cases) {
    autotvm::Json edited = body;
    edited[autotvm::Json::json_pointer(c.pointer)] = c.value;
    absl::StatusOr<BuildPlan> parsed = ParseBuildPlan(Resealed(Header() + edited.dump() + "\n"));
    ASSERT_FALSE(parsed.ok()) << c.pointer;
    EXPECT_EQ(parsed.status().message(), std::string("bad field ") + c.reason) << c.pointer;
  }
  autotvm::Json missing = body;
  missing["identity"].erase("arch");
  EXPECT_EQ(ParseBuildPlan(Resealed(Header() + missing.dump() + "\n")).status().message(),
            "bad field identity.arch: missing");
  // 1e999 overflows a double: the JSON reader refuses it (infinity has no JSON text to write back).
  std::string infinite = body.dump();
  const std::string cost = "\"record_cost\":0.000125";
  ASSERT_NE(infinite.find(cost), std::string::npos) << infinite;
  infinite.replace(infinite.find(cost), cost.size(), "\"record_cost\":1e999");
  EXPECT_THAT(ParseBuildPlan(Resealed(Header() + infinite + "\n")).status().message(),
              HasSubstr("corrupt (invalid JSON"));
  EXPECT_THAT(ParseBuildPlan(Resealed(Header() + "[[[\n")).status().message(),
              HasSubstr("corrupt (invalid JSON"));
}

TEST(BuildPlanTest, IdentityMismatchNamesTheFirstDifference) {
  const BuildPlanIdentity id = SamplePlan().identity;
  EXPECT_EQ(IdentityMismatch(id, id), std::nullopt);
  auto differ = [&](auto edit) {
    BuildPlanIdentity now = id;
    edit(now);
    return IdentityMismatch(id, now).value_or("(equal)");
  };
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.weights = "x"; }), "it was made for other weights");
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.graph = "x"; }),
            "it was made for another model (the graph differs)");
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.arch = "sm_80"; }),
            "it was made for GPU architecture sm_90a; this build is sm_80");
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.tunejit = "0.2.0"; }),
            "it was made for tunejit 0.1.0 (abc1234); this build is 0.2.0");
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.mode = "fp32"; }),
            "it was made for precision int8_tensor_cores; this build is fp32");
  EXPECT_THAT(differ([](BuildPlanIdentity& i) { i.options = "x"; }), HasSubstr("another log"));
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.driver_version = 12080; }),
            "it was made for CUDA driver 13000; this build is 12080");
  EXPECT_EQ(differ([](BuildPlanIdentity& i) { i.nvrtc_version = 12080; }),
            "it was made for NVRTC 13000; this build is 12080");
}

TEST(BuildPlanTest, SavesAndLoadsThroughAFile) {
  const std::string dir = ::testing::TempDir() + "/build_plan_test";
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/vgg16.plan";
  std::filesystem::remove(path);
  EXPECT_TRUE(absl::IsNotFound(LoadBuildPlan(path).status()));
  ASSERT_TRUE(SaveBuildPlan(path, SamplePlan()).ok());
  absl::StatusOr<BuildPlan> loaded = LoadBuildPlan(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, SamplePlan());
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  absl::StatusOr<BuildPlan> truncated = LoadBuildPlan(path);
  ASSERT_FALSE(truncated.ok());
  EXPECT_EQ(truncated.status().message(),
            "build plan " + path + " is truncated (no checksum line)");
  EXPECT_THAT(SaveBuildPlan(dir + "/missing/dir/x.plan", SamplePlan()).message(),
              HasSubstr("cannot write build plan"));
}

}  // namespace
}  // namespace tunejit
