// `tunejit info`, compiled here from cli/cmd_info.cc (like tests/cache does for cmd_cache.cc) so it
// can be tested without the rest of the CLI's dependencies.
#include <string>
#include <vector>

#include "cli/commands.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/device.h"
#include "jit/nvrtc_compiler.h"

namespace tunejit::cli {
namespace {

using ::testing::HasSubstr;

TEST(InfoCommand, Help) {
  ::testing::internal::CaptureStdout();
  int code = RunInfoCommand({"--help"});
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(code, 0);
  EXPECT_THAT(out, HasSubstr("usage: tunejit info"));
}

TEST(InfoCommand, BadUsage) {
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(RunInfoCommand({"--bogus"}), 2);
  EXPECT_EQ(RunInfoCommand({"extra"}), 2);
  ::testing::internal::GetCapturedStderr();
}

TEST(InfoCommand, ReportsNvrtcAndDriverOrWhyNot) {
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = RunInfoCommand({});
  std::string out = ::testing::internal::GetCapturedStdout();
  std::string err = ::testing::internal::GetCapturedStderr();
  int version = NvrtcVersion();
  EXPECT_THAT(out, HasSubstr("NVRTC:        " + std::to_string(version / 1000) + "." +
                             std::to_string(version % 1000 / 10)));
  EXPECT_THAT(out, HasSubstr("sm_90"));
  absl::Status gpu = GpuAvailable();
  if (gpu.ok()) {
    EXPECT_EQ(code, 0) << err;
    EXPECT_THAT(out, HasSubstr("CUDA driver:"));
    EXPECT_THAT(out, HasSubstr("device 0:"));
  } else {
    EXPECT_EQ(code, 1);
    EXPECT_THAT(err, HasSubstr(std::string(gpu.message())));
    EXPECT_THAT(err, HasSubstr("commands that need no GPU still work: warm, log, cache"));
  }
}

}  // namespace
}  // namespace tunejit::cli
