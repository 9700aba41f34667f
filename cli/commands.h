// File: cli/commands.h
// The `tunejit` subcommands. Each takes the arguments after its name and returns the exit code
// (0 ok, 1 failure, 2 bad usage); each prints its own --help.
#ifndef TUNEJIT_CLI_COMMANDS_H_
#define TUNEJIT_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace tunejit::cli {

int RunCacheCommand(const std::vector<std::string>& args);  // cache stats|verify|clear
int RunLogCommand(const std::vector<std::string>& args);    // log show|check|merge
int RunWarmCommand(const std::vector<std::string>& args);   // warm --arch sm_90 --log FILE
int RunInfoCommand(const std::vector<std::string>& args);   // info: driver, devices, NVRTC
int RunRunCommand(const std::vector<std::string>& args);    // run --model vgg16 --log FILE
int RunTuneCommand(const std::vector<std::string>& args);   // tune --model vgg16 --log FILE ...
// Hidden: the measuring worker process `tunejit tune` starts (not listed in the usage).
int RunTuneWorkerCommand(const std::vector<std::string>& args);

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_COMMANDS_H_
