// DeviceLimits defaults per architecture, from a real device, and the epilogue's kernel code and
// names.
#include "ops/op_template.h"

#include <cstdint>

#include "absl/base/casts.h"
#include "absl/strings/str_cat.h"

namespace tunejit {

DeviceLimits DeviceLimits::ForArch(const GpuArch& arch) {
  // The struct's member defaults are H100/H200-like (sm_90); older generations differ only in the
  // opt-in shared memory and SM count. Threads, block and grid limits are the same since sm_30.
  DeviceLimits limits;
  limits.arch = arch;
  const int sm = arch.sm();
  if (sm >= 90) return limits;
  if (sm == 80) {
    limits.shared_bytes_per_block_optin = 163 * 1024;
    limits.sm_count = 108;
  } else if (sm == 86 || sm == 87 || sm == 89) {
    limits.shared_bytes_per_block_optin = 99 * 1024;
    limits.sm_count = sm == 89 ? 128 : 84;
  } else if (sm == 75) {
    limits.shared_bytes_per_block_optin = 64 * 1024;
    limits.sm_count = 72;
  } else {  // sm_70 / sm_72 and anything unknown
    limits.shared_bytes_per_block_optin = 96 * 1024;
    limits.sm_count = 80;
  }
  return limits;
}

DeviceLimits DeviceLimits::FromProperties(const DeviceProperties& properties) {
  DeviceLimits limits;
  limits.arch = properties.arch;
  limits.max_threads_per_block = properties.max_threads_per_block;
  for (int d = 0; d < 3; ++d) {
    limits.max_block_dim[d] = properties.max_block_dim[d];
    limits.max_grid_dim[d] = properties.max_grid_dim[d];
  }
  limits.shared_bytes_per_block = properties.shared_bytes_per_block;
  limits.shared_bytes_per_block_optin = properties.shared_bytes_per_block_optin;
  limits.regs_per_block = properties.regs_per_block;
  limits.sm_count = properties.sm_count;
  return limits;
}

int EpilogueCode(const Epilogue& epilogue) {
  int output = 0;
  switch (epilogue.output) {
    case Epilogue::Output::kAccumulator:
      output = 0;
      break;
    case Epilogue::Output::kFloat32:
      output = 1;
      break;
    case Epilogue::Output::kInt8Requantize:
      output = 2;
      break;
  }
  return (epilogue.bias ? 1 : 0) | (epilogue.relu ? 2 : 0) | (output << 2) |
         (epilogue.residual ? 16 : 0);
}

std::string EpilogueTypeName(const Epilogue& epilogue) {
  const char* output = "kAccumulator";
  if (epilogue.output == Epilogue::Output::kFloat32) output = "kFloat32";
  if (epilogue.output == Epilogue::Output::kInt8Requantize) output = "kInt8";
  // Without an activation the name is the one it had before activations existed (cache keys).
  std::string tail = epilogue.residual ? ", true>" : ">";
  if (epilogue.activation != Epilogue::Activation::kNone) {
    tail = absl::StrCat(epilogue.residual ? ", true, " : ", false, ", ActivationTypeName(epilogue),
                        ">");
  }
  return absl::StrCat("tunejit::Epi<", epilogue.bias ? "true" : "false", ", ",
                      epilogue.relu ? "true" : "false", ", tunejit::EpiOut::", output, tail);
}

std::string_view ActivationName(Epilogue::Activation activation) {
  switch (activation) {
    case Epilogue::Activation::kNone:
      return "none";
    case Epilogue::Activation::kClip:
      return "clip";
    case Epilogue::Activation::kSilu:
      return "silu";
    case Epilogue::Activation::kHardSwish:
      return "hard_swish";
    case Epilogue::Activation::kGelu:
      return "gelu";
    case Epilogue::Activation::kGeluTanh:
      return "gelu_tanh";
  }
  return "?";
}

std::string ActivationTypeName(const Epilogue& epilogue) {
  switch (epilogue.activation) {
    case Epilogue::Activation::kNone:
      return "tunejit::Act<>";
    case Epilogue::Activation::kClip:
      // The bounds' bits, as common.cuh's Act reads them back (__int_as_float): a float cannot be
      // a template argument before C++20.
      return absl::StrCat("tunejit::Act<tunejit::ActKind::kClip, ",
                          absl::bit_cast<int32_t>(epilogue.clip_lo), ", ",
                          absl::bit_cast<int32_t>(epilogue.clip_hi), ">");
    case Epilogue::Activation::kSilu:
      return "tunejit::Act<tunejit::ActKind::kSilu>";
    case Epilogue::Activation::kHardSwish:
      return "tunejit::Act<tunejit::ActKind::kHardSwish>";
    case Epilogue::Activation::kGelu:
      return "tunejit::Act<tunejit::ActKind::kGelu>";
    case Epilogue::Activation::kGeluTanh:
      return "tunejit::Act<tunejit::ActKind::kGeluTanh>";
  }
  return "tunejit::Act<>";
}

}  // namespace tunejit
