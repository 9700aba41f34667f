// `tunejit run` end to end on a GPU (label gpu; skipped without one): a small batch at both
// precisions, checked against cuDNN fp32, with the JSON and SVG outputs written and readable.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/gpu_test.h"
#include "tests/testing/test_data.h"

namespace tunejit::cli {
namespace {

using ::testing::HasSubstr;

class RunCommandGpuTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::filesystem::path(std::filesystem::temp_directory_path() /
                                     ("tunejit-run-gpu-" + std::to_string(::getpid())));
    std::filesystem::create_directories(*dir_);
  }
  static void TearDownTestSuite() {
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  // Runs `tunejit run ARGS` with a per-suite kernel cache (the second test reuses the first's
  // kernels) and JSON / SVG outputs in the temp dir.
  int RunCli(std::vector<std::string> args, std::string* out) {
    args.insert(args.end(),
                {"--log", testing::RepoData("seed-vgg16-v100.log"), "--cache-dir",
                 (*dir_ / "cache").string(), "--json", Path("r.json"), "--plot", Path("r.svg")});
    ::testing::internal::CaptureStdout();
    int code = RunRunCommand(args);
    *out = ::testing::internal::GetCapturedStdout();
    return code;
  }
  static std::string Path(const std::string& name) { return (*dir_ / name).string(); }
  static std::string Read(const std::string& name) {
    std::ifstream in(Path(name));
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  static std::filesystem::path* dir_;
};
std::filesystem::path* RunCommandGpuTest::dir_ = nullptr;

void ExpectReport(const nlohmann::json& j, const std::string& precision) {
  EXPECT_EQ(j["precision"], precision);
  EXPECT_EQ(j["batch"], 4);
  EXPECT_EQ(j["weights"], "random weights (seed 1)");
  EXPECT_THAT(j["log"].get<std::string>(), HasSubstr("seed-vgg16-v100.log"));
  ASSERT_GE(j["layers"].size(), 16u);  // 13 convs + 3 dense at least
  for (const auto& layer : j["layers"]) {
    EXPECT_GT(layer["seconds"].get<double>(), 0) << layer["name"];
    EXPECT_GT(layer["roofline_seconds"].get<double>(), 0) << layer["name"];
    // No layer beats the compute peak (5% slack for clock rounding). The memory side of the
    // roofline is not checked: a small batch's activations stay in L2 between timed repeats.
    EXPECT_LE(layer["fraction_of_peak"].get<double>(), 1.05) << layer["name"];
  }
  EXPECT_GT(j["end_to_end"]["ours_seconds"].get<double>(), 0);
  EXPECT_GT(j["memory"]["peak_device_bytes"].get<int64_t>(), 0);
}

TEST_F(RunCommandGpuTest, Fp32MatchesCudnnAndWritesReports) {
  TUNEJIT_REQUIRE_GPU();
  std::string out;
  ASSERT_EQ(RunCli({"--batch", "4", "--precision", "fp32", "--repeats", "3"}, &out), kExitOk)
      << out;
  EXPECT_THAT(out, HasSubstr("random weights (seed 1)"));
  nlohmann::json j = nlohmann::json::parse(Read("r.json"));
  ExpectReport(j, "fp32");
  if (j["accuracy"]["checked"] == true) {  // the build has cuDNN
    EXPECT_THAT(out, HasSubstr("PASS"));
    EXPECT_EQ(j["accuracy"]["pass"], true);
    EXPECT_LT(j["accuracy"]["rel_l2"].get<double>(), 1e-3);
    EXPECT_GT(j["end_to_end"]["cudnn_seconds"].get<double>(), 0);
  }
  std::string svg = Read("r.svg");
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("features.0"));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
}

TEST_F(RunCommandGpuTest, Int8WithinItsBoundsAndNoCudnnSkipsTheCheck) {
  TUNEJIT_REQUIRE_GPU();
  std::string out;
  ASSERT_EQ(RunCli({"--batch", "4", "--precision", "int8", "--repeats", "3"}, &out), kExitOk)
      << out;
  nlohmann::json j = nlohmann::json::parse(Read("r.json"));
  ExpectReport(j, "int8");
  if (j["accuracy"]["checked"] == true) {
    EXPECT_EQ(j["accuracy"]["pass"], true) << j["accuracy"].dump();
    EXPECT_THAT(out, HasSubstr("PASS"));
  }
  ASSERT_EQ(RunCli({"--batch", "4", "--precision", "int8", "--repeats", "2", "--no-cudnn"}, &out),
            kExitOk)
      << out;
  j = nlohmann::json::parse(Read("r.json"));
  EXPECT_EQ(j["accuracy"]["checked"], false);
  EXPECT_THAT(out, HasSubstr("not checked"));
  EXPECT_TRUE(j["end_to_end"]["cudnn_seconds"].is_null());
}

}  // namespace
}  // namespace tunejit::cli
