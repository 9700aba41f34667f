#include "jit/arch.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tunejit {
namespace {

using ::testing::HasSubstr;

TEST(ParseGpuArch, AcceptsPlainAndArchSpecific) {
  absl::StatusOr<GpuArch> sm90 = ParseGpuArch("sm_90");
  ASSERT_TRUE(sm90.ok()) << sm90.status();
  EXPECT_EQ(sm90->major, 9);
  EXPECT_EQ(sm90->minor, 0);
  EXPECT_FALSE(sm90->arch_specific);
  EXPECT_EQ(sm90->sm(), 90);
  EXPECT_EQ(sm90->ToString(), "sm_90");
  EXPECT_EQ(sm90->NvrtcOption(), "--gpu-architecture=sm_90");

  absl::StatusOr<GpuArch> sm90a = ParseGpuArch("sm_90a");
  ASSERT_TRUE(sm90a.ok()) << sm90a.status();
  EXPECT_TRUE(sm90a->arch_specific);
  EXPECT_EQ(sm90a->ToString(), "sm_90a");
  EXPECT_EQ(sm90a->NvrtcOption(), "--gpu-architecture=sm_90a");
  EXPECT_FALSE(*sm90 == *sm90a);
}

TEST(ParseGpuArch, ThreeDigitAndOldArchsParse) {
  absl::StatusOr<GpuArch> sm121 = ParseGpuArch("sm_121");
  ASSERT_TRUE(sm121.ok()) << sm121.status();
  EXPECT_EQ(sm121->major, 12);
  EXPECT_EQ(sm121->minor, 1);
  EXPECT_EQ(sm121->ToString(), "sm_121");
  absl::StatusOr<GpuArch> sm100a = ParseGpuArch("sm_100a");
  ASSERT_TRUE(sm100a.ok());
  EXPECT_EQ(sm100a->ToString(), "sm_100a");
  // Syntax only: sm_70 parses; ParseSupportedGpuArch is what rejects it.
  absl::StatusOr<GpuArch> sm70 = ParseGpuArch("sm_70");
  ASSERT_TRUE(sm70.ok());
  EXPECT_EQ(sm70->sm(), 70);
}

TEST(ParseGpuArch, RejectsGarbageWithAReason) {
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"", "must start with 'sm_'"},        {"sm_", "two or three digits"},
      {"sm_9", "two or three digits"},      {"sm_9x", "two or three digits"},
      {"sm_1000", "two or three digits"},   {"sm_090", "two or three digits"},
      {"sm_-90", "two or three digits"},    {"sm_90 ", "two or three digits"},
      {"90", "did you mean sm_90?"},        {"SM_90", "must start with 'sm_'"},
      {"compute_90", "virtual (PTX-only)"}, {"sm_100f", "family-specific"},
      {"sm_80a", "only from sm_90"},        {"volta", "must start with 'sm_'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<GpuArch> arch = ParseGpuArch(c.text);
    ASSERT_FALSE(arch.ok()) << "accepted '" << c.text << "'";
    EXPECT_EQ(arch.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(std::string(arch.status().message()), HasSubstr(c.reason)) << c.text;
    EXPECT_THAT(std::string(arch.status().message()), HasSubstr(absl::StrCat("'", c.text, "'")))
        << c.text;
  }
}

TEST(NvrtcSupportedSms, SortedAndIncludesHopper) {
  std::vector<int> sms = NvrtcSupportedSms();
  ASSERT_FALSE(sms.empty());
  EXPECT_TRUE(std::is_sorted(sms.begin(), sms.end()));
  EXPECT_NE(std::find(sms.begin(), sms.end(), 90), sms.end());
  for (int sm : sms) EXPECT_GE(sm, 30);
}

TEST(ParseSupportedGpuArch, AcceptsSupported) {
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch("sm_90a");
  ASSERT_TRUE(arch.ok()) << arch.status();
  EXPECT_EQ(arch->ToString(), "sm_90a");
  EXPECT_TRUE(ParseSupportedGpuArch("sm_90").ok());
}

TEST(ParseSupportedGpuArch, RejectsVoltaUnderCuda13WithAClearMessage) {
  std::vector<int> sms = NvrtcSupportedSms();
  ASSERT_FALSE(sms.empty());
  if (std::find(sms.begin(), sms.end(), 70) != sms.end()) {
    GTEST_SKIP() << "this NVRTC still supports sm_70 (CUDA < 13)";
  }
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch("sm_70");
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(arch.status().message());
  EXPECT_THAT(message, HasSubstr("sm_70 (Volta, e.g. V100) is not supported by this NVRTC"));
  EXPECT_THAT(message, HasSubstr(absl::StrCat("supports sm_", sms.front(), "..sm_", sms.back())));
  EXPECT_THAT(message, HasSubstr("compile for the GPU you will run on, e.g. --arch sm_90"));
}

TEST(ParseSupportedGpuArch, RejectsUnknownNewArch) {
  absl::StatusOr<GpuArch> arch = ParseSupportedGpuArch("sm_91");
  ASSERT_FALSE(arch.ok());
  EXPECT_THAT(std::string(arch.status().message()),
              HasSubstr("sm_91 is not supported by this NVRTC"));
  // Syntax errors come through unchanged.
  EXPECT_THAT(ParseSupportedGpuArch("sm9").status().message(), HasSubstr("'sm9'"));
}

}  // namespace
}  // namespace tunejit
