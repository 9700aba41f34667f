// `tunejit run` without a GPU (this machine and CI): bad usage exits 2 with a message, bad input
// files exit 1 naming the file, and the missing GPU is reported with what to do instead.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "tests/testing/test_data.h"

namespace tunejit::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs `tunejit run ARGS`, returning the exit code; stdout and stderr go to *out / *err.
int RunCli(const std::vector<std::string>& args, std::string* out, std::string* err) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = RunRunCommand(args);
  *out = ::testing::internal::GetCapturedStdout();
  *err = ::testing::internal::GetCapturedStderr();
  return code;
}

TEST(RunCommand, HelpListsTheFlags) {
  std::string out, err;
  ASSERT_EQ(RunCli({"--help"}, &out, &err), kExitOk);
  for (const char* flag :
       {"--model", "--log", "--weights", "--batch", "--precision", "--repeats", "--device",
        "--cache-dir", "--no-cudnn", "--no-verify", "--seed", "--json", "--plot"}) {
    EXPECT_THAT(out, HasSubstr(flag));
  }
}

TEST(RunCommand, BadUsageExits2WithAMessage) {
  std::string out, err;
  EXPECT_EQ(RunCli({"--frobnicate"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("unknown flag --frobnicate"));
  EXPECT_EQ(RunCli({"--precision", "fp16"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("fp16"));
  EXPECT_THAT(err, HasSubstr("expected fp32 or int8"));
  EXPECT_EQ(RunCli({"--batch", "0"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--batch must be in 1..4096, got 0"));
  EXPECT_EQ(RunCli({"--batch", "-3"}, &out, &err), kExitUsage);
  EXPECT_EQ(RunCli({"--batch", "many"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("bad value for --batch: 'many'"));
  EXPECT_EQ(RunCli({"--repeats", "0"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("--repeats"));
  EXPECT_EQ(RunCli({"--device", "-1"}, &out, &err), kExitUsage);
  EXPECT_EQ(RunCli({"extra"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("unexpected argument 'extra'"));
}

TEST(RunCommand, OtherModelsAreNotSupportedYet) {
  std::string out, err;
  EXPECT_EQ(RunCli({"--model", "resnet50.onnx"}, &out, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("model 'resnet50.onnx' is not supported yet"));
  EXPECT_EQ(RunCli({"--model", "VGG16"}, &out, &err), kExitUsage);  // names are exact
}

TEST(RunCommand, MissingFilesExit1NamingTheFile) {
  const std::string missing =
      (std::filesystem::temp_directory_path() / ("tunejit-run-" + std::to_string(::getpid())))
          .string();
  std::string out, err;
  EXPECT_EQ(RunCli({"--batch", "1", "--weights", missing + ".safetensors"}, &out, &err),
            kExitFailure);
  EXPECT_THAT(err, HasSubstr(missing + ".safetensors"));
  EXPECT_EQ(RunCli({"--batch", "1", "--log", missing + ".log"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr(missing + ".log"));
}

TEST(RunCommand, WithoutAGpuSaysSoAndWhatStillWorks) {
  if (GpuAvailable().ok()) GTEST_SKIP() << "a GPU is present";
  std::string out, err;
  // The default log is found (shipped data), random weights are generated, then the GPU check.
  EXPECT_EQ(RunCli({"--batch", "1", "--precision", "fp32"}, &out, &err), kExitFailure);
  EXPECT_THAT(err, HasSubstr("no usable GPU"));
  EXPECT_THAT(err, HasSubstr("needs an NVIDIA GPU"));
  EXPECT_THAT(err, HasSubstr("tunejit warm"));
  EXPECT_THAT(err, Not(HasSubstr("seed-vgg16-v100.log is not in")));
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace tunejit::cli
