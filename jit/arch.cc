#include "jit/arch.h"

#include <nvrtc.h>

#include <algorithm>
#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "jit/nvrtc_compiler.h"

namespace tunejit {
namespace {

constexpr absl::string_view kExample = "e.g. --arch sm_90 for an H100/H200";

// A readable name for error messages; unknown numbers get none.
const char* GenerationName(int sm) {
  switch (sm) {
    case 50:
    case 52:
    case 53:
      return "Maxwell";
    case 60:
    case 61:
    case 62:
      return "Pascal";
    case 70:
      return "Volta, e.g. V100";
    case 72:
      return "Volta, e.g. Jetson Xavier";
    case 75:
      return "Turing, e.g. T4";
    case 80:
      return "Ampere, e.g. A100";
    case 86:
    case 87:
    case 88:
      return "Ampere";
    case 89:
      return "Ada, e.g. L4/L40";
    case 90:
      return "Hopper, e.g. H100/H200";
    case 100:
    case 103:
      return "Blackwell, e.g. B200";
    case 110:
      return "Blackwell, e.g. Thor";
    case 120:
    case 121:
      return "Blackwell, e.g. RTX 50xx/GB10";
    default:
      return "";
  }
}

std::string Describe(int sm) {
  absl::string_view generation = GenerationName(sm);
  return generation.empty() ? absl::StrCat("sm_", sm)
                            : absl::StrCat("sm_", sm, " (", generation, ")");
}

absl::Status BadArch(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("bad GPU architecture '", text, "': ", why,
                                                 "; expected sm_XY or sm_XYa, ", kExample));
}

}  // namespace

std::string GpuArch::ToString() const {
  return absl::StrCat("sm_", sm(), arch_specific ? "a" : "");
}

std::string GpuArch::NvrtcOption() const { return "--gpu-architecture=" + ToString(); }

absl::StatusOr<GpuArch> ParseGpuArch(std::string_view input) {
  // Debian's Abseil has its own string_view type; convert once at the boundary.
  const absl::string_view text(input.data(), input.size());
  absl::string_view digits = text;
  if (digits.rfind("compute_", 0) == 0) {
    return BadArch(text, "virtual (PTX-only) architectures are not supported, name the real GPU");
  }
  if (digits.rfind("sm_", 0) != 0) {
    bool all_digits = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
      return absl::ascii_isdigit(static_cast<unsigned char>(c));
    });
    return BadArch(text, all_digits ? absl::StrCat("did you mean sm_", digits, "?")
                                    : std::string("must start with 'sm_'"));
  }
  digits.remove_prefix(3);
  GpuArch arch;
  if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
    if (digits.back() == 'f') {
      return BadArch(text, "family-specific ('f') targets are not supported; use sm_XY or sm_XYa");
    }
    arch.arch_specific = true;
    digits.remove_suffix(1);
  }
  int number = 0;
  if (digits.size() < 2 || digits.size() > 3 ||
      !std::all_of(digits.begin(), digits.end(),
                   [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); }) ||
      !absl::SimpleAtoi(digits, &number) || digits[0] == '0') {
    return BadArch(text, "the version must be two or three digits (major, then minor)");
  }
  arch.major = number / 10;
  arch.minor = number % 10;
  if (arch.arch_specific && arch.sm() < 90) {
    return BadArch(text, "arch-specific ('a') variants exist only from sm_90 on");
  }
  return arch;
}

std::vector<int> NvrtcSupportedSms() {
  int count = 0;
  if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
  std::vector<int> sms(count);
  if (nvrtcGetSupportedArchs(sms.data()) != NVRTC_SUCCESS) return {};
  std::sort(sms.begin(), sms.end());
  return sms;
}

absl::StatusOr<GpuArch> ParseSupportedGpuArch(std::string_view text) {
  absl::StatusOr<GpuArch> arch = ParseGpuArch(text);
  if (!arch.ok()) return arch.status();
  std::vector<int> supported = NvrtcSupportedSms();
  if (std::find(supported.begin(), supported.end(), arch->sm()) != supported.end()) return arch;
  int version = NvrtcVersion();
  std::string range = supported.empty()
                          ? std::string("no architectures")
                          : absl::StrCat("sm_", supported.front(), "..sm_", supported.back());
  std::string advice = "compile for the GPU you will run on, e.g. --arch sm_90";
  if (!supported.empty() && arch->sm() < supported.front()) {
    // Old tuning logs (e.g. the V100 seed log) are still usable: only the target must be newer.
    advice = "tuning logs from such a GPU can still be used, but " + advice;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("%s is not supported by this NVRTC (CUDA %d.%d supports %s); %s",
                      Describe(arch->sm()), version / 1000, (version % 1000) / 10, range, advice));
}

}  // namespace tunejit
