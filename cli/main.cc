// tunejit: deploy AutoTVM-tuned CNNs on NVIDIA GPUs without TVM. See README.md.
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"

namespace tunejit::cli {
namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Subcommand kSubcommands[] = {
    {"warm", "compile every kernel a tuning log needs into the cache (no GPU needed)",
     RunWarmCommand},
    {"log", "read, check and merge AutoTVM tuning logs (show|check|merge)", RunLogCommand},
    {"cache", "inspect the on-disk kernel cache (stats|verify|clear)", RunCacheCommand},
    {"run", "run a model with tuned kernels; per-layer times against cuDNN", RunRunCommand},
    {"info", "show the CUDA driver, devices and NVRTC this build sees", RunInfoCommand},
    {"tune", "tune a model's kernels on the GPUs, appending to an AutoTVM log", RunTuneCommand},
};

void PrintUsage(std::ostream& out) {
  out << "usage: tunejit <command> [flags]\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) {
    std::string name = c.name;
    out << "  " << name << std::string(8 - name.size(), ' ') << c.summary << "\n";
  }
  out << "\nRun 'tunejit <command> --help' for a command's flags.\n";
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    PrintUsage(std::cerr);
    return kExitUsage;
  }
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    PrintUsage(std::cout);
    return kExitOk;
  }
  if (args[0] == "tune-worker") return RunTuneWorkerCommand({args.begin() + 1, args.end()});
  for (const Subcommand& c : kSubcommands) {
    if (args[0] == c.name) return c.run({args.begin() + 1, args.end()});
  }
  std::cerr << "tunejit: unknown command '" << args[0] << "'\n";
  PrintUsage(std::cerr);
  return kExitUsage;
}

}  // namespace
}  // namespace tunejit::cli

int main(int argc, char** argv) { return tunejit::cli::Main(argc, argv); }
