// `tunejit info`: what this build sees: NVRTC (always), then the CUDA driver and each device.
// Without a GPU it still prints the NVRTC part, then says why there is no device and exits 1.
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "jit/arch.h"
#include "jit/device.h"
#include "jit/nvrtc_compiler.h"

namespace tunejit::cli {
namespace {

std::string VersionText(int version) {
  return absl::StrFormat("%d.%d", version / 1000, (version % 1000) / 10);
}

void PrintNvrtc(std::ostream& out) {
  std::vector<std::string> archs;
  for (int sm : NvrtcSupportedSms()) archs.push_back(absl::StrFormat("sm_%d", sm));
  out << "NVRTC:        " << VersionText(NvrtcVersion()) << "\n"
      << "  targets:    " << absl::StrJoin(archs, " ") << " (and sm_XYa from sm_90)\n";
}

void PrintDevice(std::ostream& out, const Device& device) {
  const DeviceProperties& p = device.properties();
  out << absl::StrFormat("device %d:     %s, %s, %d SMs, %.1f GiB, %d MHz\n", device.ordinal(),
                         p.name, p.arch.ToString(), p.sm_count,
                         static_cast<double>(p.total_memory) / (1 << 30), p.clock_khz / 1000)
      << absl::StrFormat(
             "  limits:     %d threads/block, shared %d KiB/block (%d KiB opt-in), %d regs/block, "
             "L2 %d MiB\n",
             p.max_threads_per_block, p.shared_bytes_per_block / 1024,
             p.shared_bytes_per_block_optin / 1024, p.regs_per_block, p.l2_bytes >> 20);
}

}  // namespace

int RunInfoCommand(const std::vector<std::string>& args) {
  FlagParser flags("tunejit info",
                   "Show the NVRTC version and targets, the CUDA driver and every GPU this build "
                   "sees. Exits 1 when there is no usable GPU.");
  std::vector<std::string> positional;
  if (int code = flags.Parse(args, &positional); code >= 0) return code;
  if (!positional.empty()) {
    std::cerr << "tunejit info: unexpected argument '" << positional[0] << "'\n";
    return kExitUsage;
  }
  PrintNvrtc(std::cout);
  absl::StatusOr<int> count = DeviceCount();
  if (count.ok() && *count == 0) count = GpuAvailable();  // the "0 devices" message
  if (!count.ok()) {
    std::cout.flush();
    std::cerr << "tunejit info: " << count.status().message()
              << "\n  (commands that need no GPU still work: warm, log, cache)\n";
    return kExitFailure;
  }
  std::cout << "CUDA driver:  " << VersionText(*CudaDriverVersion()) << "\n";
  int failures = 0;
  for (int i = 0; i < *count; ++i) {
    absl::StatusOr<Device> device = Device::Open(i);
    if (!device.ok()) {
      std::cerr << "tunejit info: device " << i << ": " << device.status().message() << "\n";
      ++failures;
      continue;
    }
    PrintDevice(std::cout, *device);
  }
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace tunejit::cli
