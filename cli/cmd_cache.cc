// `tunejit cache stats|verify|clear`: inspect and maintain the on-disk kernel cache.
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "cache/kernel_cache.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace tunejit::cli {
namespace {

constexpr char kUsage[] =
    "usage: tunejit cache <stats|verify|clear> [flags]\n"
    "\n"
    "Inspect the on-disk kernel cache.\n"
    "\n"
    "  stats    directory, number of entries, size and size cap\n"
    "  verify   read every entry fully and check it (exit 1 if any entry is invalid)\n"
    "  clear    delete every entry\n"
    "\n"
    "The directory is --cache-dir DIR, else $TUNEJIT_CACHE_DIR, else $XDG_CACHE_HOME/tunejit,\n"
    "else ~/.cache/tunejit. Run 'tunejit cache <command> --help' for a command's flags.\n";

std::string Mib(int64_t bytes) {
  return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
}

// These commands only read or delete: open the cache disabled so that nothing is created.
KernelCache OpenForInspection(const std::string& dir) {
  CacheOptions options;
  options.dir = dir;
  options.disabled = true;
  return *KernelCache::Open(options);  // a disabled Open cannot fail
}

bool DirectoryExists(const std::string& dir) {
  std::error_code error;
  return !dir.empty() && std::filesystem::is_directory(dir, error);
}

// Parses the flags common to every subcommand (plus --remove-invalid for verify). Returns -1 to
// go on, else the exit code.
int ParseFlags(const std::string& name, const std::string& summary,
               const std::vector<std::string>& args, std::string* dir, bool* remove_invalid) {
  FlagParser flags("tunejit cache " + name, summary);
  flags.String("cache-dir", dir, "DIR", "kernel cache directory (default: see 'tunejit cache')");
  if (remove_invalid != nullptr) {
    flags.Bool("remove-invalid", remove_invalid, "delete the invalid entries it finds");
  }
  std::vector<std::string> positional;
  if (int code = flags.Parse(args, &positional); code >= 0) return code;
  if (!positional.empty()) {
    std::cerr << "tunejit cache " << name << ": unexpected argument '" << positional[0]
              << "'\n(run 'tunejit cache " << name << " --help' for usage)\n";
    return kExitUsage;
  }
  *dir = ResolveCacheDir(*dir);
  if (dir->empty()) {
    std::cerr << "tunejit cache " << name
              << ": no cache directory (set --cache-dir, TUNEJIT_CACHE_DIR or HOME)\n";
    return kExitUsage;
  }
  return -1;
}

int RunStats(const std::vector<std::string>& args) {
  std::string dir;
  if (int code = ParseFlags("stats", "Show the kernel cache's location, entries and size.", args,
                            &dir, nullptr);
      code >= 0) {
    return code;
  }
  absl::StatusOr<CacheStats> stats = OpenForInspection(dir).Stats();
  if (!stats.ok()) {
    std::cerr << "tunejit cache stats: " << stats.status().message() << "\n";
    return kExitFailure;
  }
  std::cout << "directory: " << stats->dir << (DirectoryExists(dir) ? "" : " (does not exist)")
            << "\n"
            << "entries:   " << stats->entries << "\n"
            << "size:      " << Mib(stats->bytes) << " (" << stats->bytes << " bytes)\n"
            << "cap:       " << Mib(stats->max_bytes) << "\n";
  return kExitOk;
}

int RunVerify(const std::vector<std::string>& args) {
  std::string dir;
  bool remove_invalid = false;
  if (int code = ParseFlags("verify",
                            "Read every cache entry fully and check its magic, format version, "
                            "checksum and name. Exit code 1 if any entry is invalid.",
                            args, &dir, &remove_invalid);
      code >= 0) {
    return code;
  }
  absl::StatusOr<VerifyReport> report = OpenForInspection(dir).Verify(remove_invalid);
  if (!report.ok()) {
    std::cerr << "tunejit cache verify: " << report.status().message() << "\n";
    return kExitFailure;
  }
  std::cout << "directory: " << dir << "\n"
            << "valid:     " << report->valid << "\n"
            << "invalid:   " << report->invalid.size()
            << (remove_invalid && !report->invalid.empty() ? " (removed)" : "") << "\n";
  for (const auto& [file, reason] : report->invalid) {
    std::cout << "  " << file << ": " << reason << "\n";
  }
  return report->invalid.empty() ? kExitOk : kExitFailure;
}

int RunClear(const std::vector<std::string>& args) {
  std::string dir;
  if (int code =
          ParseFlags("clear", "Delete every entry of the kernel cache.", args, &dir, nullptr);
      code >= 0) {
    return code;
  }
  KernelCache cache = OpenForInspection(dir);
  absl::StatusOr<CacheStats> before = cache.Stats();
  if (absl::Status cleared = cache.Clear(); !before.ok() || !cleared.ok()) {
    std::cerr << "tunejit cache clear: "
              << (before.ok() ? cleared.message() : before.status().message()) << "\n";
    return kExitFailure;
  }
  std::cout << "removed " << before->entries << " entries (" << Mib(before->bytes) << ") from "
            << dir << "\n";
  return kExitOk;
}

}  // namespace

int RunCacheCommand(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& command = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << kUsage;
    return kExitOk;
  }
  if (command == "stats") return RunStats(rest);
  if (command == "verify") return RunVerify(rest);
  if (command == "clear") return RunClear(rest);
  std::cerr << "tunejit cache: unknown command '" << command << "'\n\n" << kUsage;
  return kExitUsage;
}

}  // namespace tunejit::cli
