// File: cli/flags.h
// A small subcommand-friendly flag parser for the `tunejit` CLI: `--name value`, `--name=value`,
// boolean `--name`, and positional arguments. Unknown flags are usage errors (exit code 2).
//
//   FlagParser flags("tunejit cache stats", "Show the kernel cache's location and size.");
//   std::string dir; bool json = false;
//   flags.String("cache-dir", &dir, "DIR", "kernel cache directory");
//   flags.Bool("json", &json, "print JSON");
//   if (int code = flags.Parse(args, &positional); code >= 0) return code;  // --help or bad usage
#ifndef TUNEJIT_CLI_FLAGS_H_
#define TUNEJIT_CLI_FLAGS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tunejit::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

class FlagParser {
 public:
  FlagParser(std::string command, std::string summary);

  void String(const std::string& name, std::string* out, const std::string& metavar,
              const std::string& help);
  void Int(const std::string& name, int64_t* out, const std::string& metavar,
           const std::string& help);
  void Bool(const std::string& name, bool* out, const std::string& help);
  // Keeps an already declared flag out of --help (flags that exist for the test suite); it still
  // parses.
  void HideFromHelp(const std::string& name);
  // Describes positional arguments in --help ("FILE..."); min_count enforced.
  void Positional(const std::string& metavar, const std::string& help, int min_count = 0);

  // Returns -1 when the caller should go on; otherwise the exit code to return now (0 after
  // --help/-h, kExitUsage after an error, which is printed to stderr with a hint).
  int Parse(const std::vector<std::string>& args, std::vector<std::string>* positional);
  std::string Help() const;

 private:
  struct Flag {
    std::string name, metavar, help;
    std::function<bool(const std::string&)> set;  // returns false on a bad value
    bool is_bool = false;
    bool hidden = false;
  };
  std::string command_, summary_, positional_metavar_, positional_help_;
  int positional_min_ = 0;
  std::vector<Flag> flags_;
};

}  // namespace tunejit::cli

#endif  // TUNEJIT_CLI_FLAGS_H_
